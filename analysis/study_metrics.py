"""The numbers of the researcher views, one function per table (used by the dashboard, the
report and the tests alike). Inputs are the study's tables (`analysis.study`) and the cached
per-session / per-clip results (`analysis.study_sessions`); outputs are pandas DataFrames.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.agreement import human_evaluation_summary, per_annotator
from analysis.study import StudyData, finite
from analysis.study_sessions import instances_from_json
from judge.metrics import METRICS, summarize
from naturalness.pairs import PairEntry, PairResult, pairs_report
from naturalness.score import Scorer, dialogue_reference, reference_for
from naturalness.scorers import canonical_scorer
from turntaking.intervals import (
    cluster_bootstrap_interval,
    interval_label,
    mean_confidence_interval,
    proportion_interval,
    ratio_of_sums_interval,
)
from turntaking.floor_transfer import FTO_PERCENTILES
from turntaking.stats import COUNT_EVENTS, DURATION_EVENTS, corpus_statistics

# scipy.stats is imported where it is used: it takes about half a second, which most commands never need.

# -- corpus statistics per system (Talking Turns Fig. 2, Table 8) --------------------------------

MEASURES = ([(f"{e} /min", "per_minute", e) for e in COUNT_EVENTS]
            + [(f"{e} % of time", "percent", e) for e in DURATION_EVENTS]
            + [("words /min", "speaking_rate_wpm", None), ("backchannel words /min", "backchannel_rate_wpm", None)])


def measure_value(stats: dict, key: str, event: str | None):
    return stats.get(key) if event is None else stats[key].get(event)


def pooled_statistic_intervals(stats: list[dict]) -> dict:
    """95 % intervals of the pooled rates of `corpus_statistics(stats)` (events per minute, % of
    time, words per minute) by a bootstrap over the sessions: a session's events and minutes are
    drawn together, so an interval stays >= 0 events/min and within 0-100 % of time. None with
    fewer than two sessions."""
    minutes = [s["duration_s"] / 60.0 for s in stats]
    with_words = [s for s in stats if s.get("words") is not None]
    word_minutes = [s["duration_s"] / 60.0 for s in with_words]

    def interval(numerators, denominators):
        found = ratio_of_sums_interval(numerators, denominators)
        return None if found is None else list(found)

    return {
        "sessions": len(stats),
        "per_minute": {e: interval([s["counts"][e] for s in stats], minutes) for e in COUNT_EVENTS},
        "percent": {e: interval([100.0 * s["durations_s"][e] for s in stats], [s["duration_s"] for s in stats])
                    for e in DURATION_EVENTS},
        "speaking_rate_wpm": interval([s["words"] for s in with_words], word_minutes),
        "backchannel_rate_wpm": interval([s["backchannel_words"] for s in with_words], word_minutes),
    }


def system_statistics(data: StudyData, stats_by_session: dict[int, dict]) -> dict[str, dict]:
    """{system: corpus statistics pooled over its sessions, with "intervals_95" over them},
    systems without sessions left out."""
    out = {}
    for system in data.systems["system"]:
        ids = data.sessions.loc[data.sessions["system"] == system, "session_id"]
        own = [stats_by_session[int(i)] for i in ids if int(i) in stats_by_session]
        if own:
            out[system] = corpus_statistics(own, name=system) | {"intervals_95": pooled_statistic_intervals(own)}
    return out


def statistics_table(system_stats: dict[str, dict], references: dict[str, dict | None] | None) -> pd.DataFrame:
    """One row per measure: each reference ({label: table}; a None table: an empty column), then
    each system pooled with its 95 % interval over sessions, and its per-session mean and sd."""
    rows = []
    for label, key, event in MEASURES:
        row = {"measure": label} | {name: finite(measure_value(table, key, event)) if table else None
                                    for name, table in (references or {}).items()}
        for system, s in system_stats.items():
            spread = s["per_conversation"][key] if event is None else s["per_conversation"][key][event]
            low, high = measure_value(s["intervals_95"], key, event) or (None, None)
            row[system] = finite(measure_value(s, key, event))
            row[f"{system} ci low"], row[f"{system} ci high"] = finite(low), finite(high)
            row[f"{system} interval"] = interval_label(s["intervals_95"]["sessions"])
            row[f"{system} session mean"] = finite(spread["mean"])
            row[f"{system} session sd"] = finite(spread["std"])
        rows.append(row)
    return pd.DataFrame(rows)


def _fto_series(system_stats: dict[str, dict], references: dict[str, dict | None] | None) -> list[tuple[str, dict]]:
    """(series name, floor-transfer-offset distribution): the references first, then each system."""
    series = [(name, table["floor_transfer_offset"]) for name, table in (references or {}).items() if table]
    return series + [(system, s["floor_transfer_offset"]) for system, s in system_stats.items()]


def floor_transfer_table(system_stats: dict[str, dict], references: dict[str, dict | None] | None) -> pd.DataFrame:
    """Per series: how many floor transfers, their percentiles, mode and mean offset, in ms."""
    rows = []
    for name, fto in _fto_series(system_stats, references):
        ms = lambda v: None if v is None else round(1000 * v)  # noqa: E731
        rows.append({"series": name, "floor transfers": fto["n"],
                     **{f"p{p} ms": ms(fto["percentiles_s"][str(p)]) for p in FTO_PERCENTILES},
                     "mode ms": ms(fto["mode_s"]), "mean ms": ms(fto["mean_s"]),
                     "in overlap %": None if fto["n"] == 0 else round(100 * fto["overlapped_share"], 1)})
    return pd.DataFrame(rows)


def floor_transfer_histogram(system_stats: dict[str, dict], references: dict[str, dict | None] | None) -> pd.DataFrame:
    """Per series and 50 ms bin: the share of its floor transfers (%), bins given by their centre."""
    rows = []
    for name, fto in _fto_series(system_stats, references):
        hist = fto["histogram"]
        edges = hist["edges_s"]
        for i, count in enumerate(hist["counts"]):
            rows.append({"series": name, "offset_s": round((edges[i] + edges[i + 1]) / 2, 3), "count": count,
                         "percent": 100 * count / fto["n"] if fto["n"] else 0.0})
    return pd.DataFrame(rows, columns=["series", "offset_s", "count", "percent"])


def session_statistics_table(data: StudyData, stats_by_session: dict[int, dict]) -> pd.DataFrame:
    """Per session: every measure (the spread behind the per-system values)."""
    system_of = dict(zip(data.sessions["session_id"], data.sessions["system"]))
    rows = []
    for session_id, s in sorted(stats_by_session.items()):
        row = {"session_id": session_id, "system": system_of.get(session_id), "minutes": s["duration_s"] / 60}
        for label, key, event in MEASURES:
            row[label] = finite(measure_value(s, key, event))
        offsets = s["floor_transfer_offsets_s"]
        row["floor transfers"] = len(offsets)
        row["FTO median ms"] = round(1000 * float(np.median(offsets))) if offsets else None
        rows.append(row | measured_how(s))
    return pd.DataFrame(rows, columns=["session_id", "system", "minutes"] + [m[0] for m in MEASURES]
                        + ["floor transfers", "FTO median ms", *MEASURED_HOW])


# How a session's statistics were measured (turntaking.stats.conversation_statistics says so).
MEASURED_HOW = ("boundary correction onset ms", "boundary correction offset ms", "backchannels from")


def measured_how(stats: dict) -> dict:
    """A session's boundary correction in ms, the larger of its two channels' (0: its voice
    activity used as found, as for simulated sessions), and how its backchannels were told (None:
    cached before it was said).

    >>> measured_how({"boundary_correction": [{"onset_s": -0.034, "offset_s": 0.082}, {"onset_s": -0.041, "offset_s": 0.146}]})
    {'boundary correction onset ms': -41, 'boundary correction offset ms': 146, 'backchannels from': None}
    """
    found = stats.get("boundary_correction") or []
    channels = [found] if isinstance(found, dict) else found  # one for both, as cached before per channel
    onset = min((c["onset_s"] for c in channels), default=0.0)
    offset = max((c["offset_s"] for c in channels), default=0.0)
    return dict(zip(MEASURED_HOW, (round(1000 * onset), round(1000 * offset), stats.get("backchannels_from"))))


# -- judge metrics per system (Talking Turns Fig. 3, Table 2, Fig. 4) -----------------------------


def system_judge_summaries(data: StudyData, judge_results: dict[int, dict], thresholds) -> dict[str, dict]:
    """{system: judge.metrics.summarize report} over the system's sessions."""

    out = {}
    for system in data.systems["system"]:
        ids = [int(i) for i in data.sessions.loc[data.sessions["system"] == system, "session_id"]]
        own = [judge_results[i] for i in ids if i in judge_results]
        if not own:
            continue
        confusion = np.sum([np.asarray(r["confusion"], dtype=np.int64) for r in own], axis=0)
        out[system] = summarize([instances_from_json(r["instances"], thresholds) for r in own], thresholds.metrics,
                                confusion)
    return out


