"""The first call after a fresh start, in a real browser: the app loads the cascade's models in
the background from start-up, with an empty model cache whose LLM another process is converting
(as when app workers start together: the app waits on that conversion's lock), the participant
gets to the call before the models are ready, the page says what it waits for within 2 s,
connects by itself once the other process has put the converted model in place and the models are
loaded, and the participant ends with a completion code (the one stored for them) and the study's
Prolific return link. (The other process's conversion is a copy of the suite's converted model: the
conversion itself, a minute of both cores, is what every first start of the suite already does.)

Also the participant's own topic: typed in the text box, said to the system, stored with the
session.
"""

from __future__ import annotations

import os
import shutil
import time
from contextlib import ExitStack
from pathlib import Path

from playwright.sync_api import expect, sync_playwright
from sqlmodel import select

from app import build_app
from storage.db import session_scope
from storage.models import ConversationSession, Participant
from studies.config import apply_config, parse_config
from systems.models import conversion_lock, packaged_llm_dir, packaged_llm_path
from tests.browser import serve
from tests.studies.test_browser_call import _context  # noqa: F401  (the fake-microphone Chromium)
from tests.studies.test_browser_call import fake_mic  # noqa: F401  (pytest fixture)

CALL_S = 15
DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_the_first_call_after_a_fresh_start_waits_for_the_models_then_ends_with_a_code(
        fake_mic, tmp_path, monkeypatch, caplog):  # noqa: F811
    caplog.set_level("INFO", logger="studies.call_manager")
    converted = packaged_llm_dir()  # in the suite's model cache
    monkeypatch.setenv("TURNTAKING_MODELS", str(tmp_path / "empty-model-cache"))
    target = packaged_llm_path()
    other_process = ExitStack()  # the conversion under way elsewhere, until the test finishes it
    other_process.enter_context(conversion_lock(target))
    data_root = tmp_path / "data"
    # As app.py's main does: the models of the studies' systems (the demo study's, here) start
    # loading in the background at once.
    app = build_app(database_url=f"sqlite:///{data_root / 'app.db'}", data_root=data_root,
                    researcher_password="pw", prepare_models=True)
    with session_scope(app.state.engine) as session:
        apply_config(session, parse_config({
            "name": "first", "title": "First call", "session_seconds": CALL_S,
            "topics": ["preparing for a hike", "a topic of your choice"],
            "completion_code": "CALLS-DONE",
            "completion_url": "https://app.prolific.com/submissions/complete?cc={code}",
            "systems": [{"name": "cascaded", "kind": "cascaded"}],
            "questionnaire": {},  # the code right after the call (the questions: test_questionnaire_page.py)
        }))
    mic_path, _, _ = fake_mic
    with serve(app) as base_url, sync_playwright() as playwright:
        context = _context(playwright, tmp_path, mic_path)
        try:
            page = context.pages[0] if context.pages else context.new_page()
            page.goto(f"{base_url}/participate/study/first?pid=first-1")
            page.click("#agree")
            # a topic of one's own: the text box appears with that choice
            expect(page.locator("#own-topic")).to_be_hidden()
            page.click("#topic-next")
            expect(page.locator("#error")).to_have_text("Please choose a topic.")
            page.get_by_label("a topic of your choice").check()
            expect(page.locator("#error")).to_have_text("")  # the request to choose is gone once chosen
            page.get_by_label("Your topic:").fill("bird watching in the city")
            page.click("#topic-next")
            expect(page.locator("#chosen-topic")).to_have_text("bird watching in the city")
            page.click("#check-mic")
            expect(page.locator("#mic-status")).to_have_text("We can hear you. You can start the call.",
                                                             timeout=15_000)
            page.click("#start")
            clicked = time.monotonic()
            expect(page.locator("#call-state")).to_contain_text("Preparing the system: loading", timeout=2_000)
            said = time.monotonic() - clicked
            waiting = page.locator("#call-state").inner_text()
            print(f"the page said what it waits for after {said:.2f} s: {waiting!r}")
            assert "step" in waiting and "of 4" in waiting
            # the other process's conversion ends: the app finds the model in place and loads it
            shutil.copytree(converted, target)
            other_process.close()
            expect(page.locator("#call-state")).to_have_text("Connected: talk now.", timeout=400_000)
            print(f"connected {time.monotonic() - clicked:.1f} s after Start call")
            target = DOCS / "screenshot-call.png" if os.environ.get("TURNTAKING_UPDATE_DOCS") == "1" else \
                tmp_path / "screenshot-call.png"
            page.set_viewport_size({"width": 900, "height": 820})
            page.screenshot(path=str(target), full_page=True)
            # the call ends by itself when its time is up; the last one gives the completion code
            expect(page.locator("#done-text")).to_contain_text("all systems", timeout=(CALL_S + 30) * 1000)
            expect(page.locator("#completion-code")).to_have_text("CALLS-DONE")
            expect(page.get_by_role("link", name="Return to Prolific")).to_have_attribute(
                "href", "https://app.prolific.com/submissions/complete?cc=CALLS-DONE")
        finally:
            other_process.close()
            context.close()
    # the log says when the systems of the studies there were at start-up are ready (the demo's;
    # they were by the time the call connected: the same models)
    ready = [r.getMessage() for r in caplog.records if "systems ready" in r.getMessage()]
    assert any(m.startswith("study demo: systems ready (cascaded, cascade-backchannel, predictive) after ") for m in ready), ready
    with session_scope(app.state.engine) as session:
        participant = session.exec(select(Participant).where(Participant.external_id == "first-1")).one()
        [conversation] = session.exec(
            select(ConversationSession).where(ConversationSession.participant_id == participant.id)).all()
        assert participant.completion_code == "CALLS-DONE"
        assert conversation.status == "complete"
        assert conversation.topic == "a topic of your choice: bird watching in the city"
    app.state.engine.dispose()
