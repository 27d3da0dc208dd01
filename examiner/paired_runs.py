"""Two examiner runs on the same task set compared example by example: each run's figures per
task with bootstrap intervals over its examples, and the paired differences (the second run less
the first) with theirs, so that a change is told from the noise of one machine on one day.

For each turn-taking task (pause handling, smooth turn-taking, user interruption):
- the take-over rate (TOR) and, over the take-overs, the mean latency and the share of answers
  later than `late_s`, each with its percentile bootstrap interval over examples;
- paired on the examples both runs hold: the differences of TOR, of latency (where both took
  the turn) and of lateness, each with its interval; the standard deviation of the latency
  differences; and how many examples a 0.1 s change needs to be found at 80 % power
  (n = ((z_0.975 + z_0.8) * sd / 0.1)^2): twelve examples separate 0.1 s only where the paired
  differences vary by less than 0.12 s.
And how well each run heard the questions: the word error rate of the smooth turn-taking calls'
final transcripts against the questions, over the examples both runs logged a transcript for
(examiner.transcript_errors).
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import asdict, dataclass
from pathlib import Path

from examiner.fdb_rules import bootstrap_interval, mean_or_none
from examiner.transcript_errors import QUESTION_TASK, example_word_errors, transcript_errors
from turntaking.intervals import z_value

TURN_TASKS = ("pause_handling", "smooth_turn_taking", "user_interruption")
LATENCY_TASKS = ("smooth_turn_taking", "user_interruption")
LATE_S = 0.6  # an answer later than this is late (the predictive system's target: at most 1 in 20)
CHANGE_S = 0.1  # the latency change the comparison should be able to find
FEW_PAIRS = 10  # below this, a bootstrap interval over examples says little
SAME_INPUT_S = 0.002  # a question's end may differ this much between runs of one task set (rounding)
# Tasks whose input does not depend on the system (an interruption is placed on the system's onset)
FIXED_INPUT_TASKS = ("pause_handling", "smooth_turn_taking")


class PairedRunsError(ValueError):
    """Runs that cannot be compared: a folder without scores, or runs on different task sets."""


@dataclass(frozen=True)
class RunFigures:
    examples: int
    tor: float | None
    tor_ci95: list[float] | None
    answers: int  # take-overs, whose latency counts
    latency_s: float | None
    latency_ci95: list[float] | None
    late_share: float | None  # of the answers, those later than late_s
    late_ci95: list[float] | None


@dataclass(frozen=True)
class PairedFigures:
    pairs: int  # examples in both runs
    tor_difference: float | None
    tor_ci95: list[float] | None
    latency_pairs: int  # examples both runs answered
    latency_difference_s: float | None
    latency_ci95: list[float] | None
    late_difference: float | None
    late_ci95: list[float] | None
    difference_sd_s: float | None
    examples_for_change: int | None  # to find a CHANGE_S change at 80 % power, given difference_sd_s


def run_scores(run: Path) -> dict:
    """A finished run folder's scores.json."""
    path = Path(run) / "scores.json"
    if not path.exists():
        raise PairedRunsError(f"{run} has no scores.json: not a finished examiner run (python -m examiner run)")
    try:
        report = json.loads(path.read_text())
        report["scores"].items()
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as e:
        raise PairedRunsError(f"{path} is not an examiner run's scores ({type(e).__name__})") from None
    return report


def task_rows(report: dict) -> dict[str, dict[str, dict]]:
    """{task: {example: its FDB row}} of a run's scores."""
    scores = report["scores"]
    return {task: {row["example"]: row for row in scores[task]["fdb"]["rows"]}
            for task in TURN_TASKS if task in scores and "fdb" in scores[task]}


def same_task_set(first: dict, second: dict) -> None:
    """Refuse runs made on task sets whose manifests differ (where both are still there)."""
    manifests = [Path(report.get("task_set") or "") / "manifest.json" for report in (first, second)]
    if all(m.is_file() for m in manifests) and json.loads(manifests[0].read_text()) != json.loads(manifests[1].read_text()):
        raise PairedRunsError(f"the runs were made on different task sets ({manifests[0].parent}, {manifests[1].parent}): "
                              "run both on one set (python -m examiner run --set SET)")


def run_figures(rows: list[dict], task: str, late_s: float = LATE_S) -> RunFigures:
    timed = task in LATENCY_TASKS
    latencies = [r["latency_s"] for r in rows if r["tor"] and r["latency_s"] is not None] if timed else []
    late = [float(v > late_s) for v in latencies]
    return RunFigures(len(rows), mean_or_none(r["tor"] for r in rows), bootstrap_interval(r["tor"] for r in rows),
                      len(latencies), mean_or_none(latencies), bootstrap_interval(latencies),
                      mean_or_none(late), bootstrap_interval(late))


def examples_for_change(sd: float | None, change_s: float = CHANGE_S, confidence: float = 0.95,
                        power: float = 0.8) -> int | None:
    """Paired examples a `change_s` change needs to be found at `power` when the differences vary by `sd`.

    >>> examples_for_change(0.12), examples_for_change(0.3), examples_for_change(None)
    (12, 71, None)
    """
    if sd is None:
        return None
    return max(2, math.ceil(((z_value(confidence) + z_value(2 * power - 1)) * sd / change_s) ** 2))


