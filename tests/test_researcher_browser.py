"""The researcher area in a real browser (headless Chromium) on a seeded demo study: log in, open
every study view and find its plots drawn and its numbers equal to the analysis functions'; the
session view with its waveform timeline and player; the report download. The study's HTML
report is opened too, offline, with all its figures drawn. The first system carries a stored
examiner row with the examples of a recorded run (tests/examiner/recorded_run.py): the
"Automatic benchmark" tab draws their timelines.

(The refusal without login is tested in tests/test_app.py.)
"""

from __future__ import annotations

import os
import re
import secrets
import urllib.parse
import zipfile
from pathlib import Path

import pytest
import soundfile
import torch
from fastapi import FastAPI
from playwright.sync_api import expect
from sqlmodel import select

from analysis import dashboard
from analysis.dashboard import RESEARCHER_USER
from analysis.demo_study import DEMO_LABEL, seed_demo_analysis
from analysis.examiner_results import canonical_kind
from analysis.report import write_report
from analysis.session_player import clock
from analysis.study import RECORDED
from analysis.study_metrics import annotator_table, human_summary, suggested_exclusions, table_two
from analysis.views import LAYOUT, StudyAnalysis
from examiner.runs import run_system, run_timelines
from examiner.table import system_label
from judge.model import JudgeConfig, JudgeModel, save_checkpoint
from storage import db
from storage.db import session_scope
from storage.demo import DEMO_SYSTEMS
from storage.files import resolve
from storage.models import DialogueSystem, Recording
from storage.records import save_examiner_examples, save_examiner_run
from tests.browser import serve
from tests.examiner.recorded_run import TASKS as EXAMINED_TASKS
from tests.examiner.recorded_run import recorded_run
from tests.plot_layout import overlapping_labels

PASSWORD = secrets.token_urlsafe(12)
EXAMINER_ROW = {"smooth_tor": 0.75, "smooth_latency_s": 1.234, "smooth_tor_ci95": [0.5, 1.0]}
SLOW_MS = 60_000
DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    """(engine, data root, judge checkpoint) of a database holding the simulated demo study."""
    root = tmp_path_factory.mktemp("researcher")
    engine = db.make_engine(f"sqlite:///{root / 'app.db'}")
    db.init_db(engine)
    with session_scope(engine) as session:
        seed_demo_analysis(session, root, sessions_per_system=2, seconds=45.0, per_type=2, annotators=6, careless=1)
    # The examiner's row of the study's first system, with the examples of a recorded run (scored
    # and given their timelines here: the run resumes without calling).
    recorded = recorded_run(root / "examiner")
    run_system(recorded.run, tasks=EXAMINED_TASKS, task_set=recorded.task_set, progress=False)
    with session_scope(engine) as session:
        system = session.exec(select(DialogueSystem).order_by(DialogueSystem.id)).first()
        row = save_examiner_run(session, system_label(canonical_kind(system.kind), dict(system.config or {})),
                                system.kind, dict(system.config or {}), {"seed": 0}, 14, EXAMINER_ROW, {}, "runs/first")
        save_examiner_examples(session, row, run_timelines(recorded.run))
    # A freshly initialised small judge: the views need a model, not a good one.
    torch.manual_seed(0)
    checkpoint = root / "judge.pt"
    save_checkpoint(JudgeModel(JudgeConfig(hidden_size=16, head_hidden=32)), checkpoint)
    return engine, root, checkpoint


@pytest.fixture(scope="module")
def base_url(seeded):
    engine, root, checkpoint = seeded
    app = FastAPI()
    dashboard.mount(app, engine, root, PASSWORD, checkpoint=checkpoint)
    with serve(app) as url:
        yield url


@pytest.fixture()
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(30_000)
    yield page
    context.close()


def log_in(page, base_url):
    page.goto(f"{base_url}/analyze/")
    page.get_by_label("username").fill(RESEARCHER_USER)
    page.get_by_label("password").fill(PASSWORD)
    page.get_by_role("button", name="Login").click()
    expect(page.get_by_role("tab", name="Study overview")).to_be_visible(timeout=SLOW_MS)
    expect(page.get_by_label("Study", exact=True)).to_have_value("demo", timeout=SLOW_MS)


