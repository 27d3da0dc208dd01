"""A lexical turn-completion cue: P(the other speaker takes the turn | the words before a silence).

Voice activity hardly tells a finished turn from a pause (the timing-hazard model's P(other starts
first) separates shifts from holds at clean silences with ROC-AUC 0.54); the last words do better
(ROC-AUC 0.79 for the last two words on training silences). Every IPU end of a speaker whose words
are known gets the turn-end model's prior (`judge.turn_end`, packaged judge/checkpoints/
turn_end.json): P(shift | the utterance's last two words) counted on Switchboard training
silences, optionally with P(question | the utterance) (`judge.questions`) as a second input. The
utterance is the speaker's words since the other's last speech that was not a backchannel, as the
turn-end model was fitted.

The cues enter the timing-hazard scorer where the audio cue does (`naturalness.turn_cue`): in the
mutual silence after the IPU end the other speaker's start hazard is raised and the same
speaker's resume hazard lowered by weight * (logit p - centre). The prior is calibrated on
Switchboard, so the centre is a fixed number (the logit of the training share of shifts), not a
per-dialogue median: an utterance that ends like a question makes the same speaker's going on
after the silence, and the other's silence, cost more; one that ends mid-sentence makes an
immediate answer cost more.

Words come with every Switchboard conversation (MS-98 word times) and with every call (ASR); a
dialogue without words gets no cue (`word_cues` returns None) and is scored on voice activity alone.
"""

from __future__ import annotations

from judge.turn_end import (
    QUESTION_MAX_WORDS,
    WORD_END_TOLERANCE_S,
    TurnEndModel,
    last_two,
    logit,
    utterance_tokens,
)
from naturalness.turn_cue import TurnEndCue, ipu_ends
from turntaking.activity import Conversation
from turntaking.events import EventParams, detect_events


def utterances_at_ipu_ends(conv: Conversation, events: EventParams = EventParams()) -> list[tuple[int, float, tuple[str, ...]]]:
    """(speaker, IPU end, the utterance's tokens up to it) at every IPU end of `ipu_ends` whose
    utterance has words; [] without words. The utterance: the speaker's words ending since the
    other's last IPU that was not a backchannel, up to the IPU end (`judge.turn_end`'s silences)."""
    if conv.words is None:
        return []
    detected = detect_events(conv, events)
    backchannels = [set(side) for side in detected.backchannels]
    out = []
    for k, t in ipu_ends(conv, events):
        other = 1 - k
        since = max((e for s, e in detected.ipus[other] if e <= t and (s, e) not in backchannels[other]),
                    default=0.0)
        raw = [w.text for w in conv.words[k] if since < w.end <= t + WORD_END_TOLERANCE_S]
        tokens = utterance_tokens(raw[-2 * QUESTION_MAX_WORDS:])
        if tokens:
            out.append((k, t, tokens[-QUESTION_MAX_WORDS:]))
    return out


def word_cues(conv: Conversation, model: TurnEndModel, with_question: bool = False,
              events: EventParams = EventParams()) -> list[TurnEndCue] | None:
    """The turn-end model's P(shift) at every IPU end with words, as `TurnEndCue`s (p_complete =
    P(shift)); None when the dialogue has no words. `with_question`: P(question | utterance) as
    a second input (the regression fitted with it)."""
    if conv.words is None:
        return None
    return [TurnEndCue(k, t, model.prior_from_tokens(last_two(tokens), None, tokens if with_question else None))
            for k, t, tokens in utterances_at_ipu_ends(conv, events)]


def base_rate_logit(model: TurnEndModel) -> float:
    """The centre of the cue's log-odds: the logit of the training share of shifts."""
    return logit(model.base_rate)