def agreement_table(summaries: dict[str, dict], reference: dict | None = None) -> pd.DataFrame:
    """Agreement of each decision with the judge, pooled over its instances (a count), with a 95 %
    interval by a bootstrap over sessions (conversations for the human reference; `interval`
    says over how many, or why there is none), and the per-session mean with its bootstrap
    interval; the human reference first when there is one."""
    series = ({"human reference": reference} if reference else {}) | summaries
    rows = []
    for name, report in series.items():
        for metric, m in report["metrics"].items():
            for decision, a in m["agreement"].items():
                # A reference cached before the intervals over conversations has only intervals
                # over instances and normal ones that leave [0, 100]: none of them is shown.
                fresh = "ci_unit" in a
                low, high = (a["ci_95_percent"] if fresh else None) or (None, None)
                s_low, s_high = (a["session_ci_95"] if fresh else None) or (None, None)
                rows.append({
                    "series": name, "metric": metric, "decision": decision, "instances": a["n"],
                    "agree": a["agree"], "agreement_percent": finite(a["percent"]),
                    "ci_low_percent": finite(low), "ci_high_percent": finite(high),
                    "interval": a.get("ci_unit", "n/a: cached before intervals over conversations"),
                    "sessions": a["sessions"], "session_mean_percent": finite(a["session_mean_percent"]),
                    "session_ci_low_percent": finite(s_low), "session_ci_high_percent": finite(s_high),
                })
    return pd.DataFrame(rows, columns=["series", "metric", "decision", "instances", "agree", "agreement_percent",
                                       "ci_low_percent", "ci_high_percent", "interval", "sessions",
                                       "session_mean_percent", "session_ci_low_percent", "session_ci_high_percent"])


