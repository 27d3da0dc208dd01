"""The researcher area of the web app (mounted by app.py at /analyze, behind the login).

Every number shown is computed by a function in `analysis` (the views of `analysis.views`, the
same ones the report writes); this module only lays them out.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from pathlib import Path

import gradio as gr
import pandas as pd
from fastapi import FastAPI, Request

from analysis.background import attach_worker
from analysis.examiner_results import example_choices
from analysis.figures import statistics_figure
from analysis.references import reference_notes, switchboard_references
from analysis.researcher_routes import FileGuard, RouteGuard, current_caller
from analysis.link_checks import new_annotator_links
from analysis.payments import payments_table, write_payments
from analysis.session_player import PLAYER_TEMPLATE, loading, player_value
from analysis.session_transcript import transcript_html
from analysis.study import StudyNotFound, study_id_by_name, study_names
from analysis.study_sessions import JudgeUnavailable, load_study_judge
from analysis.views import (
    LAYOUT,
    STUDY_VIEWS,
    StudyAnalysis,
    examiner_example_figure,
    human_view,
    pending_note,
    recording_file,
    session_choices,
    session_view,
    study_view,
)
from annotation.trials import TrialError
from examiner.progress import read_progress
from speech.audio import MONO_MIXTURE_HINT
from speech.pipeline import InputError, statistics_for_audio
from storage import audit_trail
from storage.analysis_queue import analysis_state, request_analysis
from storage.db import session_scope
from storage.erasure import ErasureError, erase, erasure_plan
from storage.files import private_cache
from storage.researcher_accounts import accounts, authenticate
from turntaking.stats import COUNT_EVENTS, DURATION_EVENTS
from webguard.researcher_login import RESEARCHER_USER

AUDIO_TYPES = [".wav", ".flac"]
SHOWN_DECIMALS = 4
AUDIT_SHOWN = 500  # the latest events in the tab; the CSV has them all


def statistics_rows(stats: dict, references: dict[str, dict]) -> list[list]:
    """The statistics table: one row per measure; the recording, each speaker, each Switchboard
    reference ({label: table}).

    Only looks values up (every number is computed in `analysis`)."""
    speakers = list(stats.get("speakers", {}))
    views = [stats] + [stats["speakers"][s] for s in speakers] + list(references.values())

    def cell(value):
        return "–" if value is None else round(value, 2)

    rows = [[f"{name} /min"] + [cell(v["per_minute"].get(name)) for v in views] for name in COUNT_EVENTS]
    rows += [[f"{name} % of time"] + [cell(v["percent"].get(name)) for v in views] for name in DURATION_EVENTS]
    rows += [
        [label] + [cell(v.get(key)) for v in views]
        for key, label in (("speaking_rate_wpm", "words /min"), ("backchannel_rate_wpm", "backchannel words /min"))
    ]
    return rows


def statistics_headers(stats: dict, references: dict[str, dict]) -> list[str]:
    return ["measure", "recording"] + [f"speaker {s}" for s in stats.get("speakers", {})] + list(references)


def refusal(message: str) -> gr.Error:
    """A researcher's request refused in one line: shown on the page, no traceback in the log (a
    bad upload or a missing choice is not the server's failure)."""
    return gr.Error(message, print_exception=False)


def upload_problem(exc: Exception, audio_path) -> str:
    """The error of an uploaded file as the page says it: named as uploaded (not by the server's
    temporary copy), without the command line's options."""
    return (str(exc).replace(str(audio_path), f"“{Path(audio_path).name}”")
            .replace(f" {MONO_MIXTURE_HINT}", ""))


def corpus_statistics_view(audio_path):
    """Upload handler of the "Corpus statistics" tab: table, figure, what the references are and
    the full JSON."""
    if not audio_path:
        raise refusal("Upload a two-channel recording (WAV or FLAC) first.")
    try:
        stats = statistics_for_audio(audio_path, vad="silero")
    except InputError as exc:
        raise refusal(upload_problem(exc, audio_path)) from None
    # The chart's legend names the upload, not Gradio's temporary copy of it.
    stats["name"] = Path(audio_path).name
    found = switchboard_references()
    table = gr.Dataframe(value=statistics_rows(stats, found.tables), headers=statistics_headers(stats, found.tables),
                         visible=True)
    summary = {k: v for k, v in stats.items() if k != "events"}
    notes = "\n\n".join(reference_notes(found, measured_like="this recording is (Silero, its lags undone, Whisper)"))
    return table, statistics_figure(stats, found.tables), notes, summary


