"""A stretch of time, (start, end) in seconds: the one interval type for speech segments, IPUs,
turns, silences and VAD output throughout the platform.

It is a tuple (typing.NamedTuple) on purpose: code that unpacks `start, end = seg`, indexes
`seg[0]`, sorts segments, compares them with plain `(start, end)` tuples or writes them with
json.dumps (as a two-element list) keeps working, so segments made here and pairs read from JSON
mix freely. pyannote.core's Segment offers the same operators but is not a tuple.

    >>> seg = Segment(1.0, 3.0)
    >>> seg.duration, seg == (1.0, 3.0)
    (2.0, True)
    >>> seg & Segment(2.5, 4.0), seg | Segment(5.0, 6.0)  # overlap; span from first start to last end
    (Segment(start=2.5, end=3.0), Segment(start=1.0, end=6.0))
    >>> 2.0 in seg, 3.0 in seg, (1.5, 2.5) in seg  # a time: start <= t < end; a segment: inside
    (True, False, True)
    >>> sorted([Segment(2, 3), Segment(0, 1)])
    [Segment(start=0, end=1), Segment(start=2, end=3)]
"""

from __future__ import annotations

from typing import NamedTuple


class Segment(NamedTuple):
    start: float
    end: float

    @property
    def duration(self) -> float:
        """end - start, s.

        >>> Segment(0.5, 2.0).duration
        1.5
        """
        return self.end - self.start

    def overlaps(self, other) -> bool:
        """Whether the two share more than an instant (segments that only touch do not).

        >>> Segment(0, 1).overlaps((0.5, 2)), Segment(0, 1).overlaps((1, 2))
        (True, False)
        """
        return max(self[0], other[0]) < min(self[1], other[1])

    def __and__(self, other) -> Segment:
        """The overlap; of zero duration, at the later start, when there is none.

        >>> Segment(0, 2) & (1, 3), (Segment(0, 1) & (2, 3)).duration
        (Segment(start=1, end=2), 0)
        """
        start = max(self[0], other[0])
        return Segment(start, max(start, min(self[1], other[1])))

    def __or__(self, other) -> Segment:
        """The span from the earlier start to the later end, the time between included.

        >>> Segment(0, 1) | (2, 3)
        Segment(start=0, end=3)
        """
        return Segment(min(self[0], other[0]), max(self[1], other[1]))

    # a plain tuple on the left has no & or |: Python then asks the Segment on the right
    __rand__ = __and__
    __ror__ = __or__

    def __contains__(self, item) -> bool:
        """A time t is in when start <= t < end (as a frame's centre in `activity_frames`);
        a (start, end) pair when it lies wholly inside."""
        if isinstance(item, tuple):
            return self[0] <= item[0] and item[1] <= self[1]
        return self[0] <= item < self[1]