def decision_table(summaries: dict[str, dict], reference: dict | None = None) -> pd.DataFrame:
    """Table 2: per series and metric, the % of instances where the positive decision was made."""

    series = ({"human reference": reference} if reference else {}) | summaries
    rows = []
    for name, report in series.items():
        row = {"series": name}
        for spec in METRICS:
            m = report["metrics"][spec.name]
            row[f"{spec.name}: {spec.decisions[0]} %"] = finite(m["decisions"][spec.decisions[0]]["percent"])
            row[f"{spec.name}: instances"] = m["instances"]
        rows.append(row)
    return pd.DataFrame(rows)


def user_interruption_table(data: StudyData, stats_by_session: dict[int, dict]) -> pd.DataFrame:
    """Table 2's bracket: per system, the user's interruptions of the system and the % of them that
    took the floor (counted on the user's channel of each session's statistics)."""
    rows = []
    for system, group in data.sessions.groupby("system", sort=False):
        interruptions = floor_taking = 0
        for row in group.itertuples():
            stats = stats_by_session.get(int(row.session_id))
            if stats is None:
                continue
            user = 1 - (int(row.system_channel) if pd.notna(row.system_channel) else 1)
            counts = list(stats["speakers"].values())[user]["counts"]
            interruptions += counts["interruption"]
            floor_taking += counts["floor_taking"]
        rows.append({"system": system, "user_interruptions": interruptions,
                     "floor_taking_percent": finite(100 * floor_taking / interruptions) if interruptions else None})
    return pd.DataFrame(rows, columns=["system", "user_interruptions", "floor_taking_percent"])