def open_tab(page, title: str):
    page.get_by_role("tab", name=title, exact=True).click()
    panel = page.get_by_role("tabpanel").filter(visible=True).last
    return panel


def test_every_study_view_draws_its_plots(page, base_url, seeded):
    log_in(page, base_url)

    panel = open_tab(page, "Study overview")
    expect(panel.get_by_text(DEMO_LABEL)).to_be_visible(timeout=SLOW_MS)
    # what is demo, and (counted) that nothing real came since; the time recorded as h:mm:ss
    expect(panel.get_by_text("No real participants, annotators or judgments yet.")).to_be_visible()
    expect(panel.get_by_text(RECORDED)).to_be_visible()
    expect(panel.get_by_role("gridcell", name="0:01:30", exact=True).first).to_be_visible()  # 2 sessions of 45 s each

    for key in ("statistics", "judge", "naturalness", "human", "metric_vs_people", "questionnaire", "felt_vs_measures"):
        title, figures, _ = LAYOUT[key]
        panel = open_tab(page, title)
        plots = panel.locator(".js-plotly-plot")
        expect(plots.first).to_be_visible(timeout=SLOW_MS)
        expect(plots).to_have_count(len(figures), timeout=SLOW_MS)
        # Plotly drew its bars / boxes / heatmaps / points, not an empty frame.
        assert plots.first.locator("g.trace, g.cartesianlayer path").count() > 0
        if key in ("questionnaire", "felt_vs_measures") and os.environ.get("TURNTAKING_UPDATE_DOCS") == "1":
            panel.screenshot(path=str(DOCS / f"view-{key.replace('_', '-')}.png"))  # docs/researcher-area.md's
        if key == "statistics":  # both Switchboard references, labelled, and which one is like with like
            for label in ("Switchboard (word alignments)", "Switchboard (session pipeline)"):
                expect(panel.get_by_role("columnheader", name=label).first).to_be_visible()
            expect(panel.get_by_text("Switchboard (session pipeline) is the like-with-like comparison")).to_be_visible()
        if key == "judge":  # labels a reader can tell: the legend, the judge by its file name
            expect(panel.get_by_text("C = continue, BC = backchannel, T = turn change")).to_be_visible()
            expect(panel.get_by_text("Judge: judge.pt (sha256 ")).to_be_visible()
            assert str(seeded[2]) not in panel.inner_text() and "study_sessions" not in panel.inner_text()
            ticks = plots.last.locator(".ytick text").evaluate_all("nodes => nodes.map(n => n.textContent)")
            assert "T turn change" in ticks, ticks
            # one confusion matrix per system, side by side, none's labels on another
            expect(plots.last.locator(".nsewdrag")).to_have_count(len(DEMO_SYSTEMS))
            assert overlapping_labels(plots.last) == []
        if key == "naturalness":  # naturalness only, not also its NLL with the sign flipped
            expect(panel.get_by_role("columnheader", name="naturalness", exact=True).first).to_be_visible()
            expect(panel.get_by_role("columnheader", name="dialog_nll")).to_have_count(0)


def test_the_automatic_benchmark_shows_the_examiner_rows_beside_the_published_ones(page, base_url, seeded):
    engine, _, _ = seeded
    with session_scope(engine) as session:
        first = session.exec(select(DialogueSystem).order_by(DialogueSystem.id)).first().name
    log_in(page, base_url)
    panel = open_tab(page, "Automatic benchmark")
    row = panel.get_by_role("row").filter(has=page.get_by_text(first, exact=True)).first
    expect(row).to_be_visible(timeout=SLOW_MS)
    cells = [c.strip() for c in row.get_by_role("gridcell").all_inner_texts()]
    assert "0.75" in cells and "1.234" in cells and "0.500-1.000" in cells
    expect(panel.get_by_text("Moshi (FDB v1.0, published)")).to_be_visible()
    expect(panel.get_by_text("no offline equal", exact=False).first).to_be_visible()
    expect(panel.get_by_text("interruption_judge is empty", exact=False)).to_be_visible()


def legend_of(panel) -> set[str]:
    return set(panel.locator(".js-plotly-plot .legendtext").evaluate_all("nodes => nodes.map(n => n.textContent)"))


