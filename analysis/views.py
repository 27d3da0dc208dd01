"""The researcher views of one study: each a `View` of notes, tables, figures and headline numbers.

The dashboard shows them, the report writes them; neither computes anything itself.

    analysis = StudyAnalysis(engine, "demo", data_root)     # loads the study once
    view = statistics_view(analysis)                          # tables, figures, headline
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import pandas as pd
import plotly.graph_objects as go

from analysis import study_figures as figures
from analysis import study_metrics as metrics
from analysis.data_rights import erasure_note, retention_note
from analysis.examiner_figures import example_timeline_figure
from analysis.examiner_results import (
    STUDY_SIDE_NOTE,
    beside_study,
    example_label,
    examiner_table,
    examples_table,
    interruption_judge_note,
    published_table,
    stored_example,
)
from analysis.link_checks import annotation_notes
from analysis.questionnaire_answers import StudyAnswers, load_answers, session_measures
from analysis.questionnaire_results import questionnaire_statistics
from analysis.questionnaire_views import fill_questionnaire_view, fill_tracking_view
from analysis.references import REFERENCE_FILES, reference_notes, sessions_measurement_note, switchboard_references
from analysis.session_replies import stored_reply_table
from analysis.session_transcript import stored_transcript, transcript_table
from analysis.study import (
    analysable_session_ids,
    annotation_progress,
    annotator_completion,
    connection_check_failures,
    could_not_connect,
    demo_note,
    excluded_sessions,
    load_study,
    overview_headline,
    sessions_per_system,
    unanswered_calls,
)
from analysis.study_sessions import (
    JudgeUnavailable,
    Progress,
    activity_failures,
    clip_naturalness,
    clips_left_to_score,
    decide_quality,
    judge_description,
    judge_reference,
    load_study_judge,
    recording_statistics,
    session_activity,
    session_conversations,
    session_judge_details,
    session_judge_results,
    session_naturalness,
    session_statistics,
    sessions_not_excluded,
    sessions_without_activity,
    study_scorers,
)
from examiner.progress import read_progress
from judge.labels import LABEL_MEANINGS
from naturalness.scorers import DEFAULT_SCORER, SCORERS
from speech.audio import load_audio
from storage.files import resolve, verify
from studies.call_quality import NO_SYSTEM_ANSWER, SERVER_BEHIND
from studies.network_figures import network_series, read_network
from studies.sessions import network_relpath


@dataclass
class View:
    key: str
    title: str
    notes: list[str] = field(default_factory=list)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    figures: dict[str, go.Figure] = field(default_factory=dict)
    headline: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ViewSpec:
    """One researcher view, as `VIEWS` (at the end of this module) lists it. Its figure and table
    names are fixed, so that a page can lay them out in advance; `function(analysis)` fills them."""

    key: str
    title: str  # the dashboard's tab, the report's heading
    figures: tuple[str, ...]
    tables: tuple[str, ...]
    function: Callable[[StudyAnalysis], View]
    # the notes of calls the system did not answer, sessions left out and recordings not analysed
    quality_notes: bool = False


class StudyAnalysis:
    """One study's data and its per-session results, each loaded (or computed and cached) once.

    `compute=False` (the web views, analysis.background fills the cache): only what is cached is
    read, nothing slow runs, and `pending` counts what is not there yet, by stage. `progress`
    hears (stage, done, total) while results are computed."""

    def __init__(self, engine, name: str, data_root=None, checkpoint=None, compute: bool = True,
                 progress: Progress | None = None):
        self.engine = engine
        self.data_root = data_root
        self.checkpoint = checkpoint
        self.compute = compute
        self.progress = progress
        self.pending: dict[str, int] = {}
        self.data = load_study(engine, name)

    def _count_pending(self, stage: str, wanted: int, found: dict) -> dict:
        if not self.compute and wanted > len(found):
            self.pending[stage] = wanted - len(found)
        return found

    @cached_property
    def activity(self) -> dict[int, str]:
        """{session id: version of its voice activity} of the analysable sessions (computed from
        recordings where missing). Every per-session result (statistics, judge metrics, every
        naturalness scorer) is taken over exactly these: the one rule of which sessions count
        (analysis.study.analysable_session_ids), the others listed by `excluded_sessions`."""
        candidates = sessions_not_excluded(self.data)
        versions = session_activity(self.engine, candidates, self.data_root, self.compute, self.progress)
        left = 0 if self.compute else sessions_without_activity(candidates, versions, self.activity_failures)
        if left:
            self.pending["voice activity"] = left
        decide_quality(self.engine, self.data, versions, store=self.compute)
        counted = analysable_session_ids(self.data)
        return {i: v for i, v in versions.items() if i in counted}

    @cached_property
    def activity_failures(self) -> dict[int, str]:
        """{session id: why its recording could not be analysed}."""
        return activity_failures(self.engine, self.data)

    @cached_property
    def statistics(self):
        found = session_statistics(self.engine, self.data, self.activity, self.data.events, self.compute, self.progress)
        return self._count_pending("statistics", len(self.activity), found)

    @cached_property
    def judge(self):
        """The judge, or the reason there is none (a string)."""
        try:
            return load_study_judge(self.checkpoint)
        except JudgeUnavailable as exc:
            return str(exc)

    @property
    def has_judge(self) -> bool:
        return not isinstance(self.judge, str)

    @cached_property
    def judge_results(self):
        if not self.has_judge:
            return {}
        found = session_judge_results(self.engine, self.data, self.activity, self.judge, self.compute, self.progress)
        return self._count_pending("judge metrics", len(self.activity), found)

    @cached_property
    def scorers(self) -> dict:
        """The naturalness scorers, default first (those that need a judge only when there is one)."""
        return study_scorers(self.judge if self.has_judge else None)

    @property
    def scorer(self) -> str:
        return DEFAULT_SCORER

    @cached_property
    def _naturalness(self) -> dict:
        return {}

    def naturalness(self, scorer: str | None = None) -> tuple[dict, dict]:
        """({session id: score}, {clip id: score}) by one scorer (default: the default scorer)."""
        name = scorer or self.scorer
        if name not in self._naturalness:
            s = self.scorers[name]
            sessions = session_naturalness(self.engine, self.data, self.activity, s, self.compute, self.progress)
            clips = clip_naturalness(self.engine, self.data, s, self.compute, self.progress)
            self._count_pending(f"naturalness ({name})", len(self.activity), sessions)
            left = 0 if self.compute else clips_left_to_score(self.engine, self.data, clips)
            if left:
                self.pending[f"clip naturalness ({name})"] = left
            self._naturalness[name] = (sessions, clips)
        return self._naturalness[name]

    def fill(self) -> None:
        """Compute and cache every per-session and per-clip result the views read."""
        _ = self.statistics, self.judge_results
        for name in self.scorers:
            self.naturalness(name)
        _ = self.questionnaire_statistics

    @cached_property
    def questionnaire_answers(self) -> StudyAnswers:
        return load_answers(self.engine, self.data)

    @cached_property
    def session_measures(self) -> dict[int, dict]:
        """{session id: {measure: value}} of the analysable sessions, from the cached results."""
        return session_measures(self.data, self.statistics, self.judge_results, self.session_naturalness,
                                self.scorer, examiner_table(self.engine, self.data))

    @cached_property
    def questionnaire_statistics(self) -> dict | None:
        """The tests, ranking and correlations of the questionnaire views (cached; None: pending)."""
        answers = self.questionnaire_answers
        if not answers.participants:
            return None
        found = questionnaire_statistics(self.engine, self.data, answers, self.session_measures, self.compute)
        if found is None and not self.compute:
            self.pending["questionnaire statistics"] = 1
        return found

    @property
    def session_naturalness(self):
        return self.naturalness()[0]

    @property
    def clip_naturalness(self):
        return self.naturalness()[1]


def pending_note(pending: dict[str, int], state) -> str:
    """A view's first note when some of its results are not computed yet (`state`: the study's
    storage.analysis_queue.AnalysisState)."""
    missing = "; ".join(f"{stage}: {count}" for stage, count in pending.items())
    return (f"**Partial results**: not computed yet ({missing}). {state.describe()} "
            "This view shows what is ready and updates itself when the rest is done.")


def _no_judge(analysis: StudyAnalysis) -> str:
    return f"No judge model: {analysis.judge}. Train one with `python -m judge train` (see README)."


def unanswered_note(data) -> str | None:
    """The systems that left calls unanswered, as a finding about them."""
    found = unanswered_calls(data, NO_SYSTEM_ANSWER)
    if not found:
        return None
    systems = "; ".join(f"{system}: {hits} of {calls} call{'s' if calls != 1 else ''} with no answer from the system"
                        for system, (hits, calls) in found.items())
    return (f"**The system never answered** ({systems}): a failure of the system, not a conversation; "
            "those calls are left out of its statistics and scores.")


def excluded_note(data) -> str | None:
    excluded = excluded_sessions(data)
    if not len(excluded):
        return None
    reasons = "; ".join(f"{reason}: {', '.join(map(str, group['session_id']))}"
                        for reason, group in excluded.groupby("reason", sort=False))
    return (f"**Left out: {len(excluded)} session(s) that are not analysable** ({reasons}), by one rule for "
            "every statistic, judge metric and naturalness scorer (listed with their reason in the study overview).")


def overview_view(analysis: StudyAnalysis) -> View:
    data = analysis.data
    _ = analysis.activity  # decides the sessions not checked when their call ended
    view = View("overview", VIEWS["overview"].title, headline=overview_headline(data))
    if data.config.get("demo_data"):
        view.notes.append(demo_note(data.config["demo_data"], view.headline["real_data"]))
    pairs = view.headline["clip_pairs"]
    if pairs["all"]:
        view.notes.append(f"Clip pairs: {pairs['formal']} formal (the ones analysed), {pairs['artifact_control']} "
                          f"artifact controls, {pairs['attention']} attention checks, {pairs['practice']} practice: "
                          f"{pairs['all']} in all; the {pairs['formal'] + pairs['artifact_control']} formal and "
                          "control pairs take judgments (the table of how many each has).")
    view.notes += annotation_notes(analysis.engine, data.name, analysis.data_root)
    view.tables = {"systems": sessions_per_system(data), "excluded_sessions": excluded_sessions(data),
                   "annotation_progress": annotation_progress(data), "annotators": annotator_completion(data),
                   "connection_checks": connection_check_failures(data)}
    checks = view.headline["could_not_connect"] = could_not_connect(data)
    if checks["checks"]:
        view.notes.append(f"Connection checks before consent: {checks['checks']} run, {checks['passed']} passed, "
                          f"{checks['failed']} failed; {checks['external_ids_never_passed']} people (by the study "
                          "link's id) never passed and could not take part (the table of the reasons).")
    degraded = int(data.sessions["quality_reason"].fillna("").str.startswith(SERVER_BEHIND).sum())
    view.headline["calls_degraded_by_this_server"] = degraded
    if degraded:
        view.notes.append(f"**Calls degraded by this server: {degraded}.** Their system audio went out late because "
                          "the server was short of CPU or behind real time: the platform's fault, not the "
                          "participants' network (each session's reason has the server's figures). Fewer call slots "
                          "(`--call-slots`) or a larger machine prevents it.")
    view.notes.append(retention_note(data.config))
    if (erased := erasure_note(analysis.engine, data.study_id)) is not None:
        view.notes.append(erased)
    found = unanswered_calls(data, NO_SYSTEM_ANSWER)
    view.headline["unanswered_calls"] = {system: {"no_answer": hits, "calls": calls}
                                         for system, (hits, calls) in found.items()}
    return view


def statistics_view(analysis: StudyAnalysis) -> View:
    view = View("statistics", VIEWS["statistics"].title)
    if not analysis.statistics:
        view.notes.append("No analysable session with voice activity yet.")
        return view
    found = switchboard_references(analysis.data.events)
    # A refused reference keeps its (empty) column in the table; the figures leave it out.
    references = {label: found.tables.get(label) for label in REFERENCE_FILES}
    per_system = metrics.system_statistics(analysis.data, analysis.statistics)
    sessions = metrics.session_statistics_table(analysis.data, analysis.statistics)
    fto = metrics.floor_transfer_table(per_system, references)
    view.tables = {"statistics": metrics.statistics_table(per_system, references), "floor_transfer_offsets": fto,
                   "session_statistics": sessions}
    view.figures = {"statistics": figures.system_statistics_figure(per_system, references),
                    "floor_transfer_offsets": figures.floor_transfer_figure(
                        metrics.floor_transfer_histogram(per_system, references), fto),
                    "session_spread": figures.session_spread_figure(sessions)}
    view.headline = {system: {"gap_per_minute": s["per_minute"]["gap"], "overlap_percent": s["percent"]["overlap"],
                              "speaking_rate_wpm": s["speaking_rate_wpm"],
                              "backchannel_rate_wpm": s["backchannel_rate_wpm"],
                              "floor_transfer_offset_median_s": s["floor_transfer_offset"]["percentiles_s"]["50"]}
                     for system, s in per_system.items()}
    view.notes += reference_notes(found)
    view.notes.append(sessions_measurement_note(list(analysis.statistics.values()), found))
    view.notes.append("Each Switchboard reference is pooled over all minutes of its conversations; each system "
                      "pooled over its sessions, with a 95 % interval by a bootstrap over its sessions (`interval` "
                      "says over how many; the error bars), and the per-session mean and standard deviation (in "
                      "the figure's hover).")
    view.notes.append("Gaps and pauses leave out the silences next to a backchannel (the silence before a "
                      "listener's \"yeah\" is no response time); \"(all IPUs)\" are Talking Turns' own, "
                      "backchannels included. Floor-transfer offset: a turn's start minus the end of the other "
                      "speaker's turn it takes the floor from (negative: it starts in overlap; backchannels "
                      "transfer nothing); human conversation peaks near +200 ms (Heldner & Edlund 2010).")
    return view


def judge_view(analysis: StudyAnalysis) -> View:
    view = View("judge", VIEWS["judge"].title)
    if not analysis.has_judge:
        view.notes.append(_no_judge(analysis))
        return view
    if not analysis.judge_results:
        view.notes.append("No analysable session with voice activity yet.")
        return view
    judge = analysis.judge
    summaries = metrics.system_judge_summaries(analysis.data, analysis.judge_results, judge.thresholds)
    reference = judge_reference(analysis.engine, judge)
    agreement = metrics.agreement_table(summaries, reference)
    confusion = metrics.confusion_table(summaries)
    view.tables = {"agreement": agreement, "decisions": metrics.decision_table(summaries, reference),
                   "user_interruptions": metrics.user_interruption_table(analysis.data, analysis.statistics),
                   "confusion": confusion}
    view.figures = {"agreement": figures.agreement_figure(agreement), "confusion": figures.confusion_figure(confusion)}
    described = judge_description(judge)
    view.notes.append(f"Judge: {described['name']} (sha256 {judge.sha256[:12]}), thresholds: "
                      f"{described['thresholds_from']}. Agreement is pooled over a series' decision instances "
                      "(40 ms chunks; `instances` counts them), its 95 % interval comes from a bootstrap over "
                      "sessions (over conversations for the human reference), since the chunks of one session "
                      "are not independent; `interval` says over how many, or why there is none.")
    view.notes.append("Confusion matrices: each 40 ms chunk where the system decided, by the judge's most likely "
                      "label (rows, L^gen) and what the call did (columns, L^dialogue); "
                      + ", ".join(f"{label} = {meaning}" for label, meaning in LABEL_MEANINGS.items())
                      + " (C: the one holding the floor goes on; T: the floor changes hands).")
    if reference is not None:
        held_out = reference.get("out_of_sample", {})
        view.notes.append(f"Human reference: {reference.get('conversations')} Switchboard validation conversations "
                          "of the reference half, disjoint from the "
                          f"{held_out.get('tuned_on_conversations') or 'unlisted'} conversations the thresholds "
                          "were tuned on.")
    if reference is None:
        view.notes.append("No human reference for this judge yet: `python -m analysis demo --switchboard DIR` "
                          "scores Switchboard conversations with it.")
    view.headline = {"judge": described,
                     "agreement_percent": {f"{r.series} / {r.metric} / {r.decision}": r.agreement_percent
                                           for r in agreement.itertuples()}}
    return view


def naturalness_view(analysis: StudyAnalysis) -> View:
    view = View("naturalness", VIEWS["naturalness"].title)
    default = analysis.scorer
    sessions = metrics.naturalness_table(analysis.data, analysis.session_naturalness, default)
    per_system = metrics.naturalness_per_system(sessions)
    reference = metrics.naturalness_reference_row(sessions, analysis.scorers[default])
    if reference is not None:
        per_system = pd.concat([per_system, pd.DataFrame([reference])], ignore_index=True)
    validation, _ = metrics.benchmark_validation(analysis.data, analysis.clip_naturalness)
    by_scorer, bench_by_scorer = [], []
    for name in analysis.scorers:
        scores, clips = analysis.naturalness(name)
        table = metrics.naturalness_per_system(metrics.naturalness_table(analysis.data, scores, name))
        by_scorer += [{"scorer": name, "units": analysis.scorers[name].units, **r} for r in table.to_dict("records")]
        bench, _ = metrics.benchmark_validation(analysis.data, clips)
        if len(bench):
            bench_by_scorer.append({"scorer": name, **bench.iloc[0].to_dict()})
    view.tables = {"naturalness_per_system": per_system,
                   "naturalness_by_scorer": pd.DataFrame(by_scorer, columns=["scorer", "units", *per_system.columns]),
                   "naturalness_per_session": sessions, "benchmark_validation": validation,
                   "benchmark_by_scorer": pd.DataFrame(bench_by_scorer, columns=["scorer", *metrics.VALIDATION_COLUMNS])}
    if len(sessions):
        view.figures["naturalness"] = figures.naturalness_figure(sessions, default, reference)
    else:
        view.notes.append("No analysable session with voice activity yet.")
    if len(validation):
        view.figures["validation"] = figures.validation_figure(validation)
    else:
        view.notes.append("No perturbation benchmark (formal clip pairs with voice activity) in this study yet.")
    view.headline = {"scorer": default,
                     "per_system": {r.system: r.mean_naturalness for r in per_system.itertuples()},
                     "by_scorer": {name: {r["system"]: r["mean_naturalness"] for r in by_scorer if r["scorer"] == name}
                                   for name in analysis.scorers},
                     "benchmark": validation.to_dict("records")[0] if len(validation) else None,
                     "benchmark_by_scorer": {r["scorer"]: r["pair_accuracy"] for r in bench_by_scorer}}
    view.notes.append(f"Scorer: **{default}** (default; {analysis.scorers[default].units}): how typical the dialogue's "
                      "timing is of human conversation (Switchboard), over the whole session and its least likely "
                      "stretches; higher is more natural. `naturalness` is minus the scorer's score, which is a "
                      "likelihood (NLL) or a cost as its units say (the score is the same number with the sign "
                      "flipped, so it is not shown). Per session, `least_natural_6s_start_s` says where to "
                      "listen first. Side by side: every scorer's per-system means (each on its own scale) and "
                      "benchmark accuracy.")
    view.notes.append("Paper or platform: TurnNat (the paper) defines the perturbation types, the pair measures "
                      "(pair accuracy, C-index, mean score difference) and the DialogNLL pooling; every number "
                      "here is this platform's scorers on this study's sessions and pairs, not the paper's "
                      "scorers. turnnat-va is the paper's pooling on this project's voice-activity judge "
                      "(judge/checkpoints/MODEL_CARD.md), not the paper's audio scorer.")
    unscored = [f"{name}: session {i} ({score['error']})" for name in analysis.scorers
                for i, score in sorted(analysis.naturalness(name)[0].items()) if "error" in score]
    if unscored:
        view.notes.append("Analysable sessions a scorer could not score (left out of that scorer's means only): "
                          + "; ".join(unscored) + ".")
    missing = [name for name in SCORERS if name not in analysis.scorers]
    if missing:
        view.notes.append(f"{', '.join(missing)} is not shown: {_no_judge(analysis)}")
    view.notes.append("Benchmark: score difference = score(perturbed) - score(natural) = naturalness(natural) - "
                      "naturalness(perturbed) by the default scorer (a DeltaNLL only for a likelihood scorer); "
                      "mean score difference, C-index and pair accuracy with 95 % intervals by a bootstrap over "
                      "the source conversations the pairs were cut from (pairs of one conversation are not "
                      "independent; `interval` says over how many, or why there is none).")
    return view


def human_view(analysis: StudyAnalysis, exclude=None) -> View:
    """Table II; `exclude` None = the suggested exclusions (`study_metrics.suggested_exclusions`)."""
    data = analysis.data
    view = View("human", VIEWS["human"].title)
    if not (data.judgments["trial"] == "formal").any():
        view.notes.append("No judgments of formal pairs yet.")
        return view
    annotators = metrics.annotator_table(data)
    suggested = metrics.suggested_exclusions(annotators)
    exclude = suggested if exclude is None else list(exclude)
    everyone, kept = metrics.human_summary(data), metrics.human_summary(data, exclude)
    all_types, kept_types = metrics.per_type_table(everyone), metrics.per_type_table(kept)
    annotators["suggested_exclusion"] = annotators["annotator"].astype(str).isin(suggested)
    view.tables = {"table_ii": metrics.table_two(everyone), "exclusion_effect": metrics.exclusion_effect(everyone, kept),
                   "per_type": all_types, "per_annotator": annotators}
    view.figures = {"preference": figures.preference_figure(all_types, kept_types if exclude else kept_types.iloc[:0])}
    view.notes.append("Agreement: each judgment against the majority of the pair's other judgments (its own vote left "
                      "out; when the others tie it counts for neither). Krippendorff's alpha on the forced choice "
                      "(nominal) and on each pair's rating difference (interval), unit = pair; the pooled-ratings "
                      "alpha also rises with the perturbation effect. Intervals: Wilson 95 % (rates), normal 95 % (means).")
    view.notes.append("Excluded: " + (", ".join(exclude) if exclude else "nobody") +
                      f" (suggested: {', '.join(suggested) or 'nobody'}: failed an attention check, agree with the "
                      "others' majority less than half the time, or rated the clip they chose lower than the other in "
                      "more than a quarter of their judgments).")
    view.headline = {"all": metrics.table_two(everyone).set_index("statistic")["value"].to_dict(),
                     "excluded_annotators": exclude}
    return view


def metric_vs_people_view(analysis: StudyAnalysis) -> View:
    view = View("metric_vs_people", VIEWS["metric_vs_people"].title)
    pairs = metrics.pair_preferences(analysis.data, analysis.clip_naturalness)
    if not len(pairs):
        view.notes.append("No judged formal pairs yet.")
        return view
    clips = metrics.clip_ratings(analysis.data, analysis.clip_naturalness)
    agreement = metrics.metric_people_agreement(pairs)
    correlation = metrics.rating_correlation(clips)
    view.tables = {"agreement": pd.DataFrame([{**agreement, **correlation}]), "pairs": pairs, "clips": clips}
    view.figures = {"ratings": figures.rating_scatter(clips)}
    view.headline = {"scorer": analysis.scorer, "scorer_agrees_with_majority": agreement,
                     "rating_correlation": correlation}
    view.notes.append(f"Scorer: {analysis.scorer}. Per pair: does it (score difference > 0) prefer the clip most "
                      "people preferred? Ties on either side are left out; its 95 % interval is over the source "
                      "conversations of the pairs. Correlation: the scorer's naturalness of each clip against its "
                      "mean rating, with 95 % intervals by a bootstrap over pairs (a pair's two clips drawn "
                      "together).")
    return view


def _beside_study(analysis: StudyAnalysis, table: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The examiner's rows beside the study's measures of the same systems, from the tables the
    statistics, judge and naturalness views show (read from the cache)."""
    per_system = metrics.system_statistics(analysis.data, analysis.statistics) if analysis.statistics else {}
    interruptions = metrics.user_interruption_table(analysis.data, analysis.statistics)
    agreement = pd.DataFrame(columns=["series", "metric", "decision", "agreement_percent"])
    if analysis.has_judge and analysis.judge_results:
        agreement = metrics.agreement_table(metrics.system_judge_summaries(
            analysis.data, analysis.judge_results, analysis.judge.thresholds))
    naturalness = metrics.naturalness_per_system(
        metrics.naturalness_table(analysis.data, analysis.session_naturalness, analysis.scorer))
    return beside_study(table, per_system, interruptions, agreement, naturalness)