def confusion_table(summaries: dict[str, dict]) -> pd.DataFrame:
    """Fig. 4: per system, % of its decisions by judge label (L^gen) and label made (L^dialogue)."""
    rows = []
    for system, report in summaries.items():
        conf = report.get("confusion")
        if not conf:
            continue
        for i, judge_label in enumerate(conf["labels"]):
            for j, made in enumerate(conf["labels"]):
                rows.append({"system": system, "judge_label": judge_label, "decision_made": made,
                             "count": conf["counts"][i][j], "percent": conf["percent"][i][j]})
    return pd.DataFrame(rows, columns=["system", "judge_label", "decision_made", "count", "percent"])


# -- naturalness scorers, and TurnNat's pair measures (its Table III's columns) on the study's pairs --
# The paper's Table III reports its own scorers; the numbers here are this platform's scorers on
# this study's pairs, measured the same way (pair accuracy, C-index, mean score difference).


def naturalness_table(data: StudyData, scores: dict[int, dict], scorer: str = "") -> pd.DataFrame:
    """Per session: naturalness (= minus the scorer's score, a likelihood or a cost as its units
    say) by one scorer (naturalness.scorers); with a scorer that finds it (timing-hazard), also
    where the session's least likely 6 s begin (the moment to listen to first). A score stored
    under a scorer's old name is listed under its current one."""
    rows = []
    for row in data.sessions.itertuples():
        s = scores.get(int(row.session_id))
        if not s or "naturalness" not in s:
            continue
        rows.append({"session_id": int(row.session_id), "system": row.system, "participant": row.participant,
                     "scorer": canonical_scorer(s.get("scorer", scorer)), "naturalness": s["naturalness"],
                     "duration_s": s.get("duration_s"), "least_natural_6s_start_s": s.get("peak_start_s"),
                     # a scorer that reads words says whether the session had any (word_cues None: none)
                     "with_words": s.get("word_cues") is not None})
    # naturalness only: the scorer's score is the same number with the sign flipped
    return pd.DataFrame(rows, columns=["session_id", "system", "participant", "scorer", "naturalness",
                                       "duration_s", "least_natural_6s_start_s", "with_words"])


def naturalness_reference_row(sessions: pd.DataFrame, scorer: Scorer) -> dict | None:
    """Human-human conversation (Switchboard validation) cut to about the sessions' median length
    and scored the same way, as a row of `naturalness_per_system`: the entry of the sessions'
    scorer's reference (naturalness.score.dialogue_reference: with words where most sessions were
    scored with words, else on voice activity alone); None when it has none."""
    durations = sessions["duration_s"].dropna() if len(sessions) else pd.Series([], dtype=float)
    with_words = bool(len(sessions)) and bool(sessions["with_words"].mean() >= 0.5)
    found = reference_for(dialogue_reference(scorer, with_words), float(durations.median())) if len(durations) else None
    if found is None:
        return None
    length, ref = found
    if ref.get("ci95"):  # by a bootstrap over the conversations the windows were cut from
        low, high = ref["ci95"]
    else:  # a reference recorded before that: a normal interval over windows
        half = 1.96 * ref["sd"] / np.sqrt(ref["windows"])
        low, high = ref["mean"] - half, ref["mean"] + half
    return {"system": f"Switchboard human-human ({length} s windows{', with words' if with_words else ''})",
            "sessions": ref["windows"], "mean_naturalness": ref["mean"], "ci_low": low, "ci_high": high}