def paired_figures(first: dict[str, dict], second: dict[str, dict], task: str, late_s: float = LATE_S) -> PairedFigures:
    both = sorted(set(first) & set(second), key=lambda e: (len(e), e))
    for example in both if task in FIXED_INPUT_TASKS else ():
        a, b = first[example].get("user_end_s"), second[example].get("user_end_s")
        if a is not None and b is not None and abs(a - b) > SAME_INPUT_S:
            raise PairedRunsError(f"the runs' inputs differ ({task}/{example}: the user's turn ends at {a:.3f} s in "
                                  f"one, {b:.3f} s in the other): compare runs made on the same task set (--set)")
    tor = [second[e]["tor"] - first[e]["tor"] for e in both]
    timed = task in LATENCY_TASKS
    answered = [e for e in both if timed and all(r[e]["tor"] and r[e]["latency_s"] is not None
                                                  for r in (first, second))]
    latency = [second[e]["latency_s"] - first[e]["latency_s"] for e in answered]
    late = [float(second[e]["latency_s"] > late_s) - float(first[e]["latency_s"] > late_s) for e in answered]
    sd = statistics.stdev(latency) if len(latency) >= 2 else None
    return PairedFigures(len(both), mean_or_none(tor), bootstrap_interval(tor), len(answered), mean_or_none(latency),
                         bootstrap_interval(latency), mean_or_none(late), bootstrap_interval(late), sd,
                         examples_for_change(sd))


def compare_runs(first: Path | str, second: Path | str, late_s: float = LATE_S) -> dict:
    """Each run's figures and the paired differences (second less first), task by task."""
    first_scores, second_scores = run_scores(Path(first)), run_scores(Path(second))
    same_task_set(first_scores, second_scores)
    a, b = task_rows(first_scores), task_rows(second_scores)
    tasks = [task for task in TURN_TASKS if task in a and task in b]
    if not tasks:
        raise PairedRunsError(f"{first} and {second} share no turn-taking task ({', '.join(TURN_TASKS)})")
    report = {"first": str(first), "second": str(second), "late_s": late_s, "change_s": CHANGE_S, "tasks": {}}
    for task in tasks:
        report["tasks"][task] = {
            "first": asdict(run_figures(list(a[task].values()), task, late_s)),
            "second": asdict(run_figures(list(b[task].values()), task, late_s)),
            "paired": asdict(paired_figures(a[task], b[task], task, late_s)),
        }
    recognition = recognition_figures(Path(first), Path(second))
    if recognition is not None:
        report["recognition"] = recognition
    return report


def recognition_figures(first: Path, second: Path) -> dict | None:
    """Each run's word errors over the smooth turn-taking examples both logged a transcript for;
    None where they share none."""
    a, b = example_word_errors(first), example_word_errors(second)
    both = sorted(a.keys() & b.keys())
    if not both:
        return None
    figures = {}
    for name, per_example in (("first", a), ("second", b)):
        errors = transcript_errors(per_example, both)
        figures[name] = {**asdict(errors), "word_error_rate": errors.word_error_rate}
    return figures


def _num(value, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _interval(ci) -> str:
    return "" if ci is None else f" [{ci[0]:.3f}, {ci[1]:.3f}]"


def format_comparison(report: dict) -> str:
    late = report["late_s"]
    lines = [f"first:  {report['first']}", f"second: {report['second']}",
             "(intervals: 95 % percentile bootstrap over examples; differences: second less first, paired)"]
    for task, figures in report["tasks"].items():
        lines.append(f"{task}:")
        for name in ("first", "second"):
            f = figures[name]
            line = f"  {name:6} TOR {_num(f['tor'])}{_interval(f['tor_ci95'])} of {f['examples']}"
            if task in LATENCY_TASKS:
                line += (f"; latency {_num(f['latency_s'])} s{_interval(f['latency_ci95'])}, later than {late:g} s "
                         f"{_num(f['late_share'])}{_interval(f['late_ci95'])} of {f['answers']}")
            lines.append(line)
        p = figures["paired"]
        line = f"  paired TOR {_num(p['tor_difference'])}{_interval(p['tor_ci95'])} over {p['pairs']}"
        if task in LATENCY_TASKS:
            line += (f"; latency {_num(p['latency_difference_s'])} s{_interval(p['latency_ci95'])}, later than "
                     f"{late:g} s {_num(p['late_difference'])}{_interval(p['late_ci95'])} over {p['latency_pairs']}")
            if p["latency_pairs"] < FEW_PAIRS:
                line += f" (under {FEW_PAIRS} pairs: the intervals are rough)"
            if p["difference_sd_s"] is not None:
                line += (f"; differences vary by {p['difference_sd_s']:.3f} s: a {report['change_s']:g} s change "
                         f"needs {p['examples_for_change']} examples")
        lines.append(line)
    if "recognition" in report:
        a, b = report["recognition"]["first"], report["recognition"]["second"]
        lines.append(f"recognition ({QUESTION_TASK}'s final transcripts against the questions, {a['calls']} calls): "
                     f"word error rate first {100 * a['word_error_rate']:.2f} % ({a['errors']} of {a['words']} words), "
                     f"second {100 * b['word_error_rate']:.2f} % ({b['errors']} of {b['words']})")
    return "\n".join(lines)
