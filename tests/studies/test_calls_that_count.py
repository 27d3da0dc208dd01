"""Calls that count: a call shorter than the study's minimum is not a finished conversation for the
participant. With `short_calls: repeat` (the default) they are told so and asked to call the same
system again, and the completion code waits; with `skip` they move on without it counting. A
finished participant who opens the study link again sees their code, not the check and consent.

The rule on the participant API with stored sessions and recordings; then in Chromium with a fake
microphone and the cascade: a too-short call, the same system again, the code, the link again.
"""

from __future__ import annotations

import re

import httpx
import pytest
import soundfile
from playwright.sync_api import expect, sync_playwright
from sqlmodel import select

from app import build_app
from storage.db import session_scope
from storage.models import ConversationSession, DialogueSystem, Participant, Recording
from storage.records import end_session, get_participant, start_session
from studies.config import apply_config, parse_config
from studies.sessions import CALL_KIND, call_relpath
from tests.browser import serve
from tests.studies.test_browser_call import _context, _pass_check  # the fake-microphone Chromium
from tests.studies.test_browser_call import fake_mic  # noqa: F401  (pytest fixture)
from tests.waiting import wait_until

MINIMUM_S = 8
SYSTEMS = [{"name": "alpha", "kind": "cascaded"}, {"name": "beta", "kind": "cascaded"}]
LABELS = {"system-1": "alpha", "system-2": "beta"}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(app, base URL, data root); the studies of every test here."""
    data_root = tmp_path_factory.mktemp("data")
    app = build_app(database_url=f"sqlite:///{data_root / 'app.db'}", data_root=data_root, researcher_password="pw")
    # no questions after the calls: the rule for short calls alone (tests/studies/test_questionnaire_api.py)
    common = {"session_seconds": 20, "min_call_seconds": MINIMUM_S, "topics": ["preparing for a hike"],
              "questionnaire": {}}
    with session_scope(app.state.engine) as session:
        apply_config(session, parse_config({"name": "again", "completion_code": "ALL-COUNTED", "systems": SYSTEMS,
                                            **common}))
        apply_config(session, parse_config({"name": "onward", "short_calls": "skip", "completion_code": "ALL-MET",
                                            "systems": SYSTEMS, **common}))
        apply_config(session, parse_config({"name": "short", "completion_code": "COUNTED",
                                            "systems": [{"name": "cascaded", "kind": "cascaded"}], **common}))
    with serve(app) as base_url:
        yield app, base_url, data_root
    app.state.engine.dispose()


def _consent(base_url: str, study: str, pid: str) -> tuple[dict, dict]:
    """The participant's state and the headers that act for them."""
    answer = httpx.post(f"{base_url}/participate/api/{study}/consent", json={"external_id": pid})
    assert answer.status_code == 200, answer.text
    state = answer.json()
    return state, {"X-Participant-Secret": state.pop("secret")}


def _finished_call(app, pseudonym: str, label: str, seconds: float | None) -> int:
    """A complete call of the system `label` whose two-channel recording lasts `seconds` (None:
    no recording), stored as a call's end stores it; its session id."""
    with session_scope(app.state.engine) as session:
        participant = get_participant(session, pseudonym)
        system = session.exec(select(DialogueSystem).where(DialogueSystem.study_id == participant.study_id,
                                                          DialogueSystem.name == LABELS[label])).one()
        conversation = start_session(session, participant, system, "preparing for a hike")
        if seconds is not None:
            session.add(Recording(session_id=conversation.id, path=call_relpath(conversation.id), sha256="0" * 64,
                                  kind=CALL_KIND, sample_rate=16000, channels=2, system_channel=1,
                                  duration_s=seconds))
        end_session(session, conversation, "complete")
        return conversation.id


def _state(base_url: str, pseudonym: str) -> dict:
    answer = httpx.get(f"{base_url}/participate/api/participant/{pseudonym}")
    assert answer.status_code == 200, answer.text
    return answer.json()


def _offer_refused(base_url: str, state: dict, headers: dict, label: str) -> str:
    offer = {"participant": state["participant"], "system": label, "topic": "preparing for a hike",
             "sdp": "v=0", "type": "offer"}
    answer = httpx.post(f"{base_url}/participate/api/offer", json=offer, headers=headers)
    assert answer.status_code == 409, answer.text
    return answer.json()["error"]


def _finished_on_the_page(base_url: str, study: str, pid: str) -> bool:
    return '"finished":' in httpx.get(f"{base_url}/participate/study/{study}?pid={pid}").text


def test_a_short_call_is_asked_again_and_the_code_waits_for_calls_that_count(served):
    app, base_url, _ = served
    state, headers = _consent(base_url, "again", "again-1")
    first, second = state["next_systems"][0], ({"system-1", "system-2"} - set(state["next_systems"])).pop()
    who = state["participant"]

    # a complete call without a recording lasted nothing that counts; then one of 7.9 s
    _finished_call(app, who, first, None)
    assert _state(base_url, who)["last_call_too_short"]["seconds"] == 0.0
    short = _finished_call(app, who, first, MINIMUM_S - 0.1)
    state = _state(base_url, who)
    assert state["last_call_too_short"] == {"session_id": short, "system": first, "seconds": 7.9,
                                            "minimum": MINIMUM_S}
    assert (state["systems_done"], state["systems_skipped"], state["next_systems"]) == ([], [], [first])
    assert "completion" not in state
    assert "is not the next one for you" in _offer_refused(base_url, state, headers, second)
    assert not _finished_on_the_page(base_url, "again", "again-1")

    _finished_call(app, who, first, MINIMUM_S)  # exactly the minimum counts
    state = _state(base_url, who)
    assert "last_call_too_short" not in state
    assert (state["systems_done"], state["next_systems"]) == ([first], [second])
    _finished_call(app, who, second, 30.0)
    state = _state(base_url, who)
    assert state["systems_done"] == ["system-1", "system-2"] and state["next_systems"] == []
    assert state["completion"] == {"code": "ALL-COUNTED"}
    assert _finished_on_the_page(base_url, "again", "again-1")
    assert not _finished_on_the_page(base_url, "again", "someone-else")
    page = httpx.get(f"{base_url}/participate/study/again?pid=again-1").text
    # the code, but not the pseudonym: a link with a pid is not the secret given at consent
    assert '"code": "ALL-COUNTED"' in page and who not in page


