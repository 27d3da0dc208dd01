"""The questionnaire on the call page, in Chromium at a phone's 360 px width with a fake microphone:
two short calls to a local OpenAI-Realtime server (a study minimum of 1 s), the questions after
each call and the ranking after the last, answered by keyboard (Tab, Space, arrows, Enter) where
the participant could; a Send with a question open names it and stores nothing; a closed tab
and a reload show the questions still due; the completion code comes only after the last answers.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import soundfile
from playwright.sync_api import expect, sync_playwright
from sqlmodel import select

from app import build_app
from storage.db import session_scope
from storage.models import ConversationSession, Participant, QuestionnaireResponse
from studies.config import apply_config, parse_config
from studies.questionnaire import DEFAULT_AFTER_CALL
from tests.browser import serve
from tests.studies.fake_servers import fake_realtime
from tests.studies.test_browser_call import _context, _pass_check
from tests.studies.test_calls_that_count import _latest_call_recorded

PID = "quest-1"
DOCS = Path(__file__).resolve().parents[2] / "docs"
SCALES = [item for item in DEFAULT_AFTER_CALL if item.kind == "scale"]


def _no_sideways_scroll(page) -> None:
    width = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert width[0] <= width[1], f"the page scrolls sideways at 360 px: {width}"


def _call(page, app, data_root) -> None:
    """From the topic: a call that records 1.5 s (more than the study's minimum), ended with End call."""
    page.get_by_label("preparing for a hike").check()
    page.click("#topic-next")
    if page.locator("#check-mic").is_visible():
        page.click("#check-mic")
    expect(page.locator("#start")).to_be_enabled(timeout=15_000)
    page.click("#start")
    expect(page.locator("#call-state")).to_have_text("Connected: talk now.", timeout=60_000)
    _latest_call_recorded(app.state.engine, data_root, PID, 1.5)
    page.click("#end")


def _rows(app) -> list[QuestionnaireResponse]:
    with session_scope(app.state.engine) as session:
        return list(session.exec(select(QuestionnaireResponse).join(Participant)
                                 .where(Participant.external_id == PID).order_by(QuestionnaireResponse.id)).all())


def _answer_by_keyboard(page, app) -> dict:
    """The questions after a call with keys only: the heading has the focus; Enter on the first
    answer sends too early and names what is open; then each scale by Space and arrows, the comment
    typed, Send by Enter. The answers given."""
    page.keyboard.press("Tab")  # from the step's heading to the first scale's first point
    page.keyboard.press("Space")
    page.keyboard.press("Enter")  # one answer of six: not sent
    expect(page.locator("#questionnaire-unanswered")).to_have_text(
        "Not sent yet: please answer " + ", ".join(f"“{item.text}”" for item in SCALES[1:]) + ".")
    expect(page.locator(f"#question-{SCALES[1].id}")).to_have_attribute("aria-invalid", "true")
    assert _rows(app) == []  # nothing stored
    # the focus went to the first open question
    assert page.evaluate("document.activeElement.name") == f"q-{SCALES[1].id}"
    answers = {SCALES[0].id: 1}
    for k, item in enumerate(SCALES[1:], 1):
        if k > 1:
            page.keyboard.press("Tab")
        page.keyboard.press("Space")
        for _ in range(k % 4):
            page.keyboard.press("ArrowRight")
        answers[item.id] = 1 + k % 4
    page.keyboard.press("Tab")
    page.keyboard.type("It waited a bit.")
    answers["comment"] = "It waited a bit."
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "questionnaire-submit"
    page.keyboard.press("Enter")
    return answers


def _answer_by_clicks(page) -> None:
    for item in SCALES:
        page.locator(f"#question-{item.id} input[value='3']").check()
    page.click("#questionnaire-submit")


def _current_step(page):
    return page.locator("#steps li[aria-current=step]")


def test_questions_after_each_call_and_the_last_then_the_code(tmp_path, monkeypatch):
    monkeypatch.setenv("TEST_REALTIME_KEY", "test-key")
    t = np.arange(2 * 48000) / 48000
    mic = tmp_path / "tone.wav"  # Chromium loops it as the microphone
    soundfile.write(str(mic), 0.3 * np.sin(2 * np.pi * 440 * t) * (t < 1.0), 48000, subtype="PCM_16")
    data_root = tmp_path / "data"
    app = build_app(database_url=f"sqlite:///{tmp_path / 'app.db'}", data_root=data_root, researcher_password="pw")
    with fake_realtime(reply_s=1.0) as (url, _), serve(app) as base_url:
        remote = {"kind": "realtime", "config": {"url": url, "api_key_env": "TEST_REALTIME_KEY"}}
        with session_scope(app.state.engine) as session:
            apply_config(session, parse_config({
                "name": "asked", "session_seconds": 30, "min_call_seconds": 1, "topics": ["preparing for a hike"],
                "completion_code": "ASKED-ALL", "systems": [{"name": "alpha", **remote}, {"name": "beta", **remote}]}))
        link = f"{base_url}/participate/study/asked?pid={PID}"
        with sync_playwright() as playwright:
            context = _context(playwright, tmp_path, mic)
            try:
                page = context.pages[0] if context.pages else context.new_page()
                page.set_viewport_size({"width": 360, "height": 800})
                page.goto(link)
                _pass_check(page)
                page.click("#agree")
                _call(page, app, data_root)

                # after the first call: its questions, in the step indicator too, and no code
                expect(page.locator("#step-questionnaire")).to_be_visible(timeout=30_000)
                expect(page.locator("#questionnaire-title")).to_have_text("Questions about call 1")
                expect(_current_step(page)).to_have_text("Call 1 of 2: questions")
                expect(page.locator("#steps li").last).to_have_text("Done")
                expect(page.locator("#steps li").nth(-2)).to_have_text("Last questions")
                expect(page.locator(f"#question-{SCALES[0].id} legend")).to_have_text(SCALES[0].text)
                expect(page.get_by_label("1: Strongly disagree").first).to_be_visible()
                _no_sideways_scroll(page)
                if os.environ.get("TURNTAKING_UPDATE_DOCS") == "1":  # the picture in docs/areas.md
                    page.screenshot(path=str(DOCS / "screenshot-questionnaire.png"), full_page=True)
                answers = _answer_by_keyboard(page, app)
                expect(page.locator("#done-text")).to_have_text(
                    "Thank you for your answers. You can now talk to the next system.")
                expect(page.locator("#completion")).to_be_hidden()
                [first] = _rows(app)
                assert first.answers == answers and first.part == f"call:{first.session_id}"

                page.click("#next")
                _call(page, app, data_root)
                expect(page.locator("#questionnaire-title")).to_have_text("Questions about call 2", timeout=30_000)
                expect(page.locator("#completion")).to_be_hidden()

                # the tab closed before answering; the study link again (its check and consent):
                # the same questions
                page.close()
                page = context.new_page()
                page.set_viewport_size({"width": 360, "height": 800})
                page.goto(link)
                _pass_check(page)
                page.click("#agree")
                expect(page.locator("#questionnaire-title")).to_have_text("Questions about call 2")
                _answer_by_clicks(page)

                # after the last call: the ranking, by place; a reload of the tab keeps it due
                expect(page.locator("#questionnaire-title")).to_have_text("Last questions")
                expect(_current_step(page)).to_have_text("Last questions")
                page.reload()
                expect(page.locator("#questionnaire-title")).to_have_text("Last questions")
                expect(page.locator("#step-check")).to_be_hidden()
                _no_sideways_scroll(page)
                expect(page.locator("#completion")).to_be_hidden()
                first_place, second_place = page.get_by_label("1st (first):"), page.get_by_label("2nd:")
                first_place.select_option(label="System 2")
                page.click("#questionnaire-submit")
                expect(page.locator("#questionnaire-unanswered")).to_contain_text("Not sent yet: please answer “Put")
                second_place.select_option(label="System 2")
                page.click("#questionnaire-submit")
                expect(page.locator("#questionnaire-unanswered")).to_contain_text("(each system once).")
                assert len(_rows(app)) == 2
                second_place.focus()
                page.keyboard.press("ArrowUp")  # System 1, by keyboard
                expect(second_place).to_have_value(page.evaluate("state.due.systems[0].label"))
                page.keyboard.press("Enter")

                expect(page.locator("#completion-code")).to_have_text("ASKED-ALL")
                expect(page.locator("#done-text")).to_have_text(
                    "Thank you for your answers. You have talked to all systems of this study.")
                expect(_current_step(page)).to_have_text("Done")
                _no_sideways_scroll(page)
            finally:
                context.close()
    with session_scope(app.state.engine) as session:
        calls = session.exec(select(ConversationSession.id, ConversationSession.system_id).join(Participant)
                             .where(Participant.external_id == PID).order_by(ConversationSession.id)).all()
    rows = _rows(app)
    print("stored:", [(r.part, r.answers, r.systems) for r in rows])
    assert [r.part for r in rows] == [f"call:{calls[0][0]}", f"call:{calls[1][0]}", "after_last"]
    assert rows[1].answers == {item.id: 3 for item in SCALES}
    met = [next(iter(r.systems)) for r in rows[:2]]  # the labels, in the order the calls met them
    assert rows[2].answers == {"most_natural": [met[1], met[0]]}  # "System 2" first
    assert rows[2].systems == {"system-1": "alpha", "system-2": "beta"} and set(met) == {"system-1", "system-2"}
    app.state.engine.dispose()
