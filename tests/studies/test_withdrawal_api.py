"""The participant's withdrawal routes without a browser (studies/withdrawal_api.py): optional
consents stored with their times and withdrawn one by one, refusals that remove nothing (a wrong
secret, an unknown item), the withdrawal answered with the study's code, a second one "already",
and one who withdrew not enrolled again; on SQLite and on PostgreSQL. (The withdrawal during a
call, in a browser, on both databases: test_withdrawal_browser.py.)"""

from __future__ import annotations

import json
import re
from datetime import datetime

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from sqlmodel import select

from app import build_app
from storage.db import session_scope
from storage.models import ErasureRecord, Participant
from studies.config import apply_config, parse_config
from studies.withdrawal_api import ALREADY
from tests.databases import _create_database, _database_url, _drop_database

ITEMS = [{"id": "share", "text": "My recordings may be shared with other researchers.", "share": "researchers"},
         {"id": "publish", "text": "My recordings may be published.", "share": "public"}]


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def client(request, tmp_path_factory):
    """One app per database for the module (SQLite file, then PostgreSQL from the migrated template)."""
    root = tmp_path_factory.mktemp("withdrawal")
    if request.param == "sqlite":
        url, drop = f"sqlite:///{root / 'app.db'}", lambda: None
    else:
        server = request.getfixturevalue("postgres_server_url")
        name = _create_database(server, template=request.getfixturevalue("postgres_head_template"))
        url, drop = _database_url(server, name), lambda: _drop_database(server, name)
    app = build_app(database_url=url, data_root=root, researcher_password="pw")
    with session_scope(app.state.engine) as session:
        apply_config(session, parse_config({
            "name": "w", "withdrawn_code": "GONE1", "withdrawn_url": "https://example.org/return?cc={code}",
            "consent_items": ITEMS, "systems": [{"name": "one", "kind": "cascaded"}]}))
        apply_config(session, parse_config({"name": "plain", "systems": [{"name": "one", "kind": "cascaded"}]}))
    with TestClient(app) as client:
        client.engine = app.state.engine
        yield client
    app.state.engine.dispose()
    drop()


def consent(client, pid: str, consents=None, study: str = "w"):
    body = {"external_id": pid} if consents is None else {"external_id": pid, "consents": consents}
    return client.post(f"/participate/api/{study}/consent", json=body)


def counts(client) -> dict[str, int]:
    with client.engine.connect() as connection:
        return {t: connection.exec_driver_sql(f'SELECT COUNT(*) FROM "{t}"').scalar()
                for t in sa.inspect(connection).get_table_names()}


def test_optional_consents_are_stored_with_their_times_and_withdrawn_one_by_one(client):
    answer = consent(client, "PID-ITEMS", {"share": True, "publish": False})
    assert answer.status_code == 200, answer.text
    who, headers = answer.json()["participant"], {"X-Participant-Secret": answer.json()["secret"]}
    with session_scope(client.engine) as session:
        stored = session.exec(select(Participant).where(Participant.pseudonym == who)).one().consents
    assert {k: v["agreed"] for k, v in stored.items()} == {"share": True, "publish": False}
    assert all(datetime.fromisoformat(v["at"]).tzinfo is not None for v in stored.values())
    listed = client.get(f"/participate/api/consents/{who}", headers=headers).json()["items"]
    assert [(i["id"], i["agreed"]) for i in listed] == [("share", True), ("publish", False)]
    assert client.post(f"/participate/api/consent-item/{who}", json={"item": "share"}, headers=headers).json() == \
        {"item": "share", "agreed": False}
    listed = client.get(f"/participate/api/consents/{who}", headers=headers).json()["items"]
    assert [(i["id"], i["agreed"]) for i in listed] == [("share", False), ("publish", False)]
    with session_scope(client.engine) as session:  # withdrawing one consent removes nothing else
        assert session.exec(select(Participant).where(Participant.pseudonym == who)).one().external_id == "PID-ITEMS"


@pytest.mark.parametrize(("consents", "said"), [
    ({"sell": True}, "unknown consent item(s) sell (the study's: publish, share)"),
    ({"share": "yes"}, "each consent item's answer must be true or false"),
    (["share"], "'consents' must map each consent item's id to true or false"),
])
def test_a_bad_consent_answer_is_refused_and_stores_nothing(client, consents, said):
    before = counts(client)
    answer = consent(client, "PID-BAD", consents)
    assert (answer.status_code, answer.json()) == (400, {"error": said})
    assert counts(client) == before


