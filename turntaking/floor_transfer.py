"""Floor-transfer offsets (FTO): when the next speaker starts relative to the end of the previous
speaker's turn (Heldner & Edlund 2010, "Pauses, gaps and overlaps in conversations"; Levinson &
Torreira 2015). Positive: a gap before the new turn; negative: the new turn starts in overlap.
In human conversation the distribution peaks at about +200 ms.

Offsets are taken between *turns* (`turntaking.events`: a listener's backchannel is not a turn,
so a "yeah" is neither a floor transfer nor does it split the speaker's turn). The turns of both
speakers are read in order of their start; a turn of the other speaker that ends after the turn
holding the floor takes the floor, and its start minus that turn's end is one FTO. A turn lying
entirely inside the floor holder's turn (a butting-in that gave up) transfers nothing, which is
how Heldner & Edlund leave out "within-speaker overlaps".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from turntaking.segment import Segment

#: Histogram bins of the FTO distribution, s: 50 ms wide from -2 s to +3 s (the literature's
#: range; offsets outside are counted as below / above).
FTO_BIN_S = 0.05
FTO_HISTOGRAM_EDGES_S = tuple(round(-2.0 + i * FTO_BIN_S, 2) for i in range(101))
FTO_PERCENTILES = (5, 10, 25, 50, 75, 90, 95)


@dataclass(frozen=True)
class FloorTransfer:
    from_speaker: int
    to_speaker: int
    previous_end: float  # end of the turn that held the floor
    next_start: float  # start of the turn that takes it

    @property
    def offset_s(self) -> float:
        return self.next_start - self.previous_end


def floor_transfers(turns: tuple[list[Segment], list[Segment]]) -> list[FloorTransfer]:
    """Every change of the floor between the two speakers' turns, in time order.

    B's turn at 1-1.5 s lies inside A's and transfers nothing; B takes the floor 0.5 s after A's
    end, A takes it back 0.2 s before B's end (offset = next start - previous end):

    >>> transfers = floor_transfers(([(0, 3), (4.8, 7)], [(1, 1.5), (3.5, 5)]))
    >>> [(t.from_speaker, t.to_speaker, round(t.offset_s, 3)) for t in transfers]
    [(0, 1, 0.5), (1, 0, -0.2)]
    """
    ordered = sorted((s, e, k) for k in (0, 1) for s, e in turns[k])
    out: list[FloorTransfer] = []
    holder: list | None = None  # [speaker, end] of the turn holding the floor
    for start, end, k in ordered:
        if holder is None:
            holder = [k, end]
        elif k == holder[0]:
            holder[1] = max(holder[1], end)
        elif end > holder[1]:
            out.append(FloorTransfer(holder[0], k, holder[1], start))
            holder = [k, end]
    return out


def offset_distribution(offsets) -> dict:
    """Count, mean, percentiles, mode, share in overlap (< 0) and 50 ms histogram of FTOs (s),
    JSON-ready. The mode is the centre of the fullest histogram bin.

    >>> d = offset_distribution([0.2, 0.2, -0.1, 0.5])
    >>> d["n"], d["mean_s"], d["mode_s"], d["overlapped_share"], d["percentiles_s"]["50"]
    (4, 0.2, 0.225, 0.25, 0.2)
    >>> offset_distribution([])["mean_s"] is None
    True
    """
    values = np.asarray(list(offsets), dtype=float)
    edges = np.asarray(FTO_HISTOGRAM_EDGES_S)
    counts, _ = np.histogram(values, bins=edges)
    histogram = {"edges_s": list(FTO_HISTOGRAM_EDGES_S), "counts": counts.tolist(),
                 "below": int((values < edges[0]).sum()), "above": int((values > edges[-1]).sum())}
    if not len(values):
        return {"n": 0, "mean_s": None, "mode_s": None, "overlapped_share": None,
                "percentiles_s": {str(p): None for p in FTO_PERCENTILES}, "histogram": histogram}
    best = int(np.argmax(counts))
    return {
        "n": int(len(values)),
        "mean_s": float(values.mean()),
        "mode_s": round(float(edges[best] + FTO_BIN_S / 2), 3) if counts[best] else None,
        "overlapped_share": float((values < 0).mean()),
        "percentiles_s": {str(p): float(v) for p, v in zip(FTO_PERCENTILES, np.percentile(values, FTO_PERCENTILES))},
        "histogram": histogram,
    }
