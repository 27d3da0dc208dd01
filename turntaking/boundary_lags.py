"""How far a voice-activity detector's speech boundaries lie from where the speech is, and undoing it.

Silero (TurnNat's settings) starts a stretch of speech about 34 ms before its first word and ends
it 80-180 ms after its last, later the noisier the channel (`speech.silero_lags`): IPUs merge,
overlaps grow, floor transfers come earlier. Moving every boundary back by the measured lags
brings the session pipeline's statistics to the word alignments' on voices and noise the lags were
not measured on (docs/pipeline-bias.md).
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


ChannelLags = tuple[BoundaryLags, BoundaryLags]


def lags_of(conv: Conversation) -> ChannelLags | None:
    """Each channel's lags, where the conversation's voice activity says them
    (`meta["boundary_lags"]`: [[onset_s, offset_s], [onset_s, offset_s]], as `speech.silero_lags`
    measures them and the voice-activity JSON keeps them).

    >>> lags_of(Conversation(1.0, ([], []), meta={"boundary_lags": [[-0.03, 0.08], [-0.04, 0.15]]}))
    (BoundaryLags(onset_s=-0.03, offset_s=0.08), BoundaryLags(onset_s=-0.04, offset_s=0.15))
    """
    found = conv.meta.get("boundary_lags")
    return None if found is None else tuple(BoundaryLags(float(on), float(off)) for on, off in found)


def corrected(conv: Conversation, lags: BoundaryLags | ChannelLags) -> Conversation:
    """The conversation with every speech segment's start moved by -onset and end by -offset
    (`lags` for both channels, or one per channel; a segment that vanishes is dropped); words,
    speakers and meta kept.

    >>> conv = Conversation(5.0, ([(1.0, 2.0)], [(3.0, 3.1)]))
    >>> corrected(conv, BoundaryLags(-0.03, 0.08)).activity
    ([Segment(start=1.03, end=1.92)], [])
    """
    per_channel = lags if isinstance(lags, tuple) else (lags, lags)
    activity = tuple([(s - per_channel[k].onset_s, e - per_channel[k].offset_s) for s, e in conv.activity[k]
                      if e - per_channel[k].offset_s > s - per_channel[k].onset_s] for k in (0, 1))
    return Conversation(conv.duration, activity, conv.words, conv.speakers, source=conv.source,
                        meta=dict(conv.meta), words_from=conv.words_from)