def questionnaire_view(analysis: StudyAnalysis) -> View:
    """What participants answered after their calls, per system (analysis.questionnaire_views)."""
    view = View("questionnaire", VIEWS["questionnaire"].title)
    fill_questionnaire_view(view, analysis.questionnaire_answers, analysis.questionnaire_statistics)
    return view


def felt_vs_measures_view(analysis: StudyAnalysis) -> View:
    """Which of the platform's per-session measures tracks what participants answered."""
    view = View("felt_vs_measures", VIEWS["felt_vs_measures"].title)
    fill_tracking_view(view, analysis.questionnaire_answers, analysis.session_measures,
                       analysis.questionnaire_statistics)
    return view


def examiner_example_figure(analysis: StudyAnalysis, example_id: int):
    """(the stored example's timeline figure, its label), or None when it is not one of the study's."""
    found = stored_example(analysis.engine, analysis.data, example_id)
    if found is None:
        return None
    system, example = found
    label = example_label(system, example.task, example.example)
    return example_timeline_figure(example.timeline, label), label


def examiner_view(analysis: StudyAnalysis, example_id: int | None = None) -> View:
    """The automatic examiner's row of each of the study's systems, next to FDB's published rows
    and beside what the study measured of the same systems; the timeline of one stored example
    (`example_id`, default the first)."""
    table = examiner_table(analysis.engine, analysis.data)
    examined = int(table["calls"].notna().sum())
    view = View("examiner", VIEWS["examiner"].title, headline={"systems_examined": examined,
                                                               "systems": int(len(table))})
    view.notes.append(
        "Full-Duplex-Bench's tasks, scored by its rules (`python -m examiner`, examiner/README.md), on task sets "
        "spoken by the packaged voices; each system examined with `python -m examiner run --system KIND --store`. "
        "TOR = take-over rate; latencies in seconds; intervals are 95% bootstrap intervals over examples. "
        "The words come from the "
        "packaged Whisper tiny.en, not FDB's parakeet: TOR moves with the ASR, so compare with the published rows "
        "with care. The probes: share of overlapping sounds after which the system stopped (for an interruption a "
        "success, for a backchannel, background speech or a cough a false barge-in). The last three columns hold "
        "the monologues' backchannels against Switchboard's listeners on the same speech: the system's count over "
        "theirs (1: a listener's rate), the Jensen-Shannon distance of the onsets' timing from the end of the "
        "speaker's speech (0: the listeners' timing), and the distance a listener timed exactly as Switchboard's "
        "would get with as many backchannels (chance alone keeps a few onsets from the listeners' shape: read the "
        "system's against it); FDB's own JSD compares each clip with the platform's reference, "
        "equal mass in every pause.")
    view.notes.append(interruption_judge_note())
    progress = read_progress(analysis.data_root, analysis.data.name) if analysis.data_root is not None else None
    if progress is not None:  # a background examination of the study's systems (examiner/study_runs.py)
        view.notes[:0] = progress.describe()
        view.headline["background_examination"] = progress.state
    missing = table.loc[table["calls"].isna(), "examined_as"].tolist()
    if missing:
        view.notes.append(f"Not examined yet: {', '.join(missing)}.")
    examples = examples_table(analysis.engine, analysis.data)
    beside, said = _beside_study(analysis, table.loc[table["calls"].notna()])
    view.tables = {"examiner": table, "published": published_table(), "beside_study": beside, "examples": examples}
    if len(beside):
        view.notes.append("Beside the study: each examined system's examiner measure next to the study's measure "
                          f"of the same behaviour. {STUDY_SIDE_NOTE} People judge clip pairs (natural against "
                          "perturbed), not systems, so no preference of theirs is per system.")
    if said:
        view.notes.append("Where they disagree: " + "; ".join(said) + ".")
    view.headline["examples"] = int(len(examples))
    if not len(examples):
        if examined:
            view.notes.append("No per-example timeline stored: store the run again (`python -m examiner run ... "
                              "--store` on its run folder resumes without calling and stores every example).")
        return view
    chosen = int(examples["example_id"].iloc[0]) if example_id is None else int(example_id)
    shown = examiner_example_figure(analysis, chosen)
    if shown is not None:
        view.figures["timeline"] = shown[0]
        view.headline["timeline_example"] = shown[1]
    return view