# -- study views ---------------------------------------------------------------------------------


def _label(name: str) -> str:
    return name.replace("_", " ")


def _table_update(table: pd.DataFrame | None):
    if table is None or not len(table):
        return gr.Dataframe(value=None, visible=False)
    return gr.Dataframe(value=table.round(SHOWN_DECIMALS), visible=True)


def view_outputs(view, key: str) -> list:
    """Updates of a view's components in LAYOUT order: notes, figures, tables."""
    _, figure_names, table_names = LAYOUT[key]
    notes = "\n\n".join(view.notes)
    out = [notes]
    out += [gr.Plot(value=view.figures[n], visible=True) if n in view.figures else gr.Plot(value=None, visible=False)
            for n in figure_names]
    out += [_table_update(view.tables.get(n)) for n in table_names]
    return out


class Researcher:
    """The handlers of the study views, bound to the app's database, data and judge.

    `background`: the views read only cached results (analysis.background fills the cache) and
    say what is still being computed, so that no request waits for a computation; otherwise
    (the report, tests, one-process use) what is missing is computed in the request."""

    def __init__(self, engine, data_root=None, checkpoint=None, background: bool = False):
        self.engine = engine
        self.data_root = data_root
        self.checkpoint = checkpoint
        self.background = background
        # Reports and exports hold recordings: under the data root's private cache, which an
        # erasure empties (storage.files.private_cache); without a data root, a temporary folder
        # removed with this object.
        self._downloads = None if data_root is not None else tempfile.TemporaryDirectory(prefix="analyze-downloads-")
        self._downloads_root = Path(data_root) if data_root is not None else Path(self._downloads.name)
        if background:  # the judge (torch) loads before the first visit, not during it
            threading.Thread(target=self._load_judge, name="load-judge", daemon=True).start()

    @property
    def downloads(self) -> Path:
        """Made again when an erasure emptied the cache."""
        if self._downloads is not None:
            return self._downloads_root
        return private_cache(self._downloads_root, "downloads")

    def _load_judge(self) -> None:
        try:
            load_study_judge(self.checkpoint)
        except JudgeUnavailable:
            pass  # the views say why

    def analysis(self, study: str | None, compute: bool | None = None, progress=None) -> StudyAnalysis:
        if not study:
            raise refusal("Choose a study first.")
        try:
            return StudyAnalysis(self.engine, study, self.data_root, self.checkpoint,
                                 compute=not self.background if compute is None else compute, progress=progress)
        except StudyNotFound as exc:
            raise refusal(str(exc)) from None

    def studies(self):
        """The studies the logged-in account may open (all: outside a guarded route)."""
        caller = current_caller()
        names = [name for name in study_names(self.engine)
                 if caller is None or caller.may_open(study_id_by_name(self.engine, name))]
        return gr.Dropdown(choices=names, value=names[0] if names else None)

    def _with_state(self, analysis: StudyAnalysis, view):
        """The view, with a note first when some of its results are still being computed."""
        if analysis.pending:
            state = analysis_state(self.engine, analysis.data.study_id)
            if not state.busy:  # nothing is on it (a worker that died, a cache cleared): queue it
                with session_scope(self.engine) as session:
                    request_analysis(session, analysis.data.study_id)
                state = analysis_state(self.engine, analysis.data.study_id)
            view.notes.insert(0, pending_note(analysis.pending, state))
        return view

    def show(self, key: str, study: str | None) -> list:
        analysis = self.analysis(study)
        return view_outputs(self._with_state(analysis, study_view(analysis, key)), key)

    def status(self, study: str | None, shown_busy: bool):
        """(status line, busy now, bump): `bump` changes (and re-shows the open view) when the
        background work the page was waiting for has finished."""
        if not study:
            return "", False, gr.skip()
        study_id = study_id_by_name(self.engine, study)
        if study_id is None:
            return "", False, gr.skip()
        state = analysis_state(self.engine, study_id)
        line = f"⏳ {state.describe()}" if state.busy else (f"⚠ {state.describe()}" if state.status == "failed" else "")
        return line, state.busy, (time.time() if shown_busy and not state.busy else gr.skip())

    def show_human(self, study: str | None, excluded=None) -> list:
        """The human evaluation view; `excluded` None: the suggested exclusions."""
        analysis = self.analysis(study)
        view = self._with_state(analysis, human_view(analysis, None if excluded is None else list(excluded)))
        annotators = view.tables.get("per_annotator")
        choices = [] if annotators is None else list(annotators["annotator"].astype(str))
        chosen = view.headline.get("excluded_annotators", [])
        return view_outputs(view, "human") + [gr.Dropdown(choices=choices, value=chosen, multiselect=True)]

    def examiner_examples(self, study: str | None):
        """The study's stored examiner examples (system / task / example) for the timeline's dropdown."""
        choices = example_choices(self.engine, self.analysis(study).data) if study else []
        return gr.Dropdown(choices=choices, value=choices[0][1] if choices else None)

    def examiner_progress(self, study: str | None, seen: str, open_key: str):
        """(what was last seen of the study's background examination, the example dropdown, the
        examiner view): the view shown again when the examination has moved on (a system's calls,
        a run stored) while its tab is open; skipped otherwise."""
        unchanged = [seen, gr.skip()] + [gr.skip()] * (1 + len(LAYOUT["examiner"][1]) + len(LAYOUT["examiner"][2]))
        progress = read_progress(self.data_root, study) if study and self.data_root is not None else None
        if progress is None or open_key != "examiner" or progress.stamp() == seen:
            return unchanged
        return [progress.stamp(), self.examiner_examples(study), *self.show("examiner", study)]

    def show_examiner_example(self, study: str | None, example_id):
        if example_id is None or not study:
            return gr.Plot(visible=False)
        shown = examiner_example_figure(self.analysis(study), int(example_id))
        return gr.Plot(value=shown[0], visible=True) if shown else gr.Plot(visible=False)

    def sessions(self, study: str | None):
        choices = session_choices(self.analysis(study)) if study else []
        return gr.Dropdown(choices=choices, value=choices[0][1] if choices else None)

    def show_session(self, study: str | None, session_id):
        if session_id is None:
            return ("No session chosen.", gr.Plot(visible=False), None, _table_update(None), _table_update(None),
                    _table_update(None), gr.Plot(visible=False), "", _table_update(None))
        analysis = self.analysis(study)
        if int(session_id) not in set(analysis.data.sessions["session_id"]):  # the guard checked the study only
            raise refusal(f"No session {session_id} in study {study!r}.")
        view, audio = session_view(analysis, int(session_id))

        def plot_of(name):
            figure = view.figures.get(name)
            return gr.Plot(value=figure, visible=True) if figure is not None else gr.Plot(visible=False)

        # the stored file itself (Gradio serves it behind the login), its length from its samples
        playable = player_value(int(session_id), recording_file(analysis, int(session_id)),
                                None if audio is None else audio[0].shape[-1] / audio[1])
        return ("\n\n".join(view.notes) or view.title, plot_of("timeline"), playable,
                _table_update(view.tables.get("events")), _table_update(view.tables.get("decisions")),
                _table_update(view.tables.get("network")), plot_of("network"),
                transcript_html(view.tables.get("transcript")), _table_update(view.tables.get("replies")))

    def links(self, study: str | None, count) -> str:
        """New annotator links of the study, with the warnings of `python -m annotation annotators`."""
        if not study:
            raise refusal("Choose a study first.")
        try:
            links, warnings = new_annotator_links(self.engine, study, int(count or 0), self.data_root)
        except TrialError as exc:
            raise refusal(str(exc)) from None
        shown = [f"**⚠ {warning}**" for warning in warnings]
        return "\n\n".join(shown + ["```\n" + "\n".join(links) + "\n```"])

    def report(self, study: str | None, progress=gr.Progress()):
        """The report computes what the cache still lacks, showing how far it is."""
        from analysis.report import report_archive

        def shown(stage: str, done: int, total: int) -> None:
            progress((done, total), desc=stage, unit="items")

        caller = current_caller()  # a viewer's report: the aggregates, without any session's words
        return str(report_archive(self.analysis(study, compute=True, progress=shown), self.downloads,
                                  sessions=caller is None or caller.allowed("analyst")))

    def dataset(self, study: str | None, progress=gr.Progress()):
        import shutil

        from analysis.dataset import export_dataset

        progress(0, desc="exporting the dataset")
        analysis = self.analysis(study, compute=True)
        folder = self.downloads / f"dataset-{analysis.data.name}"
        if folder.exists():
            shutil.rmtree(folder)
        export_dataset(analysis, folder)
        return shutil.make_archive(str(folder), "zip", folder)


    def payments(self, study: str | None) -> str:
        """The payments table (analysis.payments) as a CSV in the private cache."""
        if not study:
            raise refusal("Choose a study first.")
        return str(write_payments(payments_table(self.engine, study), self.downloads / f"payments-{study}.csv"))

    def erasure_preview(self, study: str | None, subject: str, identifier: str) -> str:
        """What erasing the person would remove (`python -m studies erase --dry-run`)."""
        if not study:
            return "⚠ Choose a study first."
        try:
            plan = erasure_plan(self.engine, study, subject, (identifier or "").strip())
        except ErasureError as exc:  # already erased, unknown: said where the list would be
            return f"⚠ {exc}"
        lines = "\n".join(f"- {line}" for line in plan.describe())
        return f"Erasing this {subject} removes:\n\n{lines}\n\nTick the box below and press Erase to do it."

    def erase_person(self, study: str | None, subject: str, identifier: str, confirmed: bool,
                     request: gr.Request):
        """Erase the person (`python -m studies erase`) once the researcher ticked the confirmation:
        (what was done or why not, the box unticked after an erasure). Refusals are said in the
        result line, not raised: an error would cover the box with Gradio's error overlay."""
        if not study:
            return "⚠ Choose a study first.", gr.skip()
        if not confirmed:
            return "⚠ Tick the confirmation first: an erasure cannot be undone.", gr.skip()
        try:
            outcome = erase(self.engine, study, subject, (identifier or "").strip(),
                            erased_by=getattr(request, "username", None) or RESEARCHER_USER, reason="erased",
                            data_root=self.data_root)
        except ErasureError as exc:
            return f"⚠ {exc}", False
        counts = ", ".join(f"{table} {n}" for table, n in outcome.plan.counts().items())
        return (f"Erased: {counts}; {outcome.files_removed} file(s), {outcome.bytes_removed:,} bytes. The study's "
                f"analysis is computed again without them (erasure record {outcome.record_id}, which keeps no "
                "identifier)."), False


    def audit_trail(self) -> pd.DataFrame:
        """The latest events of the audit trail (storage.audit_trail), newest first."""
        return pd.DataFrame(audit_trail.rows(self.engine, limit=AUDIT_SHOWN), columns=list(audit_trail.CSV_COLUMNS))

    def audit_csv(self) -> str:
        path = self.downloads / "audit-trail.csv"
        audit_trail.write_csv(self.engine, path)
        return str(path)

    def accounts(self) -> pd.DataFrame:
        return pd.DataFrame(accounts(self.engine), columns=["name", "role", "studies", "state", "created"])

    def view(self, key: str):
        """The handler of one study view's tab (its name is the route's)."""
        def view(study: str | None) -> list:
            return self.show(key, study)
        return view

    def refresh(self, key: str):
        """The view shown again when the background work it waited for finished, if it is open."""
        def refresh(study: str | None, open_key: str) -> list:
            if open_key == key and study:
                return self.show(key, study)
            return [gr.skip()] * _view_size(key)
        return refresh

    def overview_for(self, study: str | None) -> list:
        if study:
            return self.show("overview", study)
        return [""] + [gr.skip()] * (_view_size("overview") - 1)


