"""Researchers' roles on the served app: every route of the researcher area, listed from Gradio's
own registry, called by a viewer, an analyst and an owner through Gradio's API with their real
logins; each answer is what the rule table (analysis.researcher_routes.ROUTE_ROLES) says, a refusal
being "403 Forbidden" and in the audit trail. The files the area hands out (a session's recording)
are refused to a viewer by the file route itself, 403, even with the path in hand. A study the
account is not a member of is refused on every study route, and is not in its study list. Logins,
failed ones and the routes that touch people's data are in the trail, which owners read and download.
"""

from __future__ import annotations

import csv
import secrets
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

from analysis.demo_study import seed_demo_analysis
from analysis.researcher_routes import FILE_ROLES, ROUTE_ROLES, UNRECORDED_REFUSALS, file_role
from app import build_app
from storage import audit_trail
from storage.db import init_db, make_engine, session_scope
from storage.demo import DEMO_STUDY
from storage.models import RESEARCHER_ROLES
from storage.researcher_accounts import add_account, disable_account
from studies.config import apply_config, parse_config
from tests.browser import serve
from webguard.researcher_login import RESEARCHER_USER

SHARED = secrets.token_urlsafe(12)
PASSWORDS = {"vera": "viewer-pass-1", "anna": "analyst-pass-1", "otto": "owner-pass-12"}
ROLES = {"vera": "viewer", "anna": "analyst", "otto": "owner"}
OTHER = "other-study"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("roles")
    url = f"sqlite:///{root / 'app.db'}"
    engine = make_engine(url)
    init_db(engine)
    with session_scope(engine) as session:
        seed_demo_analysis(session, root, sessions_per_system=1, seconds=20.0, per_type=1, annotators=2, careless=0,
                           per_pair=1)
        apply_config(session, parse_config({"name": OTHER, "systems": [{"name": "c", "kind": "cascaded"}]}))
    for name, role in ROLES.items():
        add_account(engine, name, role, PASSWORDS[name], [DEMO_STUDY] if role != "owner" else [])
    # As app.py runs it: the views read what the background worker computed (none runs here, so
    # they say what is pending), and no request computes a view (the report does)
    app = build_app(database_url=url, data_root=root, researcher_password=SHARED, background_analysis=True,
                    analysis_worker=False)
    with serve(app) as base_url:
        yield app.state.engine, root, base_url
        # their open streams would hold the server's shutdown; each close waits up to 1 s for
        # its heartbeat thread, so all at once
        with ThreadPoolExecutor(max(len(OPENED), 1)) as pool:
            list(pool.map(Client.close, OPENED))
    engine.dispose()


OPENED: list[Client] = []


def client(base_url: str, name: str) -> Client:
    OPENED.append(Client(f"{base_url}/analyze/", auth=(name, PASSWORDS[name]), verbose=False, download_files=False))
    return OPENED[-1]


ARGUMENTS = {"study": DEMO_STUDY, "excluded": [], "shown_busy": False, "seen": "", "open_key": "overview",
             "example_id": None, "audio_path": None, "count": 1, "subject": "participant",
             "identifier": "nobody-here", "confirmed": False}


def arguments(endpoint: dict, session_id: int) -> list:
    values = {**ARGUMENTS, "session_id": session_id}
    return [values[p["parameter_name"]] for p in endpoint["parameters"]]


def answer(api: Client, route: str, args: list) -> str:
    """"403" when the route refused, else "ok" (another error is the route's own answer, e.g. an
    empty upload: the rule let it through)."""
    try:
        api.predict(*args, api_name=f"/{route}")
    except AppError as exc:
        return "403" if str(exc).startswith("403 Forbidden") else "ok"
    return "ok"


def session_id_of(engine) -> int:
    from sqlmodel import select

    from storage.models import ConversationSession, Recording
    with session_scope(engine) as session:
        return session.exec(select(ConversationSession.id).join(Recording)).first()


