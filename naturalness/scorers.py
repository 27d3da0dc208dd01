"""The naturalness scorers a researcher can choose, by name: each in the module named as it is.

    timing-hazard   (default) likelihood of the whole timing under human conversation, in context
                    (naturalness/timing_hazard/, packaged naturalness/checkpoints/timing_hazard.npz)
    durations       context-free baseline: mean NLL of gap, pause and overlap durations
                    (naturalness/durations.py, packaged naturalness/checkpoints/durations.json)
    turnnat-paper   the TurnNat paper's DialogNLL over turn-boundary units of the GRU judge's
                    future voice-activity head (naturalness/turnnat_paper.py, judge_va.pt), unchanged

Every scorer keeps the contract of `naturalness.score`: a `Conversation` in, a `Score` with
`scorer`, `dialog_nll` (higher = less natural), `naturalness` (= -dialog_nll) and `as_dict()` out.
The three scales differ (nats per second, nats per event, nats per frame): compare dialogues
within one scorer, never across scorers.
"""

from __future__ import annotations

from naturalness.durations import DurationsScorer
from naturalness.score import Scorer
from naturalness.timing_hazard.scorer import TimingHazardScorer
from naturalness.turnnat_paper import TurnNatPaperScorer

SCORER_TYPES: dict[str, type[Scorer]] = {
    scorer.name: scorer for scorer in (TimingHazardScorer, DurationsScorer, TurnNatPaperScorer)
}
SCORERS = tuple(SCORER_TYPES)
DEFAULT_SCORER = TimingHazardScorer.name
# The scorers whose model is a judge checkpoint (the CLI's --checkpoint), not a file of their own.
JUDGE_SCORERS = tuple(name for name, scorer in SCORER_TYPES.items() if scorer.needs_judge)


def scorer_type(name: str) -> type[Scorer]:
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