def naturalness_per_system(table: pd.DataFrame) -> pd.DataFrame:
    """Per system: mean session naturalness with a normal 95 % interval."""
    rows = []
    for system, group in table.groupby("system", sort=False):
        mean, low, high = mean_confidence_interval(group["naturalness"])
        rows.append({"system": system, "sessions": int(len(group)), "mean_naturalness": finite(mean),
                     "ci_low": finite(low), "ci_high": finite(high)})
    return pd.DataFrame(rows, columns=["system", "sessions", "mean_naturalness", "ci_low", "ci_high"])


def formal_pairs(data: StudyData) -> pd.DataFrame:
    return data.pairs[data.pairs["trial"] == "formal"]


@dataclass(frozen=True)
class StoredScore:
    """A cached clip score as `naturalness.pairs` reads it."""

    dialog_nll: float


def benchmark_validation(data: StudyData, clip_scores: dict[int, dict]) -> tuple[pd.DataFrame, dict]:
    """The study's perturbation benchmark measured as TurnNat's Table III is (by this platform's
    scorer, not the paper's): overall and per type, mean score difference (perturbed - natural
    score = natural - perturbed naturalness), C-index and pairwise accuracy, each with a 95 %
    interval by a bootstrap over the source conversations the pairs were cut from
    (naturalness.pairs; `interval` says over how many)."""
    from pathlib import Path

    def score(clip_id):
        s = clip_scores.get(int(clip_id))
        if not s or "dialog_nll" not in s:
            return None
        return StoredScore(s["dialog_nll"])

    results = []
    for p in formal_pairs(data).itertuples():
        nat, pert = score(p.natural_clip_id), score(p.perturbed_clip_id)
        if nat is not None and pert is not None:
            entry = PairEntry(p.pair_id, p.type, Path(f"clip-{p.natural_clip_id}"), Path(f"clip-{p.perturbed_clip_id}"),
                              str(p.source) if isinstance(p.source, str) else None)
            results.append(PairResult(entry, nat, pert))
    if not results:
        return pd.DataFrame(columns=VALIDATION_COLUMNS), {}
    report = pairs_report(results)
    rows = [_validation_row("all", report)]
    rows += [_validation_row(t, s) for t, s in report["per_type"].items()]
    return pd.DataFrame(rows, columns=VALIDATION_COLUMNS), report


# mean_score_difference: a DeltaNLL only where the scorer's score is a likelihood (its units say).
VALIDATION_COLUMNS = ["type", "pairs", "sources", "interval", "mean_score_difference", "difference_ci_low",
                      "difference_ci_high",
                      "c_index", "c_index_ci_low", "c_index_ci_high", "pair_accuracy", "accuracy_ci_low",
                      "accuracy_ci_high"]


def _validation_row(name: str, summary: dict) -> dict:
    acc, c = summary["pair_accuracy"], summary["c_index"]
    low, high = summary["mean_delta_nll_interval_95"] or (None, None)
    a_low, a_high = acc["interval_95"] or (None, None)
    c_low, c_high = c["interval_95"] or (None, None)
    return {"type": name, "pairs": summary["pairs"], "sources": summary["sources"], "interval": summary["interval"],
            "mean_score_difference": finite(summary["mean_delta_nll"]), "difference_ci_low": finite(low),
            "difference_ci_high": finite(high), "c_index": finite(c["value"]), "c_index_ci_low": finite(c_low),
            "c_index_ci_high": finite(c_high), "pair_accuracy": finite(acc["value"]),
            "accuracy_ci_low": finite(a_low), "accuracy_ci_high": finite(a_high)}


# -- human evaluation (TurnNat Table II) ---------------------------------------------------------


def annotator_table(data: StudyData) -> pd.DataFrame:
    """Per annotator: agreement with the others' majority, ratings against the own choice,
    median time per trial, attention failures (`analysis.agreement.per_annotator`)."""
    if data.judgments.empty:
        return pd.DataFrame(columns=["annotator", "trials", "formal_trials", "agreement_with_others_majority",
                                     "compared_with_others", "others_tied", "ratings_contradict_choice",
                                     "median_trial_s", "attention_checks", "attention_failures"])
    return per_annotator(data.judgments)