def test_the_automatic_benchmark_draws_an_examples_timeline_and_another_on_choice(page, base_url, seeded):
    engine, _, _ = seeded
    with session_scope(engine) as session:
        first = session.exec(select(DialogueSystem).order_by(DialogueSystem.id)).first().name
    log_in(page, base_url)
    panel = open_tab(page, "Automatic benchmark")
    plot = panel.locator(".js-plotly-plot")
    expect(plot).to_be_visible(timeout=SLOW_MS)
    # the first stored example: both channels, the system's words, the take-over decision
    expect(plot.locator(".gtitle")).to_contain_text(f"{first} / smooth_turn_taking / 0", timeout=SLOW_MS)
    assert {"user (input: what the system heard) waveform", "system (output) waveform", "system words (ASR)",
            "take-over turn (TOR 1)", "latency", "user text (the task's)"} <= legend_of(panel)
    assert plot.locator(".barlayer .point").count() > 5  # the bars were drawn
    # Another example, chosen in the dropdown: the interruption and the system talking on over it.
    chooser = page.get_by_label("Example (system / task / example)")
    chooser.click()
    page.get_by_role("option", name=f"{first} / user_interruption / 0").click()
    expect(plot.locator(".gtitle")).to_contain_text(f"{first} / user_interruption / 0", timeout=SLOW_MS)
    assert {"interruption", "stop time (went on)"} <= legend_of(panel)


def test_annotator_links_are_refused_for_a_study_whose_clips_have_no_audio(page, base_url):
    # The simulated study's clips are voice activity only: nobody could hear them.
    log_in(page, base_url)
    panel = open_tab(page, "Study overview")
    expect(panel.get_by_text(re.compile(r"clip\(s\) have no audio file: annotator links are refused"))).to_be_visible(
        timeout=SLOW_MS)
    panel = open_tab(page, "Annotator links")
    panel.get_by_role("button", name="Make links").click()
    expect(page.get_by_text(re.compile(r"clip\(s\) without an audio file: annotators could not hear them")).first
           ).to_be_visible(timeout=SLOW_MS)
    expect(panel.get_by_text("/annotate/session?token=")).to_have_count(0)


def test_human_evaluation_shows_table_ii_and_exclusion(page, base_url, seeded):
    engine, root, checkpoint = seeded
    data = StudyAnalysis(engine, "demo", root, checkpoint).data
    expected = table_two(human_summary(data)).set_index("statistic")["value"]

    log_in(page, base_url)
    panel = open_tab(page, "Human evaluation")
    row = panel.get_by_role("row").filter(has=page.get_by_text("natural preference rate", exact=True)).first
    expect(row).to_be_visible(timeout=SLOW_MS)
    cells = [c.strip() for c in row.get_by_role("gridcell").all_inner_texts()]
    assert float(cells[1]) == pytest.approx(round(expected["natural preference rate"], 4))
    # The careless simulated annotator (the last one) failed attention checks: suggested for exclusion,
    # named by pseudonym (never by the Prolific-ID column, demo-annotator-06 here)
    from storage.erasure import annotator_pseudonym
    from storage.models import Annotator

    with session_scope(engine) as session:
        careless = annotator_pseudonym(session.exec(select(Annotator.id).where(
            Annotator.external_id == "demo-annotator-06")).one())
    expect(panel.get_by_text(careless, exact=True).first).to_be_visible()
    expect(panel.get_by_text("demo-annotator-06")).to_have_count(0)
    effect = panel.get_by_role("grid", name="exclusion effect")
    annotators = effect.get_by_role("row").filter(has=page.get_by_text("annotators", exact=True)).first
    suggested = suggested_exclusions(annotator_table(data))
    assert careless in suggested
    kept = table_two(human_summary(data, suggested)).set_index("statistic")["value"]
    assert [c.strip() for c in annotators.get_by_role("gridcell").all_inner_texts()] == [
        "annotators", "6", str(int(kept["annotators"]))]

    # The researcher keeps everyone: "after exclusion" becomes the same as "all annotators".
    chooser = panel.locator(".block").filter(has=page.get_by_label("Exclude annotators"))
    chooser.get_by_title("Clear").click()
    panel.get_by_role("button", name="Apply exclusion").click()
    expect(annotators.get_by_role("gridcell").last).to_have_text("6", timeout=SLOW_MS)
    assert "Excluded: nobody" in panel.inner_text()


