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

The operations on lists of segments live here too: `merge_segments` (sorted, joined across
gaps) and `gaps` (the time no segment covers), as pyannote.core's Timeline.support and gaps.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

# Times are float seconds: a silence of exactly the threshold must not flip on rounding.
TIME_EPSILON = 1e-9


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


def merge_segments(segments: Iterable, gap: float = 0.0, drop_empty: bool = True) -> list[Segment]:
    """Sorted, with those that overlap or are at most `gap` s apart joined; segments of no
    duration dropped unless `drop_empty` is False (the examiner's overlap rules, which take every
    segment as given).

    >>> merge_segments([(2, 3), (0, 1), (0.5, 1.5), (4, 4)])
    [Segment(start=0.0, end=1.5), Segment(start=2.0, end=3.0)]
    >>> merge_segments([(0, 1), (1.2, 2)], gap=0.2) == [(0.0, 2.0)]  # equal to plain pairs
    True
    >>> merge_segments([(2, 3), (0, 1), (1.4, 1.8), (5, 5)], gap=0.5, drop_empty=False)
    [Segment(start=0.0, end=3.0), Segment(start=5.0, end=5.0)]
    """
    merged: list[list[float]] = []
    for start, end in sorted((float(s), float(e)) for s, e in segments):
        if end < start or (drop_empty and end == start):
            continue
        if merged and start - merged[-1][1] <= gap + TIME_EPSILON:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [Segment(s, e) for s, e in merged]


def gaps(segments: Iterable, start: float, end: float, min_s: float = 0.0) -> list[Segment]:
    """The stretches of [start, end] that no segment covers, of at least `min_s` s (and more
    than none), the leading and trailing ones included.

    >>> gaps([(1, 2), (1.5, 3), (4, 4.5)], 0, 5)
    [Segment(start=0.0, end=1.0), Segment(start=3.0, end=4.0), Segment(start=4.5, end=5)]
    >>> gaps([(1, 2), (2.5, 3)], 0, 3, min_s=0.6)
    [Segment(start=0.0, end=1.0)]
    """
    found, t = [], float(start)
    for s, e in merge_segments(segments):
        if s - t > 0 and s - t >= min_s:
            found.append(Segment(t, s))
        t = max(t, e)
    if end - t > 0 and end - t >= min_s:
        found.append(Segment(t, end))
    return found