def test_withdrawal_is_refused_without_the_secret_answered_once_and_not_undone_by_consenting_again(client):
    answer = consent(client, "PID-LEAVES", {"share": True})
    who, secret = answer.json()["participant"], answer.json()["secret"]
    before = counts(client)
    for headers in ({}, {"X-Participant-Secret": "not-the-secret"}):
        refused = client.post(f"/participate/api/withdraw/{who}", headers=headers)
        assert refused.status_code == 403 and "secret given at consent" in refused.json()["error"]
        refused = client.post(f"/participate/api/consent-item/{who}", json={"item": "share"}, headers=headers)
        assert refused.status_code == 403
    unknown = client.post("/participate/api/withdraw/nobody-has-this-pseudonym",
                          headers={"X-Participant-Secret": secret})
    assert unknown.status_code == 403  # the same answer as a wrong secret: nothing learnt
    bad_item = client.post(f"/participate/api/consent-item/{who}", json={"item": "sell"},
                           headers={"X-Participant-Secret": secret})
    assert bad_item.status_code == 400 and "no consent item 'sell'" in bad_item.json()["error"]
    assert counts(client) == before

    done = client.post(f"/participate/api/withdraw/{who}", headers={"X-Participant-Secret": secret})
    assert (done.status_code, done.json()) == (200, {"withdrawn": True, "withdrawn_code": "GONE1",
                                                     "withdrawn_url": "https://example.org/return?cc=GONE1"})
    with session_scope(client.engine) as session:
        assert session.exec(select(Participant).where(Participant.pseudonym == who)).first() is None
        record = session.exec(select(ErasureRecord).order_by(ErasureRecord.id)).all()[-1]
        assert (record.reason, record.erased_by, record.counts["participant"]) == ("withdrawn", "participant", 1)
    again = client.post(f"/participate/api/withdraw/{who}", headers={"X-Participant-Secret": secret})
    assert (again.status_code, again.json()) == (410, {"error": ALREADY})
    back = consent(client, "PID-LEAVES", {"share": True})
    assert back.status_code == 409 and "already withdrawn" in back.json()["error"]
    # a study without a withdrawn code answers only that it is done
    plain = consent(client, "PID-PLAIN", study="plain").json()
    assert client.post(f"/participate/api/withdraw/{plain['participant']}",
                       headers={"X-Participant-Secret": plain["secret"]}).json() == {"withdrawn": True}


def _page_data(html: str) -> dict:
    """The JSON a page is served with (`const STUDY = {...};`)."""
    return json.loads(re.search(r"const STUDY = (\{.*?\});\n", html).group(1))


def test_the_withdrawal_page_is_served_for_a_study_and_404_otherwise(client):
    page = client.get("/participate/withdraw/w")
    assert page.status_code == 200 and "Withdraw from the study" in page.text
    assert page.headers["cache-control"] == "no-store"
    assert _page_data(page.text)["has_withdrawn_code"] is True
    assert _page_data(client.get("/participate/withdraw/plain").text)["has_withdrawn_code"] is False
    assert client.get("/participate/withdraw/nope").status_code == 404


def test_the_study_page_carries_the_consent_items_and_whether_a_withdrawn_code_follows(client):
    data = _page_data(client.get("/participate/study/w").text)
    assert data["consent_items"] == [{"id": i["id"], "text": i["text"]} for i in ITEMS]
    assert data["has_withdrawn_code"] is True
    plain = _page_data(client.get("/participate/study/plain").text)
    assert (plain["consent_items"], plain["has_withdrawn_code"]) == ([], False)