def suggested_exclusions(annotators: pd.DataFrame, min_agreement: float = 0.5, max_contradictions: float = 0.25,
                         max_attention_failures: int = 0, min_judgments: int = 5) -> list[str]:
    """Annotators who failed more attention checks than allowed, agree with the others' majority
    less often than `min_agreement` (chance for a two-way choice), or rate the clip they chose as
    less natural than the other in more than `max_contradictions` of their formal judgments; the
    two shares count only over `min_judgments` judgments or more (one unlucky pair says little).

    Measured on simulated studies (`analysis.annotator_simulation`: 20 careful annotators, 5
    coin-flippers, K = 3, 20 trials, 50 seeds): flags 91.6 % of the coin-flippers and 1.2 % of
    the careful; the earlier rule (agreement with a majority that counted the own vote < 0.5)
    flagged 3.2 % and 0 % (`analysis.annotator_simulation.exclusion_rates`; the script that printed
    the table is benchmarks/annotator_exclusion.py at commit 1c21ce0). Agreement alone cannot do
    both with 20 trials at K = 3 (see there)."""
    enough_compared = annotators["compared_with_others"] >= min_judgments
    enough_rated = annotators["formal_trials"] >= min_judgments
    careless = annotators[(annotators["attention_failures"] > max_attention_failures)
                          | (enough_compared & (annotators["agreement_with_others_majority"] < min_agreement))
                          | (enough_rated & (annotators["ratings_contradict_choice"] > max_contradictions))]
    return sorted(careless["annotator"].astype(str))


def human_summary(data: StudyData, exclude=()) -> dict:
    return human_evaluation_summary(data.judgments, exclude_annotators=list(exclude))


def table_two(summary: dict) -> pd.DataFrame:
    """Table II: statistic, value and 95 % interval (None where the statistic has none)."""
    if not summary.get("judgments"):
        return pd.DataFrame(columns=["statistic", "value", "ci_low", "ci_high"])
    pref, diff = summary["natural_preference"], summary["mean_rating_difference"]
    others = summary["others_majority_agreement"]
    rows = [("annotators", summary["annotators"], None, None), ("formal pairs", summary["pairs"], None, None),
            ("formal judgments", summary["judgments"], None, None),
            ("annotations per pair", summary["judgments"] / summary["pairs"], None, None),
            ("natural preference rate", pref["rate"], pref["ci_low"], pref["ci_high"]),
            ("mean rating difference (natural - perturbed)", diff["mean"], diff["ci_low"], diff["ci_high"]),
            ("agreement with the others' majority (own vote left out)", others["agreement"], None, None),
            ("judgments compared with the others' majority", others["compared"], None, None),
            ("judgments whose others tied", others["ties"], None, None),
            ("Krippendorff alpha, forced choice (nominal, unit = pair)", summary["alpha_forced_choice"], None, None),
            ("Krippendorff alpha, rating difference natural - perturbed (interval, unit = pair)",
             summary["alpha_rating_difference"], None, None),
            ("Krippendorff alpha, pooled 1-5 ratings of natural and perturbed clips (ordinal)",
             summary["alpha_pooled_ratings_natural_and_perturbed"], None, None)]
    art = summary.get("artifact")
    if art:
        d = art["difference"]
        rows += [("artifact rating natural", art["natural_mean"], None, None),
                 ("artifact rating perturbed", art["perturbed_mean"], None, None),
                 ("artifact difference (perturbed - natural)", d["mean"], d["ci_low"], d["ci_high"])]
    return pd.DataFrame([(n, finite(v), finite(lo), finite(hi)) for n, v, lo, hi in rows],
                        columns=["statistic", "value", "ci_low", "ci_high"])


