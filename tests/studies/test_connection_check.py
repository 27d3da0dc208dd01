"""The connection check before consent (studies/connection_check.py, studies/check_peer.py and
the call page's first step), with real Chromium (a fake microphone) and real aiortc over loopback:
the check passes with a direct connection, a round trip and a loss, and only then consent shows;
a connection that cannot be made fails within 15 s, with advice and the study's could-not-take-part
code; a page that is not secure says it needs https and creates nobody. The API refuses bad input
with one line, the study file refuses bad could-not-take-part settings, and the researcher's
overview counts who could not connect, and why. The call's ICE servers: GET /api/ice, and minted
TURN credentials stored nowhere.
"""

from __future__ import annotations

import json
import time

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from playwright.sync_api import expect, sync_playwright
from sqlmodel import select

from analysis.views import StudyAnalysis, overview_view
from app import build_app
from storage.db import session_scope
from storage.models import ConnectionCheck, Participant
from studies.call_manager import CallManager
from studies.config import StudyConfigError, apply_config, parse_config
from studies.ice import parse_ice_settings, turn_name
from studies.participant_api import participant_router
from tests.browser import CHROMIUM, CHROMIUM_ARGS, serve

STUDY = {"name": "checked", "title": "Connection check test", "session_seconds": 60,
         "could_not_take_part_code": "NOCONN",
         "could_not_take_part_url": "https://example.org/return?cc={code}",
         "systems": [{"name": "cascaded", "kind": "cascaded"}]}
INSECURE_HOST = "insecure.test"  # mapped to 127.0.0.1 in Chromium: a plain-http page that is no secure context


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    data_root = tmp_path_factory.mktemp("data")
    app = build_app(database_url=f"sqlite:///{data_root / 'app.db'}", data_root=data_root, researcher_password="pw")
    with session_scope(app.state.engine) as session:
        apply_config(session, parse_config(STUDY))
        apply_config(session, parse_config({"name": "counted", "systems": [{"name": "cascaded", "kind": "cascaded"}]}))
    with serve(app) as base_url:
        yield app, base_url


@pytest.fixture(scope="module")
def browser_context(tmp_path_factory):
    """One Chromium for the module: a fake microphone (a tone), allowed without asking."""
    args = list(CHROMIUM_ARGS) + ["--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
                                  f"--host-resolver-rules=MAP {INSECURE_HOST} 127.0.0.1"]
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("profile")), executable_path=str(CHROMIUM), headless=True, args=args,
            viewport={"width": 360, "height": 740})
        context.set_default_timeout(60_000)
        try:
            yield context
        finally:
            context.close()


def _checks(app, external_id: str) -> list[ConnectionCheck]:
    with session_scope(app.state.engine) as session:
        rows = session.exec(select(ConnectionCheck).where(ConnectionCheck.external_id == external_id)
                            .order_by(ConnectionCheck.id)).all()
        session.expunge_all()
        return rows


def _participants(app, external_id: str) -> int:
    with session_scope(app.state.engine) as session:
        return len(session.exec(select(Participant).where(Participant.external_id == external_id)).all())


def test_the_check_passes_over_loopback_and_then_consent_shows(served, browser_context):
    app, base_url = served
    page = browser_context.new_page()
    try:
        page.goto(f"{base_url}/participate/study/checked?pid=check-ok")
        expect(page.locator("#step-check h2")).to_have_text("Check your browser and connection")
        expect(page.locator("#steps li[aria-current=step]")).to_have_text("Check")
        result = page.locator("#check-result")
        expect(result).to_have_attribute("data-outcome", "ok", timeout=30_000)
        expect(result).to_have_attribute("data-candidate", "host")
        # consent only now, with what the check found above it
        expect(page.locator("#step-consent")).to_be_visible()
        expect(page.locator("#step-check")).to_be_hidden()
        expect(page.locator("#check-passed")).to_contain_text("you can take part")
        expect(page.locator("#check-passed")).to_contain_text("Connection: direct")
        expect(page.locator("#check-passed")).to_contain_text(" ms")
        expect(page.locator("#check-passed")).to_contain_text(" %")
        expect(page.locator("#cannot-take-part")).to_be_hidden()
        expect(page.locator("#steps li[aria-current=step]")).to_have_text("Consent")
        # readable at 360 px: nothing wider than the screen
        assert page.evaluate("document.documentElement.scrollWidth") <= 360
        # keyboard: the consent button is reachable and works with Enter
        page.locator("#agree").focus()
        page.keyboard.press("Enter")
        expect(page.locator("#step-topic")).to_be_visible()
    finally:
        page.close()
    [check] = _checks(app, "check-ok")
    print("check over loopback:", check.candidate_type, check.rtt_ms, "ms", check.loss)
    assert check.outcome == "ok" and check.reason is None and check.secure_context is True
    assert check.microphone == "ok" and check.candidate_type == "host" and check.relay_protocol is None
    assert check.rtt_ms is not None and 0 <= check.rtt_ms < 1000
    assert check.loss is not None and 0 <= check.loss <= 0.2
    assert "Chrome" in check.user_agent and len(check.token_sha256) == 64
    assert _participants(app, "check-ok") == 1  # from the consent, not from the check