def test_the_link_for_later_withdraws_one_consent_then_everything(browser, tmp_path):
    from playwright.sync_api import expect

    from tests.browser import serve

    app = build_app(database_url=f"sqlite:///{tmp_path / 'app.db'}", data_root=tmp_path, researcher_password="pw")
    with session_scope(app.state.engine) as session:
        apply_config(session, parse_config({"name": "later", "withdrawn_code": "GONE2", "consent_items": ITEMS,
                                            "systems": [{"name": "one", "kind": "cascaded"}]}))
    with serve(app) as base_url, TestClient(app) as client:
        given = consent(client, "PID-LATER", {"share": True, "publish": True}, study="later").json()
        page = browser.new_page()
        page.goto(f"{base_url}/participate/withdraw/later#bad")  # an incomplete link: said, nothing done
        expect(page.locator("#error")).to_contain_text("This link is incomplete")
        page.close()
        page = browser.new_page()  # (only its fragment differs: the same page would not load again)
        page.goto(f"{base_url}/participate/withdraw/later#{given['participant']}.{given['secret']}")
        expect(page.locator("#items li")).to_have_count(2)
        page.locator("#items li").filter(has_text="published").get_by_role("button").click()
        expect(page.locator("#items li")).to_have_count(1)  # only "share" is left to withdraw
        page.get_by_role("button", name="Withdraw and delete my data").click()
        expect(page.locator("#code-note")).to_have_text("Afterwards you get a code to return the study on Prolific.")
        page.get_by_role("button", name="Cancel").click()  # asked first: nothing happens
        with session_scope(app.state.engine) as session:
            row = session.exec(select(Participant).where(Participant.external_id == "PID-LATER")).one()
            assert {k: v["agreed"] for k, v in row.consents.items()} == {"share": True, "publish": False}
        page.get_by_role("button", name="Withdraw and delete my data").click()
        page.locator("#confirm-yes").click()
        expect(page.get_by_role("heading", name="You have withdrawn from the study")).to_be_visible()
        expect(page.locator("#withdrawn-code")).to_have_text("GONE2")
        page.reload()  # the link again: told it is done
        expect(page.locator("#error")).to_have_text(ALREADY)
        page.close()
    with session_scope(app.state.engine) as session:
        assert session.exec(select(Participant).where(Participant.external_id == "PID-LATER")).first() is None
    app.state.engine.dispose()


@pytest.mark.alone  # a real-time call whose timing is checked: not beside the parallel run
def test_a_withdrawal_leaves_another_participants_running_call_alone(tmp_path, monkeypatch):
    """One participant withdraws while another's call runs (the stand-in Realtime server answers with
    speech): the erasure and its vacuum do not end, fail or spoil the running call."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from speech.audio import resample
    from storage.models import ConversationSession
    from studies.sessions import call_relpath
    from tests.browser import serve
    from tests.rendered_speech import Utterance, render_speech, speak
    from tests.studies.aiortc_participant import participant_call
    from tests.studies.fake_servers import fake_realtime
    from tests.waiting import wait_until

    monkeypatch.setenv("TEST_REALTIME_KEY", "test-key")
    app = build_app(database_url=f"sqlite:///{tmp_path / 'app.db'}", data_root=tmp_path, researcher_password="pw")
    engine = app.state.engine
    mic = render_speech([Utterance(0, 0.3, "i would like to go hiking in the mountains"),
                         Utterance(0, 3.8, "what should i bring with me")], duration=7.0, channels=1).samples[0]
    answer = resample(speak("bring water and good shoes", voice="en-us+f3")[None, :], 16000, 24000)[0]
    with fake_realtime(reply_audio=answer) as (url, _), serve(app) as base_url:
        with session_scope(engine) as session:
            apply_config(session, parse_config({
                "name": "side", "min_call_seconds": 2, "topics": ["hiking"],
                "systems": [{"name": "remote", "kind": "realtime",
                             "config": {"url": url, "api_key_env": "TEST_REALTIME_KEY"}}]}))
        with TestClient(app) as client:
            calling = consent(client, "PID-CALLING", study="side").json()
            leaving = consent(client, "PID-LEAVING-SIDE", study="side").json()
            running = ThreadPoolExecutor(1).submit(
                asyncio.run, participant_call(base_url, calling, "system-1", mic, 7.0))
            wait_until(lambda: list((tmp_path / "sessions").glob("*/network.jsonl")), 60, "the call to run")
            done = client.post(f"/participate/api/withdraw/{leaving['participant']}",
                               headers={"X-Participant-Secret": leaving["secret"]})
            assert done.status_code == 200, done.text
            call = running.result(timeout=120)
    with session_scope(engine) as session:
        conversation = session.get(ConversationSession, call["session_id"])
        assert conversation.status == "complete" and conversation.analysable, conversation.quality_reason
        assert conversation.network["late_blocks"] <= 25
    assert (tmp_path / call_relpath(call["session_id"])).is_file()
    engine.dispose()