# Every study view, in the order of the dashboard's tabs and the report's sections.
VIEWS = {spec.key: spec for spec in (
    ViewSpec("overview", "Study overview", (), ("systems", "excluded_sessions", "annotation_progress", "annotators",
                                                "connection_checks"), overview_view, quality_notes=True),
    ViewSpec("statistics", "Statistics per system", ("statistics", "floor_transfer_offsets", "session_spread"),
             ("statistics", "floor_transfer_offsets", "session_statistics"), statistics_view, quality_notes=True),
    ViewSpec("judge", "Judge metrics", ("agreement", "confusion"),
             ("agreement", "decisions", "user_interruptions", "confusion"), judge_view, quality_notes=True),
    ViewSpec("naturalness", "Naturalness", ("naturalness", "validation"),
             ("naturalness_per_system", "naturalness_by_scorer", "naturalness_per_session", "benchmark_validation",
              "benchmark_by_scorer"), naturalness_view, quality_notes=True),
    ViewSpec("human", "Human evaluation", ("preference",),
             ("table_ii", "exclusion_effect", "per_type", "per_annotator"), human_view),
    ViewSpec("metric_vs_people", "Naturalness vs people", ("ratings",), ("agreement", "pairs", "clips"),
             metric_vs_people_view),
    ViewSpec("examiner", "Automatic benchmark", ("timeline",), ("examiner", "published", "beside_study", "examples"),
             examiner_view),
    ViewSpec("questionnaire", "Questionnaire", ("answers", "medians", "ranking", "order_effects"),
             ("items", "tests", "ranking", "order_effects", "choices", "comments"), questionnaire_view),
    ViewSpec("felt_vs_measures", "What people felt vs the measures", ("correlations",), ("correlations",),
             felt_vs_measures_view),
)}
STUDY_VIEWS = tuple(VIEWS)
# key: (title, figure names, table names), for the pages that lay a view out
LAYOUT = {key: (spec.title, list(spec.figures), list(spec.tables)) for key, spec in VIEWS.items()}