def test_a_connection_that_cannot_be_made_fails_within_15_s(served, browser_context):
    """The page is given a relay-only configuration whose TURN server does not answer: no path to
    the server exists, and the check says so in time, with what to try and the study's code."""
    app, base_url = served
    page = browser_context.new_page()

    def unreachable_relay(route):
        answer = route.fetch()
        data = answer.json()
        data["rtc"] = {"iceServers": [{"urls": "turn:127.0.0.1:9?transport=udp", "username": "u", "credential": "c"}],
                       "iceTransportPolicy": "relay"}
        route.fulfill(response=answer, body=json.dumps(data))

    try:
        page.route("**/participate/api/checked/check", unreachable_relay)
        page.goto(f"{base_url}/participate/study/checked?pid=check-blocked")
        expect(page.locator("#check-status")).to_have_text("Connecting to the study's server…", timeout=30_000)
        connecting = time.monotonic()
        expect(page.locator("#check-result")).to_have_attribute("data-outcome", "failed", timeout=20_000)
        took = time.monotonic() - connecting
        print(f"failed {took:.1f} s after connecting began")
        assert took < 15
        expect(page.locator("#check-result")).to_have_attribute("data-candidate", "")
        expect(page.locator("#error")).to_contain_text("Your browser could not connect to the study's server")
        expect(page.locator("#check-advice")).to_contain_text("Another browser")
        expect(page.locator("#check-advice")).to_contain_text("Another network")
        expect(page.locator("#check-advice")).to_contain_text("VPN")
        expect(page.locator("#cannot-take-part")).to_be_visible()
        expect(page.locator("#cannot-take-part-code")).to_have_text("NOCONN")
        expect(page.locator("#cannot-take-part-link")).to_have_attribute("href", "https://example.org/return?cc=NOCONN")
        expect(page.locator("#step-consent")).to_be_hidden()
        expect(page.locator("#check-again")).to_be_visible()
    finally:
        page.close()
    [check] = _checks(app, "check-blocked")
    assert (check.outcome, check.reason, check.microphone, check.candidate_type) == ("failed", "no connection", "ok", None)
    assert _participants(app, "check-blocked") == 0


def test_a_page_that_is_not_secure_says_it_needs_https_and_creates_nobody(served, browser_context):
    app, base_url = served
    insecure = base_url.replace("127.0.0.1", INSECURE_HOST)
    page = browser_context.new_page()
    try:
        page.goto(f"{insecure}/participate/study/checked?pid=check-insecure")
        assert page.evaluate("window.isSecureContext") is False
        expect(page.locator("#check-result")).to_have_attribute("data-outcome", "failed")
        expect(page.locator("#error")).to_contain_text("https")
        expect(page.locator("#error")).to_contain_text("microphone")
        expect(page.locator("#check-advice")).to_be_hidden()  # no other browser helps: the link must change
        expect(page.locator("#cannot-take-part-code")).to_have_text("NOCONN")
        expect(page.locator("#agree")).to_be_hidden()
    finally:
        page.close()
    [check] = _checks(app, "check-insecure")
    assert (check.outcome, check.reason, check.secure_context, check.microphone) == ("failed", "insecure page", False, None)
    assert _participants(app, "check-insecure") == 0


def _start(base_url: str, study: str = "checked", **body) -> httpx.Response:
    return httpx.post(f"{base_url}/participate/api/{study}/check", json=body)


def _result(base_url: str, check_id: int, **body) -> httpx.Response:
    return httpx.post(f"{base_url}/participate/api/check/{check_id}/result", json=body)


OK = {"secure_context": True, "microphone": "ok", "candidate_type": "relay", "relay_protocol": "tcp",
      "rtt_ms": 84.5, "loss": 0.01, "outcome": "ok", "reason": None}