def test_every_route_has_a_rule_and_answers_each_role_as_the_rule_says(served):
    engine, _, base_url = served
    clients = {name: client(base_url, name) for name in ROLES}
    endpoints = clients["otto"].view_api(return_format="dict", print_info=False)["named_endpoints"]
    routes = {name.lstrip("/") for name in endpoints}
    # Gradio's registry and the rule table list the same routes: a new route without a rule fails here
    assert routes == set(ROUTE_ROLES)
    session_id = session_id_of(engine)
    expected = {(route, name): "ok" if RESEARCHER_ROLES.index(role) >= RESEARCHER_ROLES.index(ROUTE_ROLES[route])
                else "403" for route in routes for name, role in ROLES.items()}

    def answers_of(name: str) -> dict:  # each account in a thread of its own, as three browsers would
        return {(route, name): answer(clients[name], route, arguments(endpoints[f"/{route}"], session_id))
                for route in sorted(routes)}

    with ThreadPoolExecutor(len(ROLES)) as pool:
        got = {key: outcome for part in pool.map(answers_of, ROLES) for key, outcome in part.items()}
    assert got == expected
    # each refusal is in the trail, by whom and of what
    refused = {(e.actor, e.object) for e in audit_trail.events(engine) if e.action == "refused"}
    assert refused == {(name, route) for (route, name), outcome in expected.items()
                       if outcome == "403" and route not in UNRECORDED_REFUSALS}
    assert ("vera", "session") in refused


def test_a_viewer_cannot_fetch_a_recording_even_with_its_address(served):
    engine, _, base_url = served
    session_id = session_id_of(engine)
    player = client(base_url, "anna").predict(DEMO_STUDY, session_id, api_name="/session")[2]
    recording = player["recording"]["url"]
    assert file_role(recording) == "analyst" and recording.endswith((".wav", ".flac"))
    for name, status in (("vera", 403), ("anna", 200), ("otto", 200)):
        with httpx.Client(base_url=base_url) as browser:
            login = browser.post("/analyze/login", data={"username": name, "password": PASSWORDS[name]})
            assert login.status_code == 200
            fetched = browser.get(recording)
            assert fetched.status_code == status, (name, fetched.text[:200])
            if status == 200:
                assert fetched.content[:4] in (b"RIFF", b"fLaC")
    trail = audit_trail.events(engine, actor="vera")
    assert any(e.action == "refused" and e.object == recording.rsplit("/", 1)[-1] for e in trail)
    assert any(e.action == "opened_session" and e.actor == "anna" and e.object == f"session {session_id}"
               for e in audit_trail.events(engine, actor="anna"))
    assert [pattern for pattern, _ in FILE_ROLES][-1] == "*"  # an unnamed file needs an analyst


def test_a_member_sees_only_their_studies(served):
    engine, _, base_url = served
    analyst, owner = client(base_url, "anna"), client(base_url, "otto")
    assert [c[0] for c in analyst.predict(api_name="/studies")["choices"]] == [DEMO_STUDY]
    assert [c[0] for c in owner.predict(api_name="/studies")["choices"]] == [DEMO_STUDY, OTHER]
    for route in ("view_overview", "sessions", "dataset"):
        assert answer(analyst, route, [OTHER]) == "403"
        assert answer(owner, route, [OTHER]) == "ok"


def test_logins_and_failed_logins_are_in_the_trail_and_a_disabled_account_is_shut_out(served, tmp_path):
    engine, _, base_url = served
    with httpx.Client(base_url=base_url) as browser:
        assert browser.post("/analyze/login", data={"username": "vera", "password": "wrong-password"}).status_code != 200
        assert browser.post("/analyze/login", data={"username": "nobody", "password": "x" * 12}).status_code != 200
        # the shared password is the owner account `researcher` until it is disabled
        assert browser.post("/analyze/login", data={"username": RESEARCHER_USER, "password": SHARED}).status_code == 200
    trail = [(e.actor, e.action) for e in audit_trail.events(engine)]
    assert {("vera", "failed_login"), ("nobody", "failed_login"), (RESEARCHER_USER, "login")} <= set(trail)
    # the owner's view of the trail, and the whole of it as CSV, readable by them only
    owner = client(base_url, "otto")
    shown = owner.predict(api_name="/audit_trail")
    assert shown["headers"] == list(audit_trail.CSV_COLUMNS) and len(shown["data"]) >= 5
    assert "password" not in str(shown["data"]).lower()  # nothing of a password is ever written
    path = owner.predict(api_name="/audit_csv")
    with httpx.Client(base_url=base_url) as browser:
        browser.post("/analyze/login", data={"username": "otto", "password": PASSWORDS["otto"]})
        downloaded = browser.get(path["url"])
    assert downloaded.status_code == 200
    rows = list(csv.reader(downloaded.text.splitlines()))
    assert rows[0] == list(audit_trail.CSV_COLUMNS) and ["vera", "failed_login"] in [r[2:5:2] for r in rows[1:]]

    disable_account(engine, "vera")
    disable_account(engine, RESEARCHER_USER, shared_name=RESEARCHER_USER)
    with httpx.Client(base_url=base_url) as browser:
        for name, password in (("vera", PASSWORDS["vera"]), (RESEARCHER_USER, SHARED)):
            assert browser.post("/analyze/login", data={"username": name, "password": password}).status_code != 200
