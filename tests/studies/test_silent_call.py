"""A silent call, in a real browser: a participant whose microphone plays only a tone (headless
Chromium's fake audio capture looping a 440 Hz WAV) calls the cascade, which never answers. When
the call ends the session is marked not analysable, "no speech from the participant"; the
researcher's overview lists it with that reason, the statistics say it is left out, its Session
view shows the reason instead of an empty panel, and the report leaves it out with the reason.

Nothing here is timed (the verdict does not depend on the machine's load), so it need not run alone.
"""

from __future__ import annotations

import numpy as np
import pytest
import soundfile
from playwright.sync_api import expect, sync_playwright
from sqlmodel import select

from analysis.dashboard import RESEARCHER_USER
from analysis.report import write_report
from analysis.views import StudyAnalysis
from app import build_app
from storage.db import session_scope
from storage.models import ConversationSession, Participant
from studies.call_quality import NO_PARTICIPANT_SPEECH
from studies.config import apply_config, parse_config
from tests.browser import serve
from tests.studies.test_browser_call import _context, _wait_for_recorded_audio
from tests.waiting import wait_until

PASSWORD = "pw"
SLOW_MS = 60_000


@pytest.fixture(scope="module")
def tone_mic(tmp_path_factory):
    """48 kHz mono WAV: 2 s of a 440 Hz tone (Chromium loops it)."""
    t = np.arange(2 * 48000) / 48000
    path = tmp_path_factory.mktemp("mic") / "tone.wav"
    soundfile.write(str(path), 0.3 * np.sin(2 * np.pi * 440 * t), 48000, subtype="PCM_16")
    return path


@pytest.fixture(scope="module")
def served(tmp_path_factory, cascade_components):
    data_root = tmp_path_factory.mktemp("data")
    app = build_app(database_url=f"sqlite:///{data_root / 'app.db'}", data_root=data_root,
                    researcher_password=PASSWORD)
    with session_scope(app.state.engine) as session:
        # a 4 s call: any length counts for the participant here (the tone is what leaves it out)
        apply_config(session, parse_config({"name": "silent", "title": "A silent call", "session_seconds": 30,
                                            "min_call_seconds": 0, "questionnaire": {},  # no questions after it
                                            "systems": [{"name": "cascaded", "kind": "cascaded"}]}))
    app.state.participant_calls.cascade_components({}, loaded=cascade_components)
    with serve(app) as base_url:
        yield app, base_url, data_root
    app.state.engine.dispose()


def _session_row(engine, pid: str) -> ConversationSession | None:
    with session_scope(engine) as session:
        return session.exec(select(ConversationSession).join(Participant).where(Participant.external_id == pid)).first()


def test_a_call_with_only_a_tone_is_marked_and_left_out_with_its_reason(served, tone_mic, tmp_path):
    app, base_url, data_root = served
    engine = app.state.engine
    with sync_playwright() as playwright:
        context = _context(playwright, tmp_path, tone_mic)
        try:
            page = context.pages[0] if context.pages else context.new_page()
            page.goto(f"{base_url}/participate/study/silent?pid=silent-1")
            page.click("#agree")
            page.get_by_label("preparing for a hike").check()
            page.click("#topic-next")
            page.click("#check-mic")
            expect(page.locator("#start")).to_be_enabled(timeout=15_000)  # the tone is loud enough to hear
            page.click("#start")
            expect(page.locator("#call-state")).to_have_text("Connected: talk now.", timeout=SLOW_MS)
            _wait_for_recorded_audio(engine, data_root, "silent-1", 4.0)
            page.click("#end")
            expect(page.locator("#done-text")).to_contain_text("all systems", timeout=30_000)
            row = wait_until(lambda: (found := _session_row(engine, "silent-1")).status != "active" and found, 30,
                             "the ended call's session closed")
            assert (row.status, row.analysable, row.quality_reason) == ("complete", False, NO_PARTICIPANT_SPEECH)

            # The researcher's views of the study.
            page.goto(f"{base_url}/analyze/")
            page.get_by_label("username").fill(RESEARCHER_USER)
            page.get_by_label("password").fill(PASSWORD)
            page.get_by_role("button", name="Login").click()
            expect(page.get_by_role("tab", name="Study overview")).to_be_visible(timeout=SLOW_MS)
            page.get_by_label("Study", exact=True).click()
            page.get_by_role("option", name="silent").click()
            page.get_by_role("tab", name="Study overview", exact=True).click()
            overview = page.get_by_role("tabpanel").filter(visible=True).last
            expect(overview.get_by_text("Left out: 1 session(s) that are not analysable")).to_be_visible(
                timeout=SLOW_MS)
            excluded = overview.get_by_role("grid", name="excluded sessions")
            expect(excluded).to_be_visible()
            expect(excluded).to_contain_text(NO_PARTICIPANT_SPEECH)

            page.get_by_role("tab", name="Statistics per system", exact=True).click()
            statistics = page.get_by_role("tabpanel").filter(visible=True).last
            expect(statistics.get_by_text("No analysable session with voice activity yet.")).to_be_visible(
                timeout=SLOW_MS)
            expect(statistics.get_by_text("Left out: 1 session(s) that are not analysable")).to_be_visible()

            page.get_by_role("tab", name="Session", exact=True).click()
            session_panel = page.get_by_role("tabpanel").filter(visible=True).last
            expect(session_panel.get_by_text(f"Not analysable: {NO_PARTICIPANT_SPEECH}.")).to_be_visible(
                timeout=SLOW_MS)
            # the call's network over time is drawn (the page and the server measured it); then the
            # view is complete, and it has no timeline: nothing to draw on a call without speech
            expect(session_panel.locator("#session-network-plot .js-plotly-plot")).to_have_count(1, timeout=SLOW_MS)
            expect(session_panel.locator("#session-timeline .js-plotly-plot")).to_have_count(0)
        finally:
            context.close()

    report = write_report(StudyAnalysis(engine, "silent", data_root), tmp_path / "report")
    page_text = report.read_text()
    # its view in the report, marked (nothing to draw), and the overview lists it with the reason
    assert "1 of 1 sessions shown one by one below: every session with a recording; 1 of them are left out" \
        in page_text and f"<h2>Session {row.id}" in page_text
    assert f"Not analysable: {NO_PARTICIPANT_SPEECH}." in page_text
    assert "Left out: 1 session(s) that are not analysable" in page_text
    assert not (tmp_path / "report" / "tables" / "statistics__session_statistics.csv").exists()
    excluded = (tmp_path / "report" / "tables" / "overview__excluded_sessions.csv").read_text()
    assert NO_PARTICIPANT_SPEECH in excluded
