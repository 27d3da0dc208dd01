"""What annotator-exclusion rules do on simulated studies (analysis.annotator_simulation).

    PYTHONPATH=. .venv/bin/python benchmarks/annotator_exclusion.py            # 50 seeds, ~30 s

20 careful annotators (85 % agreement with a latent truth), 5 coin-flippers, K = 3, 20 trials
each; mean share flagged over 50 simulated studies. Measured 2026-11-24:

    rule                                                         coin-flippers  careful
    suggested_exclusions (agreement < 0.5 or contradictions > 0.25)      91.6 %     1.2 %
    agreement with the others' majority < 0.5 only                        42.4 %     1.2 %
    agreement with the others' majority < 0.62 only                       80.0 %     7.8 %
    ratings contradict the own choice > 0.25 only                         84.0 %     0.0 %
    the earlier rule: agreement < 0.5 with a majority counting the own
      vote (main at 70cd15c, on the same simulated judgments)              3.2 %     0.0 %

(The earlier rule was measured by writing `simulate_judgments(seed)` for seeds 0-49 to Parquet
and running main's `per_annotator` and `suggested_exclusions` on them; its coin-flippers' mean
agreement was 0.667, the careful annotators' 0.866.)
"""

from __future__ import annotations

from analysis.agreement import per_annotator
from analysis.annotator_simulation import exclusion_rates
from analysis.study_metrics import suggested_exclusions

RULES = {
    "suggested_exclusions (agreement < 0.5 or contradictions > 0.25)":
        lambda j: suggested_exclusions(per_annotator(j)),
    "agreement with the others' majority < 0.5 only":
        lambda j: suggested_exclusions(per_annotator(j), max_contradictions=1.0),
    "agreement with the others' majority < 0.62 only":
        lambda j: suggested_exclusions(per_annotator(j), min_agreement=0.62, max_contradictions=1.0),
    "ratings contradict the own choice > 0.25 only":
        lambda j: suggested_exclusions(per_annotator(j), min_agreement=0.0),
}


def main() -> None:
    print(f"{'rule':66}{'coin-flippers':>14}{'careful':>10}")
    for name, rule in RULES.items():
        rates = exclusion_rates(rule)
        print(f"{name:66}{rates['coin_flippers_flagged']:>13.1%}{rates['careful_flagged']:>10.1%}")


if __name__ == "__main__":
    main()