def per_type_table(summary: dict) -> pd.DataFrame:
    rows = []
    for kind, s in summary.get("per_type", {}).items():
        pref, diff = s["natural_preference"], s["mean_rating_difference"]
        rows.append({"type": kind, "pairs": s["pairs"], "judgments": s["judgments"],
                     "natural_preference": finite(pref["rate"]), "ci_low": finite(pref["ci_low"]),
                     "ci_high": finite(pref["ci_high"]), "mean_rating_difference": finite(diff["mean"]),
                     "agreement_with_others_majority": finite(s["others_majority_agreement"]["agreement"]),
                     "alpha_forced_choice": finite(s["alpha_forced_choice"]),
                     "alpha_rating_difference": finite(s["alpha_rating_difference"]),
                     "alpha_pooled_ratings_natural_and_perturbed": finite(s["alpha_pooled_ratings_natural_and_perturbed"])})
    return pd.DataFrame(rows, columns=["type", "pairs", "judgments", "natural_preference", "ci_low", "ci_high",
                                       "mean_rating_difference", "agreement_with_others_majority", "alpha_forced_choice",
                                       "alpha_rating_difference", "alpha_pooled_ratings_natural_and_perturbed"])


def exclusion_effect(everyone: dict, kept: dict) -> pd.DataFrame:
    """Table II with everyone and with some annotators excluded (two `human_summary` results)."""
    frame = pd.DataFrame({"all annotators": table_two(everyone).set_index("statistic")["value"],
                          "after exclusion": table_two(kept).set_index("statistic")["value"]})
    return frame.rename_axis("statistic").reset_index()


# -- the naturalness scorer against people -------------------------------------------------------


def pair_preferences(data: StudyData, clip_scores: dict[int, dict]) -> pd.DataFrame:
    """Per formal pair: people's votes and majority, the scorer's score difference (perturbed -
    natural score) and whether the scorer prefers the clip the majority preferred (None on a tie
    on either side)."""
    formal = data.judgments[data.judgments["trial"] == "formal"]
    votes = formal.groupby("clip_pair_id")["choice"].agg(lambda c: int((c == "natural").sum()))
    totals = formal.groupby("clip_pair_id").size()
    rows = []
    for p in formal_pairs(data).itertuples():
        n = int(totals.get(p.clip_pair_id, 0))
        if n == 0:
            continue
        nat_votes = int(votes.get(p.clip_pair_id, 0))
        majority = "natural" if 2 * nat_votes > n else "perturbed" if 2 * nat_votes < n else "tie"
        nat, pert = clip_scores.get(int(p.natural_clip_id)), clip_scores.get(int(p.perturbed_clip_id))
        delta = (pert["dialog_nll"] - nat["dialog_nll"]) if nat and pert and "dialog_nll" in nat and "dialog_nll" in pert else None
        metric = None if delta is None else "natural" if delta > 0 else "perturbed" if delta < 0 else "tie"
        agrees = None if metric in (None, "tie") or majority == "tie" else metric == majority
        rows.append({"pair_id": p.pair_id, "type": p.type, "judgments": n, "natural_votes": nat_votes,
                     "majority": majority, "score_difference": finite(delta), "scorer_prefers": metric,
                     "agrees_with_people": agrees, "source": p.source if isinstance(p.source, str) else None})
    return pd.DataFrame(rows, columns=["pair_id", "type", "judgments", "natural_votes", "majority", "score_difference",
                                       "scorer_prefers", "agrees_with_people", "source"])


