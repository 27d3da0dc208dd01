"""The naturalness scorers a researcher can choose, by name: each in the module named as it is.

    timing-hazard-words   (default) timing-hazard with the words where the dialogue has them:
                    P(turn end | the last words) of judge/checkpoints/turn_end.json moves who speaks
                    next in the silence after every IPU end (naturalness/word_cue.py), and the first
                    words of every IPU after a silence are charged by whether they fit who spoke
                    last (naturalness/first_words.py, packaged naturalness/checkpoints/
                    first_words.json); without words, timing-hazard's score to the last digit
                    (`word_cues` None). A recording is read with ASR for its words.
    timing-hazard   a cost of the whole timing under human conversation, in context: NLL of every
                    frame plus a charge per start or stop, with a peak term, on voice activity alone
                    (naturalness/timing_hazard/, packaged naturalness/checkpoints/timing_hazard.npz)
    durations       context-free baseline: mean NLL of gap, pause and overlap durations
                    (naturalness/durations.py, packaged naturalness/checkpoints/durations.json)
    turnnat-va      TurnNat's pooling (DialogNLL over turn-boundary units) of the future
                    voice-activity head of the 64-unit GRU judge judge_va.pt, trained on voice
                    activity alone with TBU weight 1 (naturalness/turnnat_va.py): the paper's
                    pooling, not the paper's scorer (an audio model trained with TBU weight 8).
                    Formerly `turnnat-paper`, a name still accepted (DEPRECATED_NAMES).

Every scorer keeps the contract of `naturalness.score`: a `Conversation` in, a `Score` with
`scorer`, `dialog_nll` (higher = less natural), `naturalness` (= -dialog_nll) and `as_dict()` out.
The field keeps its name for every scorer, but what it holds differs, and each scorer's `units`
says which: a negative log-likelihood (durations: per event; turnnat-va: pooled per frame) or a
cost (timing-hazard: NLL per second plus a charge per start or stop and a peak term). So the
difference of two dialogues' scores is a DeltaNLL only for the likelihoods; the scales differ
too: compare dialogues within one scorer, never across scorers.
"""

from __future__ import annotations

from naturalness.durations import DurationsScorer
from naturalness.score import Scorer
from naturalness.timing_hazard.scorer import TimingHazardScorer
from naturalness.timing_hazard.word_scorer import TimingHazardWordsScorer
from naturalness.turnnat_va import TurnNatVaScorer

SCORER_TYPES: dict[str, type[Scorer]] = {
    scorer.name: scorer for scorer in (TimingHazardWordsScorer, TimingHazardScorer, DurationsScorer, TurnNatVaScorer)
}
SCORERS = tuple(SCORER_TYPES)
# The words lift the answer cut out of a dialogue from 62-70 % to 76-85 % on validation pairs of
# three generators (naturalness/checkpoints/MODEL_CARD.md, "Validation"); a
# dialogue without words gets timing-hazard's score.
DEFAULT_SCORER = TimingHazardWordsScorer.name
# The scorers whose model is a judge checkpoint (the CLI's --checkpoint), not a file of their own.
JUDGE_SCORERS = tuple(name for name, scorer in SCORER_TYPES.items() if scorer.needs_judge)


# Old names still accepted (command lines, stored study results, corpus-run folders), each with
# the scorer it now names. turnnat-paper: the scorer is TurnNat's pooling on this project's
# voice-activity judge, not the paper's scorer, so it was renamed; its scores are unchanged.
DEPRECATED_NAMES = {"turnnat-paper": "turnnat-va"}
# What a command line's --scorer accepts: the scorers, then the deprecated names.
SCORER_CHOICES = SCORERS + tuple(DEPRECATED_NAMES)


def canonical_scorer(name: str) -> str:
    """The scorer's current name (a deprecated one mapped to its successor; others unchanged)."""
    return DEPRECATED_NAMES.get(name, name)


def scorer_type(name: str) -> type[Scorer]:
    name = canonical_scorer(name)
    if name not in SCORER_TYPES:
        raise ValueError(f"unknown naturalness scorer {name!r} (choose from {', '.join(SCORERS)})")
    return SCORER_TYPES[name]


def load_scorer(name: str = DEFAULT_SCORER, model_file=None) -> Scorer:
    """A scorer by name; `model_file` replaces its packaged model (a judge checkpoint where it
    `needs_judge`)."""
    return scorer_type(name).load(model_file)


def load_scorers(judge_checkpoint=None) -> dict[str, Scorer]:
    """Every scorer, default first, with its packaged model; those that need a judge only when a
    judge checkpoint is given, and then with it."""
    return {name: scorer.load(judge_checkpoint if scorer.needs_judge else None)
            for name, scorer in SCORER_TYPES.items() if judge_checkpoint is not None or not scorer.needs_judge}
