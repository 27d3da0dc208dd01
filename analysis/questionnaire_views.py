"""The tables, figures and notes of the two questionnaire views (analysis.views draws them):
what participants answered per system, and which automatic measure tracks what they felt.

Each function fills a view (analysis.views.View: notes, tables, figures, headline) from the
study's answers (analysis.questionnaire_answers) and the per-session measures read from the
cache; the statistics are analysis.questionnaire_stats and analysis.measure_tracking.
"""

from __future__ import annotations

import pandas as pd

from analysis import questionnaire_figures as figures
from analysis.questionnaire_answers import StudyAnswers
from analysis.questionnaire_stats import (
    MIN_PARTICIPANTS,
    bradley_terry,
    item_summaries,
    order_effect_test,
    order_effects,
    within_participant_test,
)

NO_ANSWERS = "No questionnaire answers yet."
PENDING = ("The tests, the ranking and the measures' correlations of the latest answers are being computed in "
           "the background; they appear here when they are ready.")
ITEM_COLUMNS = ["item", "reverse_keyed", "system", "participants", "answers", "median", "median_ci_low",
                "median_ci_high", "answer_counts"]
TEST_COLUMNS = ["item", "factor", "compared", "test", "participants", "statistic", "p", "effect_size",
                "effect_size_name", "post_hoc_pairs", "no_test_because"]
RANKING_COLUMNS = ["system", "strength", "ci_low", "ci_high", "rankings", "p_preferred_over_next"]
ORDER_COLUMNS = ["item", "position", "participants", "median", "median_ci_low", "median_ci_high"]
CORRELATION_COLUMNS = ["measure", "item", "reverse_keyed", "rho", "ci_low", "ci_high", "corrected_ci_low",
                       "corrected_ci_high", "p_corrected", "distinguishable", "sessions", "participants", "reading"]


# the columns that hold a number that may be missing (the others: labels, flags and counts)
NUMBER_COLUMNS = {"median", "median_ci_low", "median_ci_high", "statistic", "p", "effect_size", "strength", "ci_low",
                  "ci_high", "p_preferred_over_next", "rho", "corrected_ci_low", "corrected_ci_high", "p_corrected"}


# the text columns that may say nothing: "–" then, as the report writes a missing value
OPTIONAL_TEXT_COLUMNS = {"test", "effect_size_name", "post_hoc_pairs", "no_test_because"}
NOTHING = "–"


def _typed(table: pd.DataFrame) -> pd.DataFrame:
    """Number columns as floats (a missing number NaN, not None) and "–" for a text that says
    nothing, so that a table reads back alike from the report's CSV and Parquet."""
    for column in table.columns:
        if column in NUMBER_COLUMNS:
            table[column] = pd.to_numeric(table[column], errors="coerce").astype(float)
        elif column in OPTIONAL_TEXT_COLUMNS:
            table[column] = [value if isinstance(value, str) and value else NOTHING for value in table[column]]
    return table


def item_label(item, reverse_keyed: bool) -> str:
    """An item as a figure names it: a reverse-keyed one says that higher is worse."""
    return f"{item} (higher = worse)" if reverse_keyed else str(item)


def items_table(answers: StudyAnswers) -> pd.DataFrame:
    """Per scale item and system: participants, answers, median with its interval, answer counts."""
    rows = []
    for item in answers.scale_items:
        for s in item_summaries(list(answers.ratings), item.id):
            rows.append({"item": item.id, "reverse_keyed": item.reverse_keyed, "system": s.system,
                         "participants": s.n_participants, "answers": sum(s.counts.values()), "median": s.median,
                         "median_ci_low": s.median_low, "median_ci_high": s.median_high,
                         "answer_counts": ", ".join(f"{k}: {v}" for k, v in s.counts.items()),
                         "counts": s.counts, "points": item.points})
    table = _typed(pd.DataFrame(rows, columns=ITEM_COLUMNS))
    return table.assign(counts=[r["counts"] for r in rows], points=[r["points"] for r in rows])


def _post_hoc(test) -> str:
    return "; ".join(f"{p.first} vs {p.second}: median difference {p.median_difference:+.2g}"
                     + ("" if p.p_holm is None else f", r {p.rank_biserial:+.2f}, p (Holm) {p.p_holm:.3g}")
                     for p in test.pairs)


def _test_row(test, factor: str) -> dict:
    return {"item": test.item, "factor": factor, "compared": ", ".join(map(str, test.compared)), "test": test.test,
            "participants": test.n_participants, "statistic": test.statistic, "p": test.p_value,
            "effect_size": test.effect_size, "effect_size_name": test.effect_size_name,
            "post_hoc_pairs": _post_hoc(test), "no_test_because": test.reason}


def tests_table(answers: StudyAnswers) -> pd.DataFrame:
    """Per scale item: do the systems differ within participants, and does the call's position?"""
    ratings = list(answers.ratings)
    rows = []
    for item in answers.scale_items:
        rows.append(_test_row(within_participant_test(ratings, item.id), "system"))
        rows.append(_test_row(order_effect_test(ratings, item.id), "call position"))
    return pd.DataFrame(rows, columns=TEST_COLUMNS)


def order_table(answers: StudyAnswers) -> pd.DataFrame:
    ratings = list(answers.ratings)
    rows = [{"item": item.id, "position": p.position, "participants": p.n_participants, "median": p.median,
             "median_ci_low": p.median_low, "median_ci_high": p.median_high}
            for item in answers.scale_items for p in order_effects(ratings, item.id)]
    return _typed(pd.DataFrame(rows, columns=ORDER_COLUMNS))