def metric_people_agreement(pairs: pd.DataFrame) -> dict:
    """Share of pairs (both sides decided) where the scorer prefers the clip people preferred, with
    a 95 % interval by a bootstrap over the source conversations the pairs were cut from (over
    pairs where none is known: a pair without a source is its own cluster)."""
    decided = pairs.dropna(subset=["agrees_with_people"]) if len(pairs) else pairs
    n = int(len(decided))
    sourced = bool(n) and decided["source"].notna().any()
    interval, clusters, k = None, 0, 0
    if n:
        agrees = decided["agrees_with_people"].astype(bool)
        cluster = decided["source"].fillna("pair " + decided["pair_id"].astype(str)) if sourced else decided["pair_id"]
        per_cluster = agrees.groupby(cluster.to_numpy()).agg(["sum", "count"])
        interval = proportion_interval(per_cluster["sum"], per_cluster["count"])
        clusters, k = len(per_cluster), int(agrees.sum())
    low, high = interval or (None, None)
    return {"pairs": n, "agree": k, "rate": finite(k / n) if n else None, "ci_low": finite(low), "ci_high": finite(high),
            "agreement_interval": interval_label(clusters, "source conversations" if sourced else "pairs")}


def clip_ratings(data: StudyData, clip_scores: dict[int, dict]) -> pd.DataFrame:
    """Per clip of the formal pairs: mean naturalness rating by people and the scorer's naturalness."""
    formal = data.judgments[data.judgments["trial"] == "formal"]
    pairs = formal_pairs(data).set_index("clip_pair_id")
    rows = []
    for side in ("natural", "perturbed"):
        ratings = formal.groupby("clip_pair_id")[f"rating_{side}"].agg(["mean", "count"])
        for pair_id, r in ratings.iterrows():
            if pair_id not in pairs.index or r["count"] == 0:
                continue
            clip_id = int(pairs.loc[pair_id, f"{side}_clip_id"])
            s = clip_scores.get(clip_id)
            rows.append({"clip_id": clip_id, "pair_id": pairs.loc[pair_id, "pair_id"], "side": side,
                         "mean_rating": float(r["mean"]), "ratings": int(r["count"]),
                         "naturalness": finite(s.get("naturalness")) if s else None})
    return pd.DataFrame(rows, columns=["clip_id", "pair_id", "side", "mean_rating", "ratings", "naturalness"])


def rating_correlation(clips: pd.DataFrame) -> dict:
    """Pearson and Spearman correlation of the scorer's naturalness with people's mean ratings
    over clips, each with a 95 % interval by a bootstrap over pairs: a pair's natural and
    perturbed clip are drawn together (they share their conversation, so they are not two
    independent observations). No p-value over clips: it would count each pair twice."""
    from scipy import stats as scipy_stats
    both = clips.dropna(subset=["naturalness", "mean_rating"]) if len(clips) else clips
    n = int(len(both))
    pairs = int(both["pair_id"].nunique()) if n else 0
    out = {"clips": n, "pairs": pairs, "interval": interval_label(pairs, "pairs"), "pearson_r": None,
           "pearson_ci_low": None, "pearson_ci_high": None, "spearman_rho": None, "spearman_ci_low": None,
           "spearman_ci_high": None}
    if n < 3 or both["naturalness"].nunique() < 2 or both["mean_rating"].nunique() < 2:
        return out
    x, y = both["naturalness"].to_numpy(float), both["mean_rating"].to_numpy(float)
    pair_of_clip = pd.factorize(both["pair_id"])[0]
    for name, correlate in (("pearson", lambda a, b: scipy_stats.pearsonr(a, b).statistic),
                            ("spearman", lambda a, b: scipy_stats.spearmanr(a, b).statistic)):
        out[f"{name}_r" if name == "pearson" else "spearman_rho"] = finite(correlate(x, y))

        def resampled(weights, correlate=correlate):  # (..., pairs): how often each pair is drawn
            rows = weights.reshape(-1, weights.shape[-1])
            values = []
            for w in rows:
                reps = w[pair_of_clip]
                xs, ys = np.repeat(x, reps), np.repeat(y, reps)
                values.append(np.nan if np.ptp(xs) == 0 or np.ptp(ys) == 0 else correlate(xs, ys))
            return np.asarray(values).reshape(weights.shape[:-1])

        interval = cluster_bootstrap_interval(resampled, pairs)
        out[f"{name}_ci_low"], out[f"{name}_ci_high"] = interval or (None, None)
    return out