def study_view(analysis: StudyAnalysis, key: str) -> View:
    spec = VIEWS[key]
    view = spec.function(analysis)
    if spec.quality_notes:
        _ = analysis.activity  # the sessions' quality is decided before the notes say it
        view.notes += [note for note in (unanswered_note(analysis.data), excluded_note(analysis.data)) if note]
    if spec.quality_notes and analysis.activity_failures:
        failures = "; ".join(f"session {i}: {why}" for i, why in sorted(analysis.activity_failures.items()))
        view.notes.append(f"**Left out: {len(analysis.activity_failures)} session(s) whose recording could not be "
                          f"analysed** ({failures}). They are tried again when their recording changes.")
    return view


# -- one session ---------------------------------------------------------------------------------


def session_choices(analysis: StudyAnalysis) -> list[tuple[str, int]]:
    _ = analysis.activity  # decides the sessions not checked when their call ended
    return [(f"session {r.session_id}: {r.system}, {r.participant}, {r.topic}"
             + (f" (not analysable: {r.quality_reason})" if pd.notna(r.analysable) and not r.analysable else ""),
             int(r.session_id)) for r in analysis.data.sessions.itertuples()]


def recording_file(analysis: StudyAnalysis, session_id: int):
    """The session's stored recording (its checksum checked), or None."""
    row = analysis.data.sessions.set_index("session_id").loc[session_id]
    if not isinstance(row.recording_path, str):
        return None
    return verify(row.recording_path, row.recording_sha256, analysis.data_root)