def _constant(value):
    """A handler that answers `value` (which tab is open)."""
    def opened():
        return value
    return opened


def _view_size(key: str) -> int:
    """How many components a view's tab has (_view_components): its notes, figures and tables."""
    _, figure_names, table_names = LAYOUT[key]
    return 1 + len(figure_names) + len(table_names)


def _view_components(key: str):
    _, figure_names, table_names = LAYOUT[key]
    notes = gr.Markdown()
    plots = [gr.Plot(label=_label(n), visible=False) for n in figure_names]
    tables = [gr.Dataframe(label=_label(n), interactive=False, visible=False, max_height=500) for n in table_names]
    return [notes, *plots, *tables]


def analyze_blocks(engine, data_root=None, checkpoint=None, background: bool = False,
                   guard: RouteGuard | None = None) -> gr.Blocks:
    """The area's page; every event goes through `guard` (its rule table: analysis.researcher_routes)."""
    researcher = Researcher(engine, data_root, checkpoint, background)
    guard = guard or RouteGuard(engine, None, lambda name: study_id_by_name(engine, name))
    route = guard.route
    with gr.Blocks(title="Analyze") as blocks:
        gr.Markdown("# Analyze\n\nTurn-taking statistics, judge metrics and human evaluations of the studies.")
        # the studies this account may open: filled when the page loads, for its account (any
        # name is let through to the routes, whose guard checks the membership)
        study = gr.Dropdown(label="Study", choices=[], value=None, interactive=True, allow_custom_value=True)
        # What the background worker is computing for the chosen study, polled every 2 s; when it
        # finishes, `finished` changes and the open view is shown again with the new results.
        status = gr.Markdown(elem_id="analysis-status")
        busy = gr.State(False)
        finished = gr.Number(visible=False)
        current = gr.State("overview")
        outputs = {}
        tabs = {}
        # Every tab's title stays in view: eleven tabs do not fit a 1280 px window in one row, and
        # Gradio's default moves the last ones into a menu a reader may not find.
        with gr.Tabs(overflow_behavior="wrap"):
            # First, without any study: the statistics of one uploaded recording.
            with gr.Tab("Corpus statistics"):
                gr.Markdown(
                    "Upload a two-channel recording (one speaker per channel, WAV or FLAC). Voice activity "
                    "(Silero) and words (Whisper) give the turn-taking events; the table and chart put them "
                    "next to human-human conversation (Switchboard), measured two ways: as this recording is, "
                    "and from word alignments."
                )
                audio = gr.File(label="Two-channel recording", file_types=AUDIO_TYPES, type="filepath")
                run = gr.Button("Compute statistics", variant="primary")
                # hidden until there is a result (an empty table shows placeholder headers "1 2 3")
                table = gr.Dataframe(label="Turn-taking statistics", interactive=False, max_height=700, visible=False)
                figure = gr.Plot(label="Compared with Switchboard")
                reference_about = gr.Markdown()
                with gr.Accordion("All statistics (JSON)", open=False):
                    details = gr.JSON()
                run.click(route("corpus_statistics", corpus_statistics_view), inputs=audio,
                          outputs=[table, figure, reference_about, details], api_name="corpus_statistics")
            for key in STUDY_VIEWS:
                with gr.Tab(LAYOUT[key][0]) as tab:
                    if key == "human":
                        excluded = gr.Dropdown(label="Exclude annotators", multiselect=True, choices=[], interactive=True)
                        apply = gr.Button("Apply exclusion")
                    if key == "examiner":  # the timeline's example: the view draws the first one
                        example = gr.Dropdown(label="Example (system / task / example)", choices=[], interactive=True,
                                              elem_id="examiner-example")
                    outputs[key] = _view_components(key)
                    tabs[key] = tab
            with gr.Tab("Session") as session_tab:
                session = gr.Dropdown(label="Session", choices=[], interactive=True, allow_custom_value=True)
                session_notes = gr.Markdown()
                with gr.Row():  # the conversation's words beside its timeline
                    with gr.Column(scale=3):
                        session_plot = gr.Plot(label="session timeline", visible=False, elem_id="session-timeline")
                    with gr.Column(scale=2, min_width=320):
                        session_transcript = gr.HTML(elem_id="session-transcript")
                session_audio = gr.HTML(None, html_template=PLAYER_TEMPLATE, js_on_load=None, elem_id="session-player")
                session_replies = gr.Dataframe(label="replies: does each answer its turn? (relevance in nats per token)",
                                               interactive=False, visible=False, max_height=400,
                                               elem_id="session-replies")
                session_events = gr.Dataframe(label="events", interactive=False, visible=False, max_height=400)
                session_decisions = gr.Dataframe(label="judge decisions", interactive=False, visible=False, max_height=400)
                session_network = gr.Dataframe(label="network (both ends of the call)", interactive=False, visible=False)
                session_network_plot = gr.Plot(label="network over the call", visible=False,
                                               elem_id="session-network-plot")
            with gr.Tab("Downloads"):
                gr.Markdown("The study's report (HTML with every figure and table, CSV/Parquet tables, headline JSON) "
                            "and its Hugging Face dataset (recordings, voice activity, pairs, judgments), as zip files.")
                with gr.Row():
                    report_button = gr.Button("Build the report")
                    dataset_button = gr.Button("Export the dataset")
                report_file = gr.File(label="report (zip)")
                dataset_file = gr.File(label="dataset (zip)")
            with gr.Tab("Participants' data"):
                gr.Markdown("Erase one participant's or annotator's data at their request: every row and file, "
                            "the cached analysis that included them, and the database's free pages and log "
                            "(`python -m studies erase`). What is kept is a record without their identifier, so "
                            "that a second request is answered \"already erased\". Participants can also "
                            "withdraw themselves from their pages. How long data is kept: the Overview tab.")
                with gr.Row():
                    erase_subject = gr.Radio(["participant", "annotator"], value="participant", label="Who")
                    erase_id = gr.Textbox(label="Prolific ID or pseudonym", elem_id="erase-id")
                erase_preview = gr.Button("Show what would be erased")
                erase_plan_shown = gr.Markdown(elem_id="erase-plan")
                erase_confirmed = gr.Checkbox(label="I have checked the list: erase this person's data for good",
                                              elem_id="erase-confirm")
                erase_button = gr.Button("Erase", variant="stop", elem_id="erase-button")
                erase_done = gr.Markdown(elem_id="erase-done")
                gr.Markdown("Every view, report and export names people by pseudonym. To pay them, the payments "
                            "table puts each pseudonym beside its Prolific ID, completion code and time taken "
                            "(`python -m analysis payments`): the one place their Prolific IDs leave the app.")
                payments_button = gr.Button("Payments table (with Prolific IDs)")
                payments_file = gr.File(label="payments (CSV)", elem_id="payments-file")
            with gr.Tab("Annotator links"):
                gr.Markdown("Personal links for new annotators of the chosen study, as `python -m annotation "
                            "annotators` makes them (each link is one annotator). A warning says when some of them "
                            "would find no work; a study whose clips have no audio gets none.")
                link_count = gr.Number(label="How many links", value=1, precision=0, minimum=1, maximum=1000)
                make_links = gr.Button("Make links")
                links_shown = gr.Markdown()
            with gr.Tab("Audit trail") as audit_tab:
                gr.Markdown("Who did what to the study data, when and from where: logins, failed logins, sessions "
                            "opened, exports, erasures, retention, account changes, refusals (owners only). The "
                            "trail is append-only and no erasure or retention period removes it "
                            "(`python -m storage audit`). Accounts are managed with `python -m storage researcher`.")
                audit_table = gr.Dataframe(label="latest events", interactive=False, max_height=500,
                                           elem_id="audit-table")
                audit_button = gr.Button("Download the whole trail (CSV)")
                audit_file = gr.File(label="audit trail (CSV)")
                accounts_table = gr.Dataframe(label="accounts", interactive=False, elem_id="accounts-table")

        for key in STUDY_VIEWS:
            if key == "human":
                tabs[key].select(route("view_human", researcher.show_human), inputs=study,
                                 outputs=outputs[key] + [excluded], api_name="view_human")
                apply.click(route("apply_exclusion", researcher.show_human), inputs=[study, excluded],
                            outputs=outputs[key] + [excluded], api_name="apply_exclusion")
            else:
                tabs[key].select(route(f"view_{key}", researcher.view(key)), inputs=study, outputs=outputs[key],
                                 api_name=f"view_{key}")
            tabs[key].select(route(f"open_{key}", _constant(key)), outputs=current, api_name=f"open_{key}")
            finished.change(route(f"refresh_{key}", researcher.refresh(key)), inputs=[study, current],
                            outputs=outputs[key], api_name=f"refresh_{key}")
        if background:
            gr.Timer(2.0).tick(route("analysis_status", researcher.status), inputs=[study, busy],
                               outputs=[status, busy, finished], show_progress="hidden", api_name="analysis_status")
        # The examiner's tab: its examples in the dropdown; choosing one redraws the timeline.
        timeline_plot = outputs["examiner"][1 + LAYOUT["examiner"][1].index("timeline")]
        tabs["examiner"].select(route("examiner_examples", researcher.examiner_examples), inputs=study,
                                outputs=example, api_name="examiner_examples")
        # A background examination of the study's systems (`app.py --demo-examiner`): its progress
        # and each run stored as it finishes appear in the open tab without a click.
        examination_seen = gr.State("")
        gr.Timer(2.0).tick(route("examiner_progress", researcher.examiner_progress),
                           inputs=[study, examination_seen, current],
                           outputs=[examination_seen, example, *outputs["examiner"]], show_progress="hidden",
                           api_name="examiner_progress")
        example.input(route("examiner_example", researcher.show_examiner_example), inputs=[study, example],
                      outputs=timeline_plot, api_name="examiner_example")
        session_outputs = [session_notes, session_plot, session_audio, session_events, session_decisions,
                           session_network, session_network_plot, session_transcript, session_replies]
        session_tab.select(route("sessions", researcher.sessions), inputs=study, outputs=session, api_name="sessions")
        session.change(route("session_loading", loading), inputs=session, outputs=session_audio,
                       api_name="session_loading").then(
            route("session", researcher.show_session), inputs=[study, session], outputs=session_outputs,
            api_name="session")
        report_button.click(route("report", researcher.report), inputs=study, outputs=report_file, api_name="report")
        make_links.click(route("annotator_links", researcher.links), inputs=[study, link_count], outputs=links_shown,
                         api_name="annotator_links")
        dataset_button.click(route("dataset", researcher.dataset), inputs=study, outputs=dataset_file,
                             api_name="dataset")
        payments_button.click(route("payments", researcher.payments), inputs=study, outputs=payments_file,
                              api_name="payments")
        erase_preview.click(route("erasure_preview", researcher.erasure_preview),
                            inputs=[study, erase_subject, erase_id], outputs=erase_plan_shown,
                            api_name="erasure_preview")
        erase_button.click(route("erase", researcher.erase_person),
                           inputs=[study, erase_subject, erase_id, erase_confirmed],
                           outputs=[erase_done, erase_confirmed], api_name="erase")
        audit_tab.select(route("audit_trail", researcher.audit_trail), outputs=audit_table, api_name="audit_trail")
        audit_tab.select(route("accounts", researcher.accounts), outputs=accounts_table, api_name="accounts")
        audit_button.click(route("audit_csv", researcher.audit_csv), outputs=audit_file, api_name="audit_csv")
        # The overview is the first tab: it follows the chosen study.
        study.change(route("study_chosen", researcher.overview_for), inputs=study, outputs=outputs["overview"],
                     api_name="study_chosen")
        blocks.load(route("studies", researcher.studies), outputs=study, api_name="studies")
    return blocks