def ranking_table(answers: StudyAnswers, systems: list[str]) -> pd.DataFrame:
    """Bradley-Terry log-strengths from the rank and pick answers; empty when none compares two systems."""
    rankings = list(answers.rankings) + list(answers.picks)
    try:
        found = bradley_terry(rankings, systems) if rankings else []
    except ValueError:  # no ranking compares two systems
        found = []
    return pd.DataFrame([{"system": s.system, "strength": s.strength, "ci_low": s.low, "ci_high": s.high,
                          "rankings": s.n_rankings, "p_preferred_over_next": s.p_over_next} for s in found],
                        columns=RANKING_COLUMNS)


def fill_questionnaire_view(view, answers: StudyAnswers, statistics: dict | None) -> None:
    """The "Questionnaire" view: each item per system, the tests, the ranking, order effects,
    the choices and the comments. `statistics`: the cached tests and ranking
    (analysis.questionnaire_results), None while they are computed."""
    if not answers.participants:
        view.notes.append(NO_ANSWERS)
        return
    items = items_table(answers)
    ranking = _typed(pd.DataFrame((statistics or {}).get("ranking") or [], columns=RANKING_COLUMNS))
    order = order_table(answers)
    view.tables = {"items": items[ITEM_COLUMNS],
                   "tests": _typed(pd.DataFrame((statistics or {}).get("tests") or [], columns=TEST_COLUMNS)),
                   "ranking": ranking, "order_effects": order, "choices": answers.choices, "comments": answers.texts}
    if len(items):
        items["item_label"] = [item_label(r.item, r.reverse_keyed) for r in items.itertuples()]
        view.figures = {"answers": figures.answers_figure(items), "medians": figures.medians_figure(items)}
    if len(ranking):
        view.figures["ranking"] = figures.ranking_figure(ranking)
    if len(order):
        view.figures["order_effects"] = figures.order_figure(order)
    demo = f", {answers.demo_participants} of them demo data (demo-...)" if answers.demo_participants else ""
    view.notes.append(f"{answers.participants} participant(s) answered{demo}; {len(answers.ratings)} scale "
                      f"answers, {len(answers.rankings)} ranking(s), {len(answers.picks)} pick(s), "
                      f"{len(answers.texts)} comment(s).")
    view.notes.append(
        "The participant is the unit: a participant's answers for one system are averaged, medians have 95 % "
        "bootstrap intervals over participants, and tests compare the systems within participants (Wilcoxon "
        "signed-rank for two, Friedman for more, with pairwise Wilcoxon and Holm's correction; effect size the "
        "rank-biserial r or Kendall's W). No test below "
        f"{MIN_PARTICIPANTS} participants who answered for every system. On a reverse-keyed item (higher = "
        "worse) a higher median is worse. Ranking: Bradley-Terry (Plackett-Luce) log-strengths from the rank "
        "answers (a pick counts as preferred over every other system), 95 % intervals by resampling "
        "participants. Order effects: answers by the call's position among the participant's calls.")
    if statistics is None:
        view.notes.append(PENDING)
    elif not len(ranking):
        view.notes.append("No ranking yet: no participant ranked or picked among two systems or more.")
    view.headline = {"participants": answers.participants, "demo_participants": answers.demo_participants,
                     "scale_answers": len(answers.ratings),
                     "medians": {f"{r.item} / {r.system}": r.median for r in items.itertuples()},
                     "ranking": list(ranking["system"])}


def correlations_table(result) -> pd.DataFrame:
    return pd.DataFrame([{"measure": r.measure, "item": r.item, "reverse_keyed": r.reverse_keyed, "rho": r.rho,
                          "ci_low": r.low, "ci_high": r.high, "corrected_ci_low": r.corrected_low,
                          "corrected_ci_high": r.corrected_high, "p_corrected": r.p_corrected,
                          "distinguishable": r.distinguishable, "sessions": r.n_sessions,
                          "participants": r.n_participants, "reading": r.reading} for r in result.rows],
                        columns=CORRELATION_COLUMNS)


def fill_tracking_view(view, answers: StudyAnswers, measures: dict[int, dict], statistics: dict | None) -> None:
    """"What people felt vs the measures": every automatic measure against every scale item, from
    the cached correlations (`statistics`, None while they are computed)."""
    if not answers.ratings:
        view.notes.append(NO_ANSWERS)
        return
    if not measures:
        view.notes.append("No analysable session with its measures computed yet.")
        return
    if statistics is None or statistics.get("tracking") is None:
        view.notes.append(PENDING)
        return
    result = statistics["tracking"]
    table = _typed(pd.DataFrame(result["correlations"], columns=CORRELATION_COLUMNS))
    view.tables = {"correlations": table}
    if len(table):
        table = table.assign(item_label=[item_label(r.item, r.reverse_keyed) for r in table.itertuples()])
        view.figures = {"correlations": figures.correlation_figure(table)}
    view.notes.append(f"**{result['verdict']}**")
    view.notes.append(f"Spearman's rho over sessions of each automatic measure (rows) with each item's answer "
                      f"(columns). Correction: {result['correction']} ({result['n_boot']} resamples); * marks "
                      "the pairs that are distinguishable from none by it. A session's "
                      "measures are read from the cache: timing from its statistics, the judge's agreement per "
                      "metric, the default naturalness scorer, and its system's examiner row (the same for "
                      "every session of a system, so it tells systems apart, not calls).")
    view.headline = {"sessions": result["sessions"], "participants": result["participants"],
                     "verdict": result["verdict"],
                     "distinguishable": [f"{r.measure} / {r.item}" for r in table.itertuples() if r.distinguishable]}
