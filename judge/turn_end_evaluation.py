"""How well the turn-end model (`judge.turn_end`) tells shifts from holds, and what a system that
takes the turn when P(turn ended) >= theta would do, against fixed silence timers.

On silences of held-out conversations (`conversation_silences`, at least JUDGE_AT_S long):
- ROC-AUC of shift vs hold for the prior from the words only, the judge only, and both; with a
  question cue also question only, words + question and words + judge + question;
- a rule "take the turn at the first 40 ms decision point where p_turn_end >= theta", decisions
  from DECISION_START_S (the transcript arrives ~150 ms into the silence): the share of holds where
  it cuts in (decides before the speaker resumes), and the median / 90th percentile of its decision
  time at shifts (or "never" when it does not decide within the survival table's 5 s);
- fixed timers (take the turn after 250 ms / 400 ms of silence, as the cascade systems do): they cut
  in at every hold longer than the timer and decide at the timer at every shift.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from judge.turn_end import JUDGE_AT_S, SURVIVAL_MAX_S, Silence, TurnEndModel

# sklearn.metrics is imported where it is used: it takes about half a second, which most commands never need.

DECISION_STEP_S = 0.04
DECISION_START_S = JUDGE_AT_S + DECISION_STEP_S
THETAS = (0.3, 0.5, 0.7, 0.8)
TIMERS_S = (0.25, 0.40)


def decision_grid() -> np.ndarray:
    n = int(round((SURVIVAL_MAX_S - DECISION_START_S) / DECISION_STEP_S)) + 1
    return np.round(DECISION_START_S + DECISION_STEP_S * np.arange(n), 6)


def decision_times(model: TurnEndModel, priors: np.ndarray, theta: float) -> np.ndarray:
    """First decision time with p_turn_end >= theta per silence (inf: none within the grid)."""
    grid = decision_grid()
    survival = np.array([model.pause_survival(t) for t in grid])
    odds = priors / np.maximum(1.0 - priors, 1e-12)
    # odds / S(t) >= theta / (1 - theta)  <=>  S(t) <= odds (1 - theta) / theta; S never rises.
    reached = survival[None, :] <= (odds * (1.0 - theta) / theta)[:, None] * (1 + 1e-12)
    first = np.where(reached.any(axis=1), reached.argmax(axis=1), -1)
    return np.where(first >= 0, grid[np.maximum(first, 0)], np.inf)


def _rule_row(name: str, times_hold: np.ndarray, hold_s: np.ndarray, times_shift: np.ndarray) -> dict:
    finite = times_shift[np.isfinite(times_shift)]
    def pct(q):  # noqa: E306
        v = np.percentile(times_shift, q, method="inverted_cdf") if len(times_shift) else np.nan
        return None if not np.isfinite(v) else round(1000 * float(v))
    return {
        "rule": name,
        "holds_cut_in": float(np.mean(times_hold < hold_s)) if len(hold_s) else None,
        "shift_decision_median_ms": pct(50),
        "shift_decision_p90_ms": pct(90),
        "shifts_never_decided": float(1 - len(finite) / len(times_shift)) if len(times_shift) else None,
    }


def evaluate_silences(model: TurnEndModel, silences: Sequence[Silence]) -> dict:
    from sklearn.metrics import roc_auc_score
    y = np.array([s.shift for s in silences], dtype=int)
    if len(set(y)) < 2:
        raise ValueError("the evaluation needs both shifts and holds")
    priors = {
        "words only": np.array([model.prior_shift(s.words, None) for s in silences]),
        "judge only": np.array([model.prior_shift(None, s.judge_p_t) for s in silences]),
        "words + judge": np.array([model.prior_shift(s.words, s.judge_p_t) for s in silences]),
    }
    with_questions = model.questions is not None
    if with_questions:
        priors["question only"] = np.array([model.prior_from_tokens(None, None, s.utterance) for s in silences])
        priors["words + question"] = np.array([model.prior_from_tokens(s.words, None, s.utterance)
                                               for s in silences])
        priors["words + judge + question"] = np.array([model.prior_from_tokens(s.words, s.judge_p_t, s.utterance)
                                                       for s in silences])
    auc = {name: float(roc_auc_score(y, p)) for name, p in priors.items()}
    hold = y == 0
    hold_s = np.array([s.hold_s for s in silences if not s.shift], dtype=float)
    rules = []
    for cues in ("words + judge", "words + judge + question") if with_questions else ("words + judge",):
        for theta in THETAS:
            times = decision_times(model, priors[cues], theta)
            rules.append(_rule_row(f"p_turn_end >= {theta:g} ({cues})", times[hold], hold_s, times[~hold]))
    for theta in THETAS:
        times = decision_times(model, np.full(len(silences), model.base_rate), theta)
        rules.append(_rule_row(f"p_turn_end >= {theta:g} (no cues: base rate)", times[hold], hold_s, times[~hold]))
    for timer in TIMERS_S:
        times = np.full(len(silences), timer)
        rules.append(_rule_row(f"fixed timer {1000 * timer:.0f} ms", times[hold], hold_s, times[~hold]))
    return {
        "silences": len(silences), "shifts": int(y.sum()), "holds": int(hold.sum()),
        "conversations": len({s.conversation for s in silences}),
        "roc_auc": auc, "rules": rules,
        "decision_points": f"every {1000 * DECISION_STEP_S:.0f} ms from {1000 * DECISION_START_S:.0f} ms",
    }


def format_evaluation(report: dict) -> str:
    lines = [f"{report['silences']} silences >= {1000 * JUDGE_AT_S:.0f} ms ({report['shifts']} shifts, "
             f"{report['holds']} holds) of {report['conversations']} conversations",
             *([f"question cue: ROC-AUC {report['question_cue']['roc_auc']:.3f} on "
                f"{report['question_cue']['units']} held-out dialog-act units "
                f"({report['question_cue']['questions']} questions) of {report['question_cue']['conversations']} "
                f"conversations; turn-end silences leave out the {report['question_cue']['excluded']} "
                "conversations whose dialog acts trained it"] if report.get("question_cue") else []),
             "ROC-AUC shift vs hold: " + ", ".join(f"{k} {v:.3f}" for k, v in report["roc_auc"].items()),
             f"decisions {report['decision_points']}",
             f"{'rule':55s} {'holds cut in':>12s} {'shift median':>12s} {'shift p90':>10s} {'never':>7s}"]
    for r in report["rules"]:
        ms = lambda v: "never" if v is None else f"{v} ms"  # noqa: E731
        lines.append(f"{r['rule']:55s} {100 * r['holds_cut_in']:11.1f}% {ms(r['shift_decision_median_ms']):>12s} "
                     f"{ms(r['shift_decision_p90_ms']):>10s} {100 * r['shifts_never_decided']:6.1f}%")
    return "\n".join(lines)