def test_the_api_refuses_bad_input_in_one_line(served):
    app, base_url = served
    assert _start(base_url, "no-such-study").status_code == 404
    assert "no study called" in _start(base_url, "no-such-study").json()["error"]
    assert _start(base_url, external_id=7).status_code == 400
    assert _start(base_url, user_agent="x" * 401).status_code == 400
    started = _start(base_url, external_id="api-1", user_agent="test agent").json()
    check_id, token = started["check_id"], started["token"]
    assert started["rtc"] == {"iceServers": [], "iceTransportPolicy": "all"}  # this app has no ICE servers
    assert started["limits"] == {"rtt_ms": 1000.0, "loss": 0.2}
    offer_url = f"{base_url}/participate/api/check/{check_id}/offer"
    # the token: wrong, missing, or another check's
    assert httpx.post(offer_url, json={"token": "wrong", "sdp": "v=0", "type": "offer"}).status_code == 403
    assert _result(base_url, check_id, **OK).status_code == 403
    assert _result(base_url, check_id + 1000, token=token, **OK).status_code == 403
    assert httpx.post(offer_url, json={"token": token, "type": "offer"}).status_code == 400
    bad_offer = httpx.post(offer_url, json={"token": token, "sdp": "not sdp", "type": "offer"})
    assert bad_offer.status_code == 400 and "offer could not be used" in bad_offer.json()["error"]
    for change, words in [
        ({"outcome": "maybe"}, "outcome must be one of ok, failed"),
        ({"secure_context": "yes"}, "secure_context must be true or false"),
        ({"candidate_type": "direct"}, "candidate_type must be one of host, srflx, prflx, relay"),
        ({"candidate_type": "host"}, "relay_protocol is only known for a relay candidate"),
        ({"rtt_ms": -1}, "rtt_ms must be a number from 0 to 60000"),
        ({"loss": 1.5}, "loss must be a number from 0 to 1"),
        ({"loss": True}, "loss must be a number"),
        ({"microphone": "fine"}, "microphone must be one of"),
        ({"loss": 0.5}, "a check that passed has a round trip within 1000 ms and loss within 20%"),
        ({"reason": "no audio"}, "a check that passed has no reason"),
        ({"outcome": "failed"}, "a failed check needs a reason"),
        ({"outcome": "failed", "reason": "it broke"}, "reason must be one of insecure page"),
        ({"outcome": "failed", "reason": "insecure page"}, "the reason 'insecure page' goes with secure_context false"),
        ({"colour": "blue"}, "unknown field(s) colour"),
    ]:
        refused = _result(base_url, check_id, token=token, **{**OK, **change})
        assert refused.status_code == 400 and words in refused.json()["error"], (change, refused.text)
        assert "\n" not in refused.json()["error"]
    stored = _result(base_url, check_id, token=token, **OK)
    assert stored.status_code == 200 and stored.json() == {"check_id": check_id, "outcome": "ok"}
    again = _result(base_url, check_id, token=token, **OK)
    assert again.status_code == 409 and "stored already" in again.json()["error"]
    late_offer = httpx.post(offer_url, json={"token": token, "sdp": "v=0", "type": "offer"})
    assert late_offer.status_code == 409
    [check] = _checks(app, "api-1")
    assert (check.candidate_type, check.relay_protocol, check.rtt_ms, check.loss) == ("relay", "tcp", 84.5, 0.01)
    # a failed check's answer carries what the page shows
    failed = _start(base_url, external_id="api-2").json()
    answer = _result(base_url, failed["check_id"], token=failed["token"], secure_context=True, microphone="denied",
                     outcome="failed", reason="no microphone").json()
    assert answer["could_not_take_part"] == {"code": "NOCONN", "url": "https://example.org/return?cc=NOCONN"}