def mount(app: FastAPI, engine, data_root, password: str, path: str = "/analyze", checkpoint=None,
          background: bool = False, start_worker: bool = True, theme=None) -> None:
    """Serve the researcher area on `app` under `path`, behind Gradio's login. `checkpoint`: the
    judge for the study views (default: the packaged one). `background`: a worker process
    (analysis.background) runs beside the server and fills the cache, which the views read
    without computing in a request (`start_worker` False: a worker runs elsewhere)."""
    if background and start_worker:
        attach_worker(app, engine, data_root, checkpoint)
    if data_root is not None:
        # Gradio's copies of what it serves (recordings in the session view, reports, exports):
        # under the data root, readable by this user only, where an erasure finds and empties them
        # (storage.files.CACHE_DIR), not in /tmp for every local user. Read by Gradio as its blocks
        # and app are made, so set before; one app a process (the first one's, in a test process).
        os.environ.setdefault("GRADIO_TEMP_DIR", str(private_cache(data_root, "gradio")))
    shared = (RESEARCHER_USER, password)  # the shared password: the owner account `researcher`
    guard = RouteGuard(engine, shared, lambda name: study_id_by_name(engine, name))
    gr.mount_gradio_app(
        app,
        analyze_blocks(engine, data_root, checkpoint, background, guard),
        path=path,
        auth=lambda name, given: authenticate(engine, name, given, shared) is not None,
        auth_message="Researcher area: log in with your account (or the shared password as "
                     f"'{RESEARCHER_USER}').",
        theme=theme,  # the app's (app.py), Gradio's default when None
    )
    # The files it hands out, by role (analysis.researcher_routes.FILE_ROLES): the login cookie
    # names the account in Gradio's own token table.
    area = next(route.app for route in app.routes if getattr(route, "path", None) == path)

    def who(scope) -> str | None:
        cookies = Request(scope).cookies
        token = cookies.get(f"access-token-{area.cookie_id}") or cookies.get(f"access-token-unsecure-{area.cookie_id}")
        return area.tokens.get(token)

    app.add_middleware(FileGuard, area=path, engine=engine, who=who, shared=shared)
