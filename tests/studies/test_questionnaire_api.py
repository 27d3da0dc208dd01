"""The questionnaire on the participant API, against the app and its database: a part after every
call that counts and one after the last (the ranking), each stored once with the systems its
labels stand for; answers refused in one line; parts that are not due refused with the reason;
the completion code only once nothing is left to answer.
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlmodel import select

from app import build_app
from storage.db import session_scope
from storage.models import DialogueSystem, QuestionnaireResponse, Recording
from storage.records import end_session, get_participant, start_session
from studies.config import apply_config, parse_config
from studies.questionnaire import DEFAULT_AFTER_CALL
from studies.questionnaire_api import QuestionnaireRoutes
from studies.sessions import CALL_KIND, call_relpath

MINIMUM_S = 8
SYSTEMS = [{"name": "alpha", "kind": "cascaded"}, {"name": "beta", "kind": "cascaded"}]
ONE_SYSTEM = [{"name": "solo", "kind": "cascaded"}]
# every required item of the default set after a call: the optional comment left out
AFTER_CALL = {item.id: 4 for item in DEFAULT_AFTER_CALL if item.kind == "scale"}


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    data_root = tmp_path_factory.mktemp("data")
    app = build_app(database_url=f"sqlite:///{data_root / 'app.db'}", data_root=data_root, researcher_password="pw")
    common = {"session_seconds": 20, "min_call_seconds": MINIMUM_S, "topics": ["preparing for a hike"]}
    with session_scope(app.state.engine) as session:
        apply_config(session, parse_config({"name": "two", "completion_code": "TWO-DONE", "systems": SYSTEMS,
                                            **common}))
        apply_config(session, parse_config({"name": "one", "completion_code": "ONE-DONE", "systems": ONE_SYSTEM,
                                            **common}))
        apply_config(session, parse_config({"name": "none", "completion_code": "NO-QUESTIONS",
                                            "systems": ONE_SYSTEM, "questionnaire": {}, **common}))
    yield app
    app.state.engine.dispose()


@pytest.fixture
def client(app):
    with TestClient(app) as client:
        yield client


def _consent(client, study: str, pid: str) -> tuple[str, dict]:
    answer = client.post(f"/participate/api/{study}/consent", json={"external_id": pid})
    assert answer.status_code == 200, answer.text
    return answer.json()["participant"], {"X-Participant-Secret": answer.json()["secret"]}


def _finished_call(app, pseudonym: str, label: str, seconds: float) -> int:
    """A complete call of the system `label` with a two-channel recording of `seconds`; its id."""
    with session_scope(app.state.engine) as session:
        participant = get_participant(session, pseudonym)
        systems = session.exec(select(DialogueSystem).where(DialogueSystem.study_id == participant.study_id)
                               .order_by(DialogueSystem.id)).all()
        system = systems[int(label.removeprefix("system-")) - 1]
        conversation = start_session(session, participant, system, "preparing for a hike")
        session.add(Recording(session_id=conversation.id, path=call_relpath(conversation.id), sha256="0" * 64,
                              kind=CALL_KIND, sample_rate=16000, channels=2, system_channel=1, duration_s=seconds))
        end_session(session, conversation, "complete")
        return conversation.id


def _state(client, pseudonym: str) -> dict:
    answer = client.get(f"/participate/api/participant/{pseudonym}")
    assert answer.status_code == 200, answer.text
    return answer.json()


def _post(client, pseudonym: str, headers: dict, part: str, answers) -> tuple[int, dict]:
    answer = client.post(f"/participate/api/questionnaire/{pseudonym}", json={"part": part, "answers": answers},
                         headers=headers)
    return answer.status_code, answer.json()


def _rows(app, pseudonym: str) -> list[QuestionnaireResponse]:
    with session_scope(app.state.engine) as session:
        participant = get_participant(session, pseudonym)
        return list(session.exec(select(QuestionnaireResponse).where(
            QuestionnaireResponse.participant_id == participant.id).order_by(QuestionnaireResponse.id)).all())


def test_after_each_call_that_counts_then_the_ranking_then_the_code(app, client):
    who, headers = _consent(client, "two", "q-1")
    first = _state(client, who)["next_systems"][0]
    second = ({"system-1", "system-2"} - {first}).pop()

    short = _finished_call(app, who, first, MINIMUM_S - 0.5)  # too short to count: no questions
    assert "questionnaire_due" not in _state(client, who)
    assert _post(client, who, headers, f"call:{short}", AFTER_CALL) == (409, {
        "error": f"call {short} was shorter than the study's minimum of 8 seconds and did not count: "
                 "it has no questions"})

    call_1 = _finished_call(app, who, first, 12.0)
    state = _state(client, who)
    due = state["questionnaire_due"]
    assert {k: due[k] for k in ("part", "session_id", "system", "shown_as", "call")} == {
        "part": f"call:{call_1}", "session_id": call_1, "system": first, "shown_as": "System 1", "call": 1}
    assert [item["id"] for item in due["items"]] == [item.id for item in DEFAULT_AFTER_CALL]
    assert due["items"][0] == {"id": "right_time", "kind": "scale", "text": "The system answered at the right time.",
                               "required": True, "points": 5, "labels": ["Strongly disagree", "Strongly agree"],
                               "reverse_keyed": False}
    assert client.get(f"/participate/api/questionnaire/{who}").json() == {"participant": who, "due": due}
    assert "completion" not in state

    # refusals, each in one line, none stored
    assert _post(client, who, {}, f"call:{call_1}", AFTER_CALL)[0] == 403
    assert _post(client, who, headers, "call:abc", AFTER_CALL) == (
        400, {"error": "'part' must be \"call:SESSION_ID\" or \"after_last\""})
    assert _post(client, who, headers, "after_last", {"most_natural": [first]}) == (
        409, {"error": "the questions after the last call come once you have talked to every system"})
    missing = {k: v for k, v in AFTER_CALL.items() if k != "made_me_wait"}
    assert _post(client, who, headers, f"call:{call_1}", missing) == (
        400, {"error": "please answer: The system made me wait for its answers."})
    assert _post(client, who, headers, f"call:{call_1}", {**AFTER_CALL, "right_time": 6}) == (
        400, {"error": "The system answered at the right time. needs a whole number from 1 to 5"})
    assert _post(client, who, headers, f"call:{call_1}", {**AFTER_CALL, "mood": 3}) == (
        400, {"error": "unknown item(s) mood"})
    assert _post(client, who, headers, f"call:{call_1}", "all good")[0] == 400
    assert _rows(app, who) == []

    status, answer = _post(client, who, headers, f"call:{call_1}", {**AFTER_CALL, "comment": "It waited."})
    assert (status, answer["stored"], answer["already"]) == (200, True, False)
    assert "questionnaire_due" not in answer["state"] and answer["state"]["next_systems"] == [second]
    # a resubmission (or a second tab) changes nothing
    status, answer = _post(client, who, headers, f"call:{call_1}", {**AFTER_CALL, "right_time": 1})
    assert (status, answer["stored"], answer["already"]) == (200, False, True)
    [row] = _rows(app, who)
    assert (row.part, row.session_id, row.systems) == (f"call:{call_1}", call_1, {first: {"system-1": "alpha",
                                                                                       "system-2": "beta"}[first]})
    assert row.answers == {**AFTER_CALL, "comment": "It waited."}

    call_2 = _finished_call(app, who, second, 30.0)
    state = _state(client, who)
    assert state["next_systems"] == [] and "completion" not in state  # the questions first
    assert (state["questionnaire_due"]["part"], state["questionnaire_due"]["shown_as"]) == (f"call:{call_2}", "System 2")
    assert _post(client, who, headers, "after_last", {"most_natural": [second, first]}) == (
        409, {"error": "answer the questions after each call first"})
    assert _post(client, who, headers, f"call:{call_2}", AFTER_CALL)[0] == 200

    due = _state(client, who)["questionnaire_due"]
    assert (due["part"], due["session_id"], [i["id"] for i in due["items"]]) == ("after_last", None, ["most_natural"])
    assert due["systems"] == [{"label": first, "shown_as": "System 1"}, {"label": second, "shown_as": "System 2"}]
    assert _post(client, who, headers, "after_last", {"most_natural": [second]}) == (400, {
        "error": "Put the systems in order: the one that was most natural to talk to first. needs every system "
                 f"you talked to once, in your order ({first}, {second})"})
    status, answer = _post(client, who, headers, "after_last", {"most_natural": [second, first]})
    assert (status, answer["stored"]) == (200, True)
    assert answer["state"]["completion"] == {"code": "TWO-DONE"} and "questionnaire_due" not in answer["state"]
    last = _rows(app, who)[-1]
    assert (last.part, last.session_id, last.systems) == ("after_last", None, {"system-1": "alpha", "system-2": "beta"})
    assert last.answers == {"most_natural": [second, first]}
    assert '"code": "TWO-DONE"' in client.get("/participate/study/two?pid=q-1").text  # the link again: the code

    # another participant cannot answer for this one's calls
    other, other_headers = _consent(client, "two", "q-2")
    assert _post(client, other, other_headers, f"call:{call_1}", AFTER_CALL) == (
        409, {"error": f"call {call_1} is not a finished call of yours"})


def test_one_system_has_no_ranking_and_the_code_comes_after_its_questions(app, client):
    who, headers = _consent(client, "one", "solo-1")
    call = _finished_call(app, who, "system-1", 9.0)
    state = _state(client, who)
    assert state["questionnaire_due"]["part"] == f"call:{call}" and "completion" not in state
    assert '"finished":' not in client.get("/participate/study/one?pid=solo-1").text  # not finished yet
    status, answer = _post(client, who, headers, f"call:{call}", AFTER_CALL)
    assert status == 200 and answer["state"]["completion"] == {"code": "ONE-DONE"}
    assert _post(client, who, headers, "after_last", {}) == (
        409, {"error": "this study has no questions after the last call"})
    assert client.get(f"/participate/api/questionnaire/{who}").json()["due"] is None


def test_a_study_without_questions_gives_the_code_after_the_last_call(app, client):
    who, headers = _consent(client, "none", "none-1")
    call = _finished_call(app, who, "system-1", 9.0)
    state = _state(client, who)
    assert "questionnaire_due" not in state and state["completion"] == {"code": "NO-QUESTIONS"}
    assert _post(client, who, headers, f"call:{call}", {}) == (409, {"error": "this study has no questions after each call"})


def test_two_requests_storing_the_same_part_store_it_once(app, client):
    """The race a second tab can win between the check and the insert: the unique (participant,
    part) lets one through, the other is told it was stored already."""
    who, _ = _consent(client, "one", "race-1")
    call = _finished_call(app, who, "system-1", 9.0)
    routes = QuestionnaireRoutes(app.state.engine, owner_of=None, progress_of=None)
    with session_scope(app.state.engine) as session:
        participant_id = get_participant(session, who).id
    firsts = [routes.store(participant_id, f"call:{call}", {"right_time": k}, {"system-1": "solo"}) for k in (2, 5)]
    assert firsts == [True, False]
    [row] = _rows(app, who)
    assert row.answers == {"right_time": 2}


def test_answers_queue_the_studys_analysis_for_the_background_worker(app, client):
    # The questionnaire tab read "Queued for the background worker" for minutes: answers queued nothing,
    # and its statistics were computed only when a researcher opened the tab.
    from storage.models import AnalysisRequest

    who, headers = _consent(client, "two", "q-queue")
    call = _finished_call(app, who, _state(client, who)["next_systems"][0], 12.0)
    with session_scope(app.state.engine) as session:
        for request in session.exec(select(AnalysisRequest)).all():  # whatever the call queued, done
            session.delete(request)
    assert _post(client, who, headers, f"call:{call}", AFTER_CALL)[0] == 200
    with session_scope(app.state.engine) as session:
        study_id = get_participant(session, who).study_id
        assert session.get(AnalysisRequest, study_id) is not None