def test_with_skip_a_short_call_moves_on_without_counting(served):
    app, base_url, _ = served
    state, headers = _consent(base_url, "onward", "onward-1")
    first, second = state["next_systems"][0], ({"system-1", "system-2"} - set(state["next_systems"])).pop()
    who = state["participant"]

    _finished_call(app, who, first, 3.0)
    state = _state(base_url, who)
    assert (state["systems_done"], state["systems_skipped"], state["next_systems"]) == ([], [first], [second])
    assert state["last_call_too_short"]["seconds"] == 3.0 and "completion" not in state
    assert "is not the next one for you" in _offer_refused(base_url, state, headers, first)  # not asked again

    _finished_call(app, who, second, 12.0)
    state = _state(base_url, who)
    assert (state["systems_done"], state["systems_skipped"], state["next_systems"]) == ([second], [first], [])
    assert state["completion"] == {"code": "ALL-MET"} and "last_call_too_short" not in state
    assert _finished_on_the_page(base_url, "onward", "onward-1")


def _latest_call_recorded(engine, data_root, pid: str, seconds: float, timeout_s: float = 60) -> None:
    """Until the participant's latest call has `seconds` of audio in its file."""

    def recorded() -> bool:
        with session_scope(engine) as session:
            latest = session.exec(select(ConversationSession.id).join(Participant)
                                  .where(Participant.external_id == pid).order_by(ConversationSession.id.desc())).first()
        try:
            return latest is not None and soundfile.info(str(data_root / call_relpath(latest))).duration >= seconds
        except (OSError, RuntimeError):  # not written yet
            return False

    wait_until(recorded, timeout_s, what=f"{seconds} s of audio in the latest call of {pid}")


def _call(page, app, data_root, seconds: float) -> None:
    """From the instructions: a call that records `seconds` of audio, ended with End call."""
    expect(page.locator("#start")).to_be_enabled(timeout=15_000)
    page.click("#start")
    expect(page.locator("#call-state")).to_have_text("Connected: talk now.", timeout=60_000)
    _latest_call_recorded(app.state.engine, data_root, "short-1", seconds)
    page.click("#end")


def test_a_too_short_call_is_repeated_then_the_code_and_the_link_again_shows_it(
        served, fake_mic, cascade_components, tmp_path):  # noqa: F811
    app, base_url, data_root = served
    app.state.participant_calls.cascade_components({}, loaded=cascade_components)
    mic_path, _, _ = fake_mic
    link = f"{base_url}/participate/study/short?pid=short-1"
    with sync_playwright() as playwright:
        context = _context(playwright, tmp_path, mic_path)
        try:
            page = context.pages[0] if context.pages else context.new_page()
            page.goto(link)
            _pass_check(page)
            page.click("#agree")
            page.get_by_label("preparing for a hike").check()
            page.click("#topic-next")
            page.click("#check-mic")
            _call(page, app, data_root, 3.0)
            expect(page.locator("#done-text")).to_have_text(re.compile(
                r"That call lasted [3-6] seconds; a conversation needs at least 8 seconds to count\. "
                r"Please call System 1 again\."), timeout=30_000)
            expect(page.locator("#completion")).to_be_hidden()
            expect(page.locator("#next")).to_have_text("Call System 1 again")
            expect(page.locator("#steps li[aria-current=step]")).to_have_text("Call 1 of 1: up next")

            page.click("#next")
            page.get_by_label("preparing for a hike").check()
            page.click("#topic-next")
            _call(page, app, data_root, MINIMUM_S + 1)
            # (a call on a loaded machine may come out late and be the server's: the page then says
            # so first, and the code comes all the same)
            expect(page.locator("#done-text")).to_have_text(re.compile(
                r"^(Our server was too busy during that call[^:]*: that was not your fault\. )?"
                r"You have talked to all systems of this study\.$"), timeout=30_000)
            expect(page.locator("#completion-code")).to_have_text("COUNTED")

            # the same tab with ?p= and its secret, and the study link (its pid) in a new tab: the code
            pseudonym = page.evaluate("state.participant")
            for again, url in ((page, f"{base_url}/participate/study/short?p={pseudonym}"), (context.new_page(), link)):
                again.goto(url)
                expect(again.locator("#step-done")).to_be_visible()
                expect(again.locator("#completion-code")).to_have_text("COUNTED")
                expect(again.locator("#next")).to_be_hidden()
                for step in ("#step-check", "#step-consent"):
                    expect(again.locator(step)).to_be_hidden()
        finally:
            context.close()
    with session_scope(app.state.engine) as session:
        calls = session.exec(select(ConversationSession.status, Recording.duration_s)
                             .join(Recording, Recording.session_id == ConversationSession.id)
                             .join(Participant).where(Participant.external_id == "short-1", Recording.kind == CALL_KIND)
                             .order_by(ConversationSession.id)).all()
    print("the two calls (status, seconds):", calls)
    assert [status for status, _ in calls] == ["complete", "complete"]
    assert calls[0][1] < MINIMUM_S <= calls[1][1]