def test_session_view_plays_and_draws_the_timeline(page, base_url):
    log_in(page, base_url)
    panel = open_tab(page, "Session")
    expect(panel.locator(".js-plotly-plot")).to_be_visible(timeout=SLOW_MS)
    # Waveforms of both channels, voice activity, events and the judge's decisions on one axis.
    legend = panel.locator(".js-plotly-plot .legendtext").evaluate_all("nodes => nodes.map(n => n.textContent)")
    assert {"participant waveform", "system waveform", "participant voice activity", "system voice activity",
            "gap"} <= set(legend)
    assert {"judge agrees", "judge disagrees"} & set(legend)
    expect(panel.locator("audio, [data-testid='waveform-recording (both channels)'], .waveform-container").first
           ).to_be_attached(timeout=SLOW_MS)
    # The conversation's words beside the timeline: both channels' recognised words with their times
    # (the simulated sessions have no timing log with the system's own text).
    transcript = panel.locator(".session-transcript")
    expect(transcript).to_be_visible()
    expect(transcript.locator("p.turn.participant").first).to_contain_text(
        re.compile(r"^0:\d\d\.\d–0:\d\d\.\d participant: \w"))
    expect(transcript.locator("p.turn.system").first).to_contain_text("system (recognised):")
    assert transcript.bounding_box()["x"] > panel.locator(".js-plotly-plot").first.bounding_box()["x"] + 300


def test_the_session_player_plays_the_chosen_sessions_recording_and_says_its_length(page, base_url, seeded):
    engine, root, _ = seeded
    with session_scope(engine) as session:
        recordings = {r.session_id: resolve(r.path, root) for r in session.exec(select(Recording))}
    log_in(page, base_url)
    panel = open_tab(page, "Session")
    player = panel.locator("#session-player")
    audio = player.locator("audio")
    # the first session is chosen when the tab opens
    expect(audio).to_have_count(1, timeout=SLOW_MS)
    first = int(audio.get_attribute("data-session"))

    def shows(session_id: int) -> None:
        expect(audio).to_have_attribute("data-session", str(session_id), timeout=SLOW_MS)
        info = soundfile.info(str(recordings[session_id]))
        seconds = info.frames / info.samplerate
        expect(player.locator(".session-player-caption")).to_have_text(
            f"Recording of session {session_id} (both channels): {clock(seconds)} long")
        # the browser loaded that recording: its length is the file's
        page.wait_for_function("a => a.readyState >= 1", arg=audio.element_handle())
        assert audio.evaluate("a => a.duration") == pytest.approx(seconds, abs=0.01)
        assert audio.evaluate("a => a.src").startswith(base_url + "/analyze/gradio_api/file=")

    shows(first)
    # Choosing another session: the player's first change is to say what it is loading (the
    # session chosen before is no longer offered), then it plays the new session's recording.
    other = next(k for k in sorted(recordings) if k != first)
    page.evaluate("""() => {
        const box = document.querySelector('#session-player');
        const state = () => {
            const shown = box.querySelector('.session-player');
            if (!shown) return 'none';
            return (shown.querySelector('audio') ? 'plays ' : 'loading ') + shown.dataset.session;
        };
        window.playerStates = [state()];
        new MutationObserver(() => { const now = state();
                                     if (window.playerStates.at(-1) !== now) window.playerStates.push(now); })
            .observe(box, {childList: true, subtree: true, attributes: true});
    }""")
    panel.get_by_label("Session", exact=True).click()
    page.get_by_role("option", name=re.compile(f"^session {other}: ")).click()
    shows(other)
    assert page.evaluate("window.playerStates") == [f"plays {first}", f"loading {other}", f"plays {other}"]
    # Gradio's copy of the recording it serves is in a data root's private cache (which an erasure
    # empties), not in the temporary folder every local user can read
    served = Path(urllib.parse.unquote(audio.evaluate("a => a.src").split("/file=", 1)[1]))
    cache = Path(os.environ["GRADIO_TEMP_DIR"])
    assert served.is_relative_to(cache) and cache.parts[-2:] == (".cache", "gradio"), (served, cache)
    assert oct(cache.stat().st_mode & 0o777) == "0o700" and oct(cache.parent.stat().st_mode & 0o777) == "0o700"
    assert served.read_bytes() == recordings[other].read_bytes()


