"""The predictive system's P(turn end) at a step of the caller's pause, from the cues it has read:
the turn-end model's prior (the last words, the judge's P(turn change), P(question)), the language
model's P(sentence end) and P("?") as likelihood ratios, Smart Turn's odds, and how rarely a
within-turn pause lasts this long (systems.predictive's docstring says why each, and how fitted)."""

from __future__ import annotations

from dataclasses import dataclass

from judge.turn_end import TurnEndModel, logit, posterior, sigmoid
from systems.lexical_completion import log_ratio_against_turn_end, question_log_ratio


def completion_veto(p_sentence_end: float, floor: float | None) -> float:
    """The completion cue's log-odds term against a turn end, no lower than `floor` (None: unbounded):
    a misheard sentence reads as unfinished to the language model at any P.

    >>> round(completion_veto(0.0, None), 2), completion_veto(0.0, -3.0), completion_veto(0.5, -3.0)
    (-14.17, -3.0, 0.0)
    """
    term = log_ratio_against_turn_end(p_sentence_end)
    return term if floor is None else max(term, floor)


def smart_turn_term(read: float, weight: float, lowers: bool = True) -> float:
    """Smart Turn's log-odds term at `weight`; with `lowers` False, only where it raises the odds.

    >>> round(smart_turn_term(0.1, 1.0), 2), smart_turn_term(0.1, 1.0, lowers=False)
    (-2.2, 0.0)
    """
    term = weight * logit(read)
    return term if lowers else max(term, 0.0)


@dataclass(frozen=True)
class TurnEndCues:
    """What is known of the caller's turn at one step of their pause (None: not read yet)."""

    text: str | None  # the speculative transcript
    judge_p_t: float | None  # the judge's P(turn change) 120 ms into the silence
    smart_turn: float | None  # Smart Turn's P(complete) at its first read
    smart_turn_again: float | None  # and at its second (the acknowledgement's)
    sentence_ends: dict | None  # the language model's P(".", "?", "!" next)
    silence_s: float


@dataclass(frozen=True)
class TurnEndBelief:
    words: tuple[str, ...] | None  # the last words the prior read
    p_end: float  # P(turn end): the turn is taken at `shift_threshold`
    p_acknowledge: float  # the same with the acknowledgement's Smart Turn weight and its more confident read


def turn_end_belief(model: TurnEndModel, settings, cues: TurnEndCues) -> TurnEndBelief:
    """P(turn end) from `cues`, weighted as the predictive system's `settings` say."""
    s, ends = settings, cues.sentence_ends
    words = model.last_words(cues.text) if cues.text is not None else None
    # the prior's log odds, plus each cue's log likelihood ratio
    log_odds = logit(model.prior_shift(words, cues.judge_p_t, utterance=cues.text if s.question_cue else None))
    if ends is not None and s.lexical_completion:
        log_odds += completion_veto(sum(ends.values()), s.completion_veto_floor)
    if ends is not None and s.question_end:
        log_odds += question_log_ratio(ends["?"])
    survival = model.pause_survival(cues.silence_s)

    def p_given(read: float | None, weight: float, lowers: bool = True) -> float:
        """P(turn end) with a Smart Turn read's odds, if any (with `lowers` False, only if they raise it)."""
        term = 0.0 if read is None else smart_turn_term(read, weight, lowers)
        return posterior(sigmoid(log_odds + term), survival)

    complete, again = cues.smart_turn, cues.smart_turn_again
    return TurnEndBelief(
        words=words,
        p_end=p_given(complete, s.smart_turn_weight),
        # the acknowledgement's P(turn end) reads the more confident of the two reads
        p_acknowledge=p_given(complete if again is None else max(again, complete or 0.0),
                              s.acknowledge_smart_turn_weight, s.acknowledge_smart_turn_lowers),
    )
