"""A lexical turn-completion cue: P(the other speaker takes the turn | the words before a silence).

Voice activity hardly tells a finished turn from a pause (the timing-hazard model's P(other starts
first) separates shifts from holds at clean silences with ROC-AUC 0.54); the last words do better
(ROC-AUC 0.79 for the last two words on training silences). Every IPU end of a speaker whose words
are known gets the turn-end model's prior (`judge.turn_end`, packaged judge/checkpoints/
turn_end.json): P(shift | the utterance's last two words) counted on Switchboard training
silences, optionally with P(question | the utterance) (`judge.questions`) as a second input. The
utterance is the speaker's words since the other's last speech that was not a backchannel, as the
turn-end model was fitted.

The cues enter the `timing-hazard-words` scorer as evidence of *who* speaks next in the mutual
silence after the IPU end, not of *when* (`who_next_hazards`): the hazard that anyone starts is
kept, and the other speaker's share of it moved by weight * (logit P - centre), the centre the
logit of the training share of shifts (the prior is calibrated on Switchboard, so no per-dialogue
median as for the audio cue). An utterance that ends like a question makes the same speaker's going
on after the silence cost more and the other's answer less; one that ends mid-sentence the other
way round. Shifting both hazards' log-odds instead, as the audio cue does (`cue_logit_shift` with a
fixed `centre`), also makes every silent frame after a likely turn end cost more, everywhere in a
dialogue; on training pairs that lost "shift instead of hold" (naturalness/checkpoints/MODEL_CARD.md,
"What was tried").

Words come with every Switchboard conversation (MS-98 word times) and with every call (ASR); a
dialogue without words gets no cue (`word_cues` returns None) and is scored on voice activity alone.
"""

from __future__ import annotations

import bisect

import numpy as np

from judge.turn_end import (
    QUESTION_MAX_WORDS,
    WORD_END_TOLERANCE_S,
    TurnEndModel,
    last_two,
    logit,
    utterance_tokens,
)
from naturalness.turn_cue import TurnEndCue, cue_spans, ipu_ends
from turntaking.activity import Conversation
from turntaking.events import EventParams, Events, detect_events


def utterances_at_ipu_ends(conv: Conversation, events: EventParams = EventParams(),
                           detected: Events | None = None) -> list[tuple[int, float, tuple[str, ...]]]:
    """(speaker, IPU end, the utterance's tokens up to it) at every IPU end of `ipu_ends` whose
    utterance has words; [] without words. The utterance: the speaker's words ending since the
    other's last IPU that was not a backchannel, up to the IPU end (`judge.turn_end`'s silences).
    `detected`: the dialogue's `detect_events`, where the caller has them already."""
    if conv.words is None:
        return []
    detected = detect_events(conv, events) if detected is None else detected
    # The other's IPU ends that are not backchannels, and each speaker's words by their end: found
    # by bisection (an hour of conversation has thousands of IPU ends).
    backchannels = [set(detected.backchannels[k]) for k in (0, 1)]  # once: an hour has thousands of IPUs
    turn_ends = [sorted(e for s, e in detected.ipus[k] if (s, e) not in backchannels[k]) for k in (0, 1)]
    words = [sorted(conv.words[k], key=lambda w: w.end) for k in (0, 1)]
    word_ends = [[w.end for w in side] for side in words]
    out = []
    for k, t in ipu_ends(conv, events):
        other = turn_ends[1 - k]
        i = bisect.bisect_right(other, t)
        since = other[i - 1] if i else 0.0
        first = bisect.bisect_right(word_ends[k], since)
        last = bisect.bisect_right(word_ends[k], t + WORD_END_TOLERANCE_S)
        raw = [w.text for w in words[k][max(first, last - 2 * QUESTION_MAX_WORDS):last]]
        tokens = utterance_tokens(raw)
        if tokens:
            out.append((k, t, tokens[-QUESTION_MAX_WORDS:]))
    return out


def word_cues(conv: Conversation, model: TurnEndModel, with_question: bool = False,
              events: EventParams = EventParams(), detected: Events | None = None) -> list[TurnEndCue] | None:
    """The turn-end model's P(shift) at every IPU end with words, as `TurnEndCue`s (p_complete =
    P(shift)); None when the dialogue has no words. `with_question`: P(question | utterance) as
    a second input (the regression fitted with it)."""
    if conv.words is None:
        return None
    return [TurnEndCue(k, t, model.prior_from_tokens(last_two(tokens), None, tokens if with_question else None))
            for k, t, tokens in utterances_at_ipu_ends(conv, events, detected)]


def base_rate_logit(model: TurnEndModel) -> float:
    """The centre of the cue's log-odds: the logit of the training share of shifts."""
    return logit(model.base_rate)


def who_next_hazards(h: np.ndarray, cues: list[TurnEndCue], va: np.ndarray, frame_rate: float, weight: float,
                     centre: float) -> np.ndarray:
    """The (2, n - 1) hazards with the cues as evidence of *who* speaks next, not of *when*.

    In the mutual silence after an IPU end of speaker k, the hazard that anyone starts, h_k + h_o,
    is kept; the share of it that is the other's, pi = h_o / (h_k + h_o), is moved on the
    log-odds scale by weight * (logit P(shift) - centre). The waiting frames then cost what they
    cost without the cue (a cue does not make a silence more or less likely to end), and only
    the speaker who ends it pays or gains: the same speaker going on after a question costs more,
    the other answering costs less. (A shift of both hazards' log-odds, as the audio cue does,
    also raises the cost of every silent frame after a likely turn end, everywhere in a dialogue.)"""
    h = h.copy()
    for cue, f, stop in cue_spans(cues, va, frame_rate):
        k, o = cue.speaker, 1 - cue.speaker
        total = h[k, f:stop] + h[o, f:stop]
        pi = h[o, f:stop] / total
        delta = weight * (float(logit(cue.p_complete, 1e-4)) - centre)
        moved = 1.0 / (1.0 + np.exp(-(np.log(pi / (1 - pi)) + delta)))
        h[o, f:stop] = np.clip(total * moved, 1e-6, 1 - 1e-6)
        h[k, f:stop] = np.clip(total * (1 - moved), 1e-6, 1 - 1e-6)
    return h