def test_report_download_from_the_dashboard(page, base_url):
    log_in(page, base_url)
    panel = open_tab(page, "Downloads")
    panel.get_by_role("button", name="Build the report").click()
    link = panel.locator("a[href$='/report-demo.zip']")
    expect(link).to_be_visible(timeout=SLOW_MS)
    with page.expect_download() as info:
        link.click()
    path = info.value.path()
    with zipfile.ZipFile(path) as archive:
        names = set(archive.namelist())
    assert {"report.html", "headline.json", "tables/human__table_ii.csv", "tables/judge__agreement.parquet"} <= names


def test_the_html_report_renders_its_figures(page, seeded, tmp_path):
    engine, root, checkpoint = seeded
    analysis = StudyAnalysis(engine, "demo", root, checkpoint)
    html_file = write_report(analysis, tmp_path / "report")
    page.goto(html_file.as_uri())
    expect(page.get_by_role("heading", name="Study report: Demo: talk to a spoken dialogue system")).to_be_visible()
    # Every figure of the study views, plus every recorded session's and examined example's timeline;
    # no network needed.
    expect(page.get_by_text("6 of 6 sessions shown one by one below: every session with a recording.")).to_be_visible()
    figures = sum(len(LAYOUT[k][1]) for k in LAYOUT) + 6 + len(EXAMINED_TASKS)
    expect(page.locator(".js-plotly-plot")).to_have_count(figures, timeout=SLOW_MS)


def test_a_researcher_erases_a_participant_after_seeing_what_goes(page, base_url, seeded):
    # Last in this file: it removes one of the seeded participants for good.
    from storage.models import ErasureRecord, Participant

    engine, root, _ = seeded
    with session_scope(engine) as session:
        participant = session.exec(select(Participant).order_by(Participant.id)).first()
        pseudonym, participant_id = participant.pseudonym, participant.id
    (root / ".cache" / "downloads").mkdir(parents=True, exist_ok=True)  # a report built before: emptied
    log_in(page, base_url)
    panel = open_tab(page, "Participants' data")
    panel.get_by_label("Prolific ID or pseudonym").fill("PRLFC-NOBODY")
    panel.get_by_role("button", name="Show what would be erased").click()
    expect(panel.locator("#erase-plan")).to_contain_text("has no participant 'PRLFC-NOBODY'", timeout=SLOW_MS)
    panel.get_by_label("Prolific ID or pseudonym").fill(pseudonym)
    panel.get_by_role("button", name="Show what would be erased").click()
    expect(panel.locator("#erase-plan")).to_contain_text("conversation_session:", timeout=SLOW_MS)
    panel.get_by_role("button", name="Erase", exact=True).click()  # not ticked: refused, nothing goes
    expect(panel.locator("#erase-done")).to_contain_text("Tick the confirmation first", timeout=SLOW_MS)
    with session_scope(engine) as session:
        assert session.get(Participant, participant_id) is not None
    panel.locator("#erase-confirm input").check()
    panel.get_by_role("button", name="Erase", exact=True).click()
    expect(panel.locator("#erase-done")).to_contain_text("Erased: ", timeout=SLOW_MS)
    expect(panel.locator("#erase-confirm input")).not_to_be_checked()
    with session_scope(engine) as session:
        assert session.get(Participant, participant_id) is None
        [record] = session.exec(select(ErasureRecord)).all()
        assert record.erased_by == RESEARCHER_USER and record.reason == "erased"
    panel.locator("#erase-confirm input").check()
    panel.get_by_role("button", name="Erase", exact=True).click()  # a second time: already erased
    expect(panel.locator("#erase-done")).to_contain_text("already erased", timeout=SLOW_MS)
    panel = open_tab(page, "Study overview")
    expect(panel.get_by_text("Erased: 1 participant erased by a researcher")).to_be_visible(timeout=SLOW_MS)
    expect(panel.get_by_text("nothing expires", exact=False)).to_be_visible(timeout=SLOW_MS)