def session_audio(analysis: StudyAnalysis, session_id: int):
    """(samples (channels, n) float32, sample rate) of the session's recording, or None."""
    path = recording_file(analysis, session_id)
    return None if path is None else load_audio(path, sample_rate=None)


def _session_network(view: View, analysis: StudyAnalysis, session_id: int, network) -> None:
    """The call's network as both ends measured it (stored when it ended): a table, and its round
    trip and loss over the call from the session's network.jsonl. Nothing for a call without."""
    from analysis.session_view import network_figure, network_table

    if not isinstance(network, dict):
        return
    view.tables["network"] = network_table(network)
    path = resolve(network_relpath(session_id), analysis.data_root)
    if path.is_file():
        view.figures["network"] = network_figure(network_series(read_network(path)),
                                                 f"Session {session_id}: the network over the call")


def _session_transcript(view: View, analysis: StudyAnalysis, session_id: int, conv) -> None:
    """The conversation as a transcript (analysis.session_transcript): the participant's
    recognised words, the system's own text from the timing log with where a reply was cut."""
    view.tables["transcript"] = transcript_table(stored_transcript(session_id, conv, analysis.data_root))
    replies, note = stored_reply_table(session_id, analysis.data_root)
    if note:
        view.tables["replies"] = replies
        view.notes.append(note)


