"""How far a voice-activity detector's speech boundaries lie from where the speech is, and undoing it.

Silero (TurnNat's settings) starts a stretch of speech about 34 ms before its first word and ends
it about 84 ms after its last (padding, and the probability's decay): IPUs merge, overlaps grow,
floor transfers come earlier. Moving every boundary back by the measured lag brings the session
pipeline's statistics to the word alignments' on voices and noise the lags were not measured on
(docs/pipeline-bias.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from turntaking.activity import Conversation


@dataclass(frozen=True)
class BoundaryLags:
    onset_s: float = 0.0  # s: detected start minus the true start (negative: early)
    offset_s: float = 0.0  # s: detected end minus the true end (positive: late)

    def as_dict(self) -> dict:
        return {"onset_s": round(self.onset_s, 4), "offset_s": round(self.offset_s, 4)}


def corrected(conv: Conversation, lags: BoundaryLags) -> Conversation:
    """The conversation with every speech segment's start moved by -onset and end by -offset (a
    segment that vanishes is dropped); words, speakers and meta kept.

    >>> conv = Conversation(5.0, ([(1.0, 2.0)], [(3.0, 3.1)]))
    >>> corrected(conv, BoundaryLags(-0.03, 0.08)).activity
    ([Segment(start=1.03, end=1.92)], [])
    """
    activity = tuple([(s - lags.onset_s, e - lags.offset_s) for s, e in conv.activity[k]
                      if e - lags.offset_s > s - lags.onset_s] for k in (0, 1))
    return Conversation(conv.duration, activity, conv.words, conv.speakers, source=conv.source,
                        meta=dict(conv.meta), words_from=conv.words_from)
