"""Simulated annotation studies, to measure what an annotator-exclusion rule does.

Careful annotators choose the clip a pair's latent truth says is more natural with probability
`careful_accuracy`, and rate the clip they chose at least as natural as the other (as the demo
study's careful annotators do; `analysis.demo_study`), except for a `careful_slip` share of
trials whose ratings are random. Coin-flippers choose by a coin and rate both clips uniformly
1-5 (the demo's careless annotators). Each pair goes to `judgments_per_pair` distinct annotators,
each annotator gets `trials` formal trials (the last pair may get fewer), as the assignment does.

What the default rule (`study_metrics.suggested_exclusions` on `agreement.per_annotator`) does,
mean over 50 seeds (`exclusion_rates()`, 20 careful at 85 %, 5 coin-flippers, K = 3, 20 trials):
coin-flippers flagged 91.6 %, careful 1.2 %. The earlier rule (agreement < 0.5 with a majority
that counted the own vote) flagged 3.2 % and 0 % of the same studies. Agreement with the others'
majority alone cannot reach both 80 % and 5 %: with K = 3 only the judgments whose two others
agree say anything about the truth (about 13 of 20), and careful annotators agree with those
about 80 % of the time, so the two binomials overlap (below 0.5: 42 % / 1.2 %; below 0.62: 80 % /
7.8 %). The ratings against the own choice carry the rest (alone: 84 % / 0 %).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from analysis.agreement import per_annotator
from analysis.study_metrics import suggested_exclusions


@dataclass(frozen=True)
class SimulatedStudy:
    careful: int = 20
    coin_flippers: int = 5
    judgments_per_pair: int = 3
    trials: int = 20  # formal trials per annotator
    careful_accuracy: float = 0.85  # how often a careful annotator's choice agrees with the latent truth
    careful_slip: float = 0.05  # share of a careful annotator's trials rated at random
    truth_natural: float = 0.8  # share of pairs whose natural clip is the more natural one


def assign_pairs(study: SimulatedStudy, rng: np.random.Generator) -> list[np.ndarray]:
    """Pairs as arrays of distinct annotator numbers: each pair goes to the annotators with the
    most trials left (ties at random), so everyone gets `trials`."""
    left = np.full(study.careful + study.coin_flippers, study.trials)
    pairs = []
    while left.sum() > 0:
        open_ = np.flatnonzero(left > 0)
        chosen = open_[np.lexsort((rng.random(len(open_)), -left[open_]))][:study.judgments_per_pair]
        left[chosen] -= 1
        pairs.append(chosen)
    return pairs


def simulate_judgments(seed: int, study: SimulatedStudy = SimulatedStudy()) -> tuple[pd.DataFrame, set[str]]:
    """Formal judgments in `analysis.agreement`'s input format, and the coin-flippers' names."""
    rng = np.random.default_rng(seed)
    names = [f"careful-{i:02d}" for i in range(study.careful)] + [f"coin-{i:02d}" for i in range(study.coin_flippers)]
    rows = []
    for p, annotators in enumerate(assign_pairs(study, rng)):
        natural_is_better = rng.random() < study.truth_natural
        for a in annotators:
            careful = a < study.careful
            right = rng.random() < (study.careful_accuracy if careful else 0.5)
            chose_natural = bool(natural_is_better == right)
            if careful and rng.random() >= study.careful_slip:
                top = int(np.clip(round(rng.normal(3.9, 0.6)), 1, 5))
                low = int(np.clip(top - rng.choice([0, 1, 1, 2]), 1, 5))
                r_natural, r_perturbed = (top, low) if chose_natural else (low, top)
            else:
                r_natural, r_perturbed = (int(r) for r in rng.integers(1, 6, 2))
            rows.append({"annotator": names[a], "pair_id": f"p{p}", "type": "simulated",
                         "choice": "natural" if chose_natural else "perturbed",
                         "rating_natural": r_natural, "rating_perturbed": r_perturbed,
                         "artifact_natural": np.nan, "artifact_perturbed": np.nan, "trial": "formal",
                         "attention_passed": np.nan,
                         "duration_s": float(rng.lognormal(np.log(22 if careful else 7), 0.3))})
    return pd.DataFrame(rows), set(names[study.careful:])


def default_rule(judgments: pd.DataFrame) -> list[str]:
    return suggested_exclusions(per_annotator(judgments))


def exclusion_rates(rule: Callable[[pd.DataFrame], list[str]] = default_rule, study: SimulatedStudy = SimulatedStudy(),
                    seeds: int = 50) -> dict:
    """Mean share, over simulated studies, of the coin-flippers and of the careful annotators that
    `rule` (judgments -> flagged annotators) flags."""
    coin, careful = [], []
    for seed in range(seeds):
        judgments, coin_flippers = simulate_judgments(seed, study)
        flagged = set(rule(judgments))
        coin.append(len(flagged & coin_flippers) / study.coin_flippers)
        careful.append(len(flagged - coin_flippers) / study.careful)
    return {"coin_flippers_flagged": float(np.mean(coin)), "careful_flagged": float(np.mean(careful)), "seeds": seeds}