def test_bad_could_not_take_part_settings_are_refused_in_one_line():
    base = {"name": "s", "systems": [{"name": "cascaded", "kind": "cascaded"}]}
    for extra, words in [
        ({"could_not_take_part_code": ""}, "'could_not_take_part_code' must be a non-empty text"),
        ({"could_not_take_part_code": 12}, "'could_not_take_part_code' must be a non-empty text"),
        ({"could_not_take_part_url": "www.example.org"}, "'could_not_take_part_url' must be an http(s) link"),
        ({"could_not_take_part_url": "https://example.org/?cc={code}"}, "there is no 'could_not_take_part_code'"),
    ]:
        with pytest.raises(StudyConfigError) as refused:
            parse_config({**base, **extra}, source="study file s.yaml")
        assert words in str(refused.value) and str(refused.value).startswith("study file s.yaml") \
            and "\n" not in str(refused.value)
    parsed = parse_config({**base, "could_not_take_part_code": " C1 ", "could_not_take_part_url": "https://x.org/{code}"})
    assert (parsed.could_not_take_part_code, parsed.could_not_take_part_url) == ("C1", "https://x.org/{code}")
    assert parsed.study_json()["could_not_take_part_code"] == "C1"
    assert "could_not_take_part_code" not in parse_config(base).study_json()


def test_the_overview_counts_who_could_not_connect_and_why(served):
    app, base_url = served
    plan = [("p-1", "failed", "no connection"), ("p-1", "failed", "no connection"), ("p-1", "ok", None),
            ("p-2", "failed", "no connection"), ("p-3", "failed", "no microphone"), ("p-4", "failed", "insecure page"),
            (None, "failed", "no connection"), ("p-5", "pending", None)]
    for external, outcome, reason in plan:
        started = _start(base_url, "counted", **({"external_id": external} if external else {})).json()
        if outcome == "pending":
            continue
        body = ({**OK, "candidate_type": "host", "relay_protocol": None} if outcome == "ok" else
                {"secure_context": reason != "insecure page", "outcome": "failed", "reason": reason,
                 "microphone": "denied" if reason == "no microphone" else None})
        assert _result(base_url, started["check_id"], token=started["token"], **body).status_code == 200
    view = overview_view(StudyAnalysis(app.state.engine, "counted", None, compute=False))
    table = view.tables["connection_checks"]
    assert table.to_dict("records") == [
        {"reason": "insecure page", "checks": 1, "distinct_external_ids": 1},
        {"reason": "no connection", "checks": 4, "distinct_external_ids": 2},
        {"reason": "no microphone", "checks": 1, "distinct_external_ids": 1},
    ]
    # p-1 passed in the end; p-2, p-3 and p-4 never did
    assert view.headline["could_not_connect"] == {"checks": 8, "passed": 1, "failed": 6,
                                                  "external_ids_never_passed": 3}
    assert any("3 people" in note for note in view.notes)


def test_the_calls_ice_servers_need_the_secret_and_minted_credentials_are_stored_nowhere(tmp_path, engine, caplog):
    turn_secret = "turn-shared-secret-for-the-test"
    ice = parse_ice_settings([{"urls": "turn:127.0.0.1:3478?transport=tcp", "secret_env": "TURN_SECRET"}],
                             "test", {"TURN_SECRET": turn_secret})
    with session_scope(engine) as session:
        apply_config(session, parse_config(STUDY))
    app = FastAPI()
    app.include_router(participant_router(engine, tmp_path, CallManager(engine, tmp_path), ice=ice))
    caplog.set_level("DEBUG")
    with TestClient(app) as client:
        consent = client.post("/participate/api/checked/consent", json={"external_id": "ice-1"}).json()
        pseudonym, secret = consent["participant"], consent["secret"]
        assert client.get(f"/participate/api/ice/{pseudonym}").status_code == 403
        assert client.get(f"/participate/api/ice/{pseudonym}", headers={"X-Participant-Secret": "x"}).status_code == 403
        answer = client.get(f"/participate/api/ice/{pseudonym}", headers={"X-Participant-Secret": secret})
        assert answer.status_code == 200 and answer.headers["cache-control"] == "no-store"
        [server] = answer.json()["iceServers"]
        # the TURN server (and its log) sees a hash of the pseudonym, never the pseudonym itself
        assert server["urls"] == ["turn:127.0.0.1:3478?transport=tcp"]
        assert server["username"].endswith(f":{turn_name(pseudonym)}") and pseudonym not in server["username"]
        started = client.post("/participate/api/checked/check", json={"external_id": "ice-1"}).json()
        [check_server] = started["rtc"]["iceServers"]
        check_name = turn_name(f"check-{started['check_id']}")
        assert check_server["username"].endswith(f":{check_name}")
    database = b"".join(path.read_bytes() for path in tmp_path.glob("studies.db*"))  # with its WAL
    for minted in (server["credential"], check_server["credential"], turn_secret, started["token"]):
        assert minted.encode() not in database
        assert minted not in caplog.text