def session_view(analysis: StudyAnalysis, session_id: int) -> tuple[View, object]:
    """(the session's view, its audio (samples, rate) or None). Only this session is read."""
    from analysis.session_view import (
        channel_names,
        decisions_table,
        events_table,
        session_figure,
        waveform_envelope,
    )

    session_id = int(session_id)
    view = View("session", f"Session {session_id}")
    _ = analysis.activity  # decides the sessions not checked when their call ended
    row = analysis.data.sessions.set_index("session_id").loc[session_id]
    _session_network(view, analysis, session_id, row.network)
    conv = session_conversations(analysis.engine, analysis.data, [session_id]).get(session_id)
    if pd.notna(row.analysable) and not row.analysable:
        # Said first; a conversation left out for its timing (the server, the network) is drawn in
        # full below, one without speech on a channel has nothing to draw: the researcher listens.
        view.notes.append(f"**Not analysable: {row.quality_reason}.** Session {session_id} ({row.system} with "
                          f"{row.participant}, {row.status}) is left out of every statistic, judge metric and "
                          "naturalness score; the study overview lists it with the other excluded sessions.")
        if conv is None:
            _session_transcript(view, analysis, session_id, conv)
            return view, session_audio(analysis, session_id)
    if conv is None:
        view.notes.append("This session has no voice activity (no recording) yet.")
        _session_transcript(view, analysis, session_id, None)
        return view, None
    audio = session_audio(analysis, session_id)
    envelope = waveform_envelope(audio[0], audio[1]) if audio is not None else None
    # the recording's channels by who speaks on them, not A / B
    speakers = channel_names(conv.meta.get("system_channel", 1))
    events = events_table(recording_statistics(conv, analysis.data.events), dict(zip(conv.speakers, speakers)))
    decisions = None
    if analysis.has_judge:
        decisions = decisions_table(session_judge_details(analysis.judge, conv, analysis.data.events),
                                    analysis.judge.thresholds)
    else:
        view.notes.append(_no_judge(analysis))
    title = f"Session {session_id}: {row.system} with {row.participant} ({row.topic})"
    view.figures = {"timeline": session_figure(conv, envelope, events, decisions, title, speakers), **view.figures}
    _session_transcript(view, analysis, session_id, conv)
    view.tables = {"transcript": view.tables.pop("transcript"), "events": events, **view.tables}
    if decisions is not None:
        view.tables["decisions"] = decisions
    return view, audio
