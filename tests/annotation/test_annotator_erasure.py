"""Annotators who leave: one withdraws through the page's route, one is erased by a researcher
(storage.erasure), both while eighteen others claim and judge at once through the served API, on
a real SQLite file and a real PostgreSQL database. Their judgments and trials go, their slots go
back to the pool, and every formal pair still ends with exactly K judgments from the others.
Then the route itself (the study's withdrawn code, refusals that remove nothing, a dead token, the
command line's dry run listing what the erasure removes, a Prolific arrival not enrolled again),
an answer, skip or claim that comes while its annotator is being erased (PostgreSQL, held in
place by a row lock: refused with 410, the erasure complete), and the page's withdraw button in
Chromium."""

from __future__ import annotations

import json
import re
import secrets
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

import httpx
import pytest
import sqlalchemy as sa
from fastapi import FastAPI
from fastapi.testclient import TestClient
from playwright.sync_api import expect
from sqlmodel import select

from annotation.api import AnnotatorRoutes, api_router
from annotation.assignment import AssignmentSettings
from annotation.register import register_benchmark
from annotation.simulate import check_judgments, stored_trials
from annotation.trials import REMOVED, create_annotators, get_study
from app import build_app
from storage.db import session_scope
from storage.erasure import annotator_pseudonym, erase
from storage.models import Annotator, Assignment, ClipPair, ErasureRecord, Judgment, SkippedTrial
from studies.__main__ import main as studies_main
from tests.annotation.small_benchmark import write_small_benchmark
from tests.browser import serve
from tests.databases import engine  # noqa: F401  (pytest fixture: real SQLite and PostgreSQL databases)
from tests.waiting import wait_until

K = 3
PAIRS, CONTROLS = 15, 1  # 16 pairs take judgments: 48 in all
RACERS = 18
CODE = "WITHDRAWN"
RETURN_URL = "https://app.prolific.com/submissions/complete?cc={code}"
PER_ANNOTATOR = ("annotator", "assignment", "judgment", "skipped_trial")


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    return write_small_benchmark(tmp_path_factory.mktemp("bench") / "b", pairs=PAIRS, controls=CONTROLS)


def make_study(engine, bench, data_root, annotators: int, withdrawn: bool = True, options: dict | None = None,
               **settings) -> list[str]:
    """The small benchmark as study "s" (one attention check, no practice), with the study file's
    withdrawn code and link when `withdrawn`; the tokens of `annotators` new annotators."""
    with session_scope(engine) as session:
        register_benchmark(session, bench, "s", data_root, AssignmentSettings(**settings), attention_checks=1,
                           practice=0, pause_s=1.0, study_options=options)
        study = get_study(session, "s")
        if withdrawn:  # as studies.config stores them: top-level keys of the study's config
            study.config = {**study.config, "withdrawn_code": CODE, "withdrawn_url": RETURN_URL}
            session.add(study)
        return create_annotators(session, study, annotators)


def answer_body(token: str, trial: dict) -> dict:
    body = {"token": token, "trial": trial["id"], "choice": "A", "rating_a": 4, "rating_b": 2, "plays_a": 1,
            "plays_b": 1, "listened_s_a": trial["durations"]["A"], "listened_s_b": trial["durations"]["B"],
            "response_s": 9.0}
    if trial["ask_artifact"]:
        body.update(artifact_rating_a=1, artifact_rating_b=2)
    return body


def next_trial(client, token: str) -> dict:
    state = client.get("/api/annotate/next", params={"token": token}).json()
    assert state["status"] == "trial", state
    return state["trial"]


def work_then_hold(client, token: str, done: int) -> dict:
    """`done` trials answered, then one more claimed and left open: the trial held."""
    for _ in range(done):
        trial = next_trial(client, token)
        assert client.post("/api/annotate/submit", json=answer_body(token, trial)).status_code == 200
    return next_trial(client, token)


def annotator_id(engine, token_index: int) -> int:
    with session_scope(engine) as session:
        return session.exec(select(Annotator.id).order_by(Annotator.id)).all()[token_index]


def table_counts(engine) -> dict[str, int]:
    with engine.connect() as connection:
        names = sa.inspect(connection).get_table_names()
        return {name: connection.exec_driver_sql(f'SELECT count(*) FROM "{name}"').scalar_one()
                for name in names if name != "alembic_version"}


def rows_of(engine, annotator_ids) -> dict[str, int]:
    """What the database still holds of these annotators, by table."""
    ids = list(annotator_ids)
    with session_scope(engine) as session:
        return {
            "annotator": len(session.exec(select(Annotator.id).where(Annotator.id.in_(ids))).all()),
            "assignment": len(session.exec(select(Assignment.id).where(Assignment.annotator_id.in_(ids))).all()),
            "judgment": len(session.exec(select(Judgment.id).where(Judgment.annotator_id.in_(ids))).all()),
            "skipped_trial": len(session.exec(
                select(SkippedTrial.id).where(SkippedTrial.annotator_id.in_(ids))).all()),
        }


def is_formal(engine, trial: dict) -> bool:
    with session_scope(engine) as session:
        pair = session.get(ClipPair, session.get(Assignment, trial["id"]).clip_pair_id)
        return not pair.is_attention_check


def formal_pairs_done(engine, annotator: int) -> set[int]:
    with session_scope(engine) as session:
        return set(session.exec(
            select(Assignment.clip_pair_id).join(ClipPair, ClipPair.id == Assignment.clip_pair_id)
            .where(Assignment.annotator_id == annotator, Assignment.status == "done",
                   sa.not_(ClipPair.is_attention_check))).all())


# The race


@dataclass
class Race:
    """What the racing annotators share: how many answers were sent, the moment the victims go
    (`halfway`), the gate the late answers wait at until both erasures are done, what came back."""

    halfway_at: int
    hold_at: int
    sent: int = 0
    halfway: threading.Event = field(default_factory=threading.Event)
    erased: threading.Event = field(default_factory=threading.Event)
    changed: threading.Condition = field(default_factory=threading.Condition)
    stored: set = field(default_factory=set)  # (token, trial id) acknowledged
    requests: list = field(default_factory=list)  # (start, end) of every request, perf_counter
    errors: list = field(default_factory=list)

    def request(self, client, method: str, path: str, **kwargs) -> httpx.Response:
        t0 = time.perf_counter()
        response = client.request(method, path, **kwargs)
        with self.changed:
            self.requests.append((t0, time.perf_counter()))
        return response

    def wait_for_change(self, seen: int) -> None:
        """Until another answer was sent or an erasure freed slots (a poll at most every 0.2 s)."""
        with self.changed:
            self.changed.wait_for(lambda: self.sent != seen or self.erased.is_set(), timeout=0.2)


def racer(base_url: str, token: str, race: Race) -> None:
    with httpx.Client(base_url=base_url, timeout=120) as client:
        while True:
            response = race.request(client, "GET", "/api/annotate/next", params={"token": token})
            if response.status_code != 200:
                race.errors.append(f"next: {response.status_code} {response.text}")
                return
            state = response.json()
            if state["status"] in ("complete", "no_work"):
                return
            if state["status"] == "wait":  # every pair left is held by someone: until one is answered
                race.wait_for_change(race.sent)
                continue
            body = answer_body(token, state["trial"])
            with race.changed:
                race.sent += 1
                number = race.sent
                race.changed.notify_all()
            if number == race.halfway_at:
                race.halfway.set()
            if number > race.hold_at and not race.erased.wait(timeout=300):  # still going when they leave
                race.errors.append("the erasures never came")
                return
            answer = race.request(client, "POST", "/api/annotate/submit", json=body)
            if answer.status_code != 200:
                race.errors.append(f"submit: {answer.status_code} {answer.text}")
                return
            with race.changed:
                race.stored.add((token, state["trial"]["id"]))


def answer_during(action, base_url: str, token: str, trial: dict):
    """Run `action()` while the victim's open trial is answered from another thread (both let go
    at once): the answer's response and what `action` returned."""
    start, responses = threading.Barrier(2), []

    def send():
        start.wait()
        responses.append(httpx.post(f"{base_url}/api/annotate/submit", json=answer_body(token, trial), timeout=120))

    thread = threading.Thread(target=send)
    thread.start()
    start.wait()
    result = action()
    thread.join(timeout=120)
    return responses[0], result


def test_two_annotators_leave_mid_study_under_racing_annotators_and_every_pair_ends_with_k(engine, bench, tmp_path):
    data_root = tmp_path / "data"
    tokens = make_study(engine, bench, data_root, annotators=RACERS + 2, judgments_per_pair=K,
                        trials_per_annotator=4, attention_every=5)
    erased_token, withdrawing_token, racers = tokens[0], tokens[1], tokens[2:]
    erased_id, withdrawing_id = annotator_id(engine, 0), annotator_id(engine, 1)
    app = FastAPI()
    app.include_router(api_router(engine, data_root))
    race = Race(halfway_at=10, hold_at=26)
    with serve(app) as base_url, httpx.Client(base_url=base_url, timeout=120) as client:
        # Before the race, each victim judges three trials and holds a fourth.
        held = {token: work_then_hold(client, token, done=3) for token in (erased_token, withdrawing_token)}
        victims_done = {who: formal_pairs_done(engine, who) for who in (erased_id, withdrawing_id)}
        held_formal = {token: is_formal(engine, trial) for token, trial in held.items()}
        threads = [threading.Thread(target=racer, args=(base_url, token, race)) for token in racers]
        t0 = time.perf_counter()
        for thread in threads:
            thread.start()
        assert race.halfway.wait(timeout=300), "the racing annotators did not get going"
        # A researcher erases the first victim while that victim answers their open trial...
        erasing = (time.perf_counter(),)
        erased_answer, outcome = answer_during(
            lambda: erase(engine, "s", "annotator", annotator_pseudonym(erased_id), erased_by="researcher",
                          reason="erased", data_root=data_root),
            base_url, erased_token, held[erased_token])
        # ... and the second withdraws through the page's route while answering in another tab.
        withdrawn_answer, withdrawal = answer_during(
            lambda: client.post("/api/annotate/withdraw", json={"token": withdrawing_token}),
            base_url, withdrawing_token, held[withdrawing_token])
        erasing += (time.perf_counter(),)
        with race.changed:
            race.erased.set()
            race.changed.notify_all()
        for thread in threads:
            thread.join(timeout=300)
        wall_s = time.perf_counter() - t0
        assert not any(thread.is_alive() for thread in threads)
        # The dead tokens get clear refusals, never a server error.
        for token in (erased_token, withdrawing_token):
            again = client.post("/api/annotate/submit", json=answer_body(token, held[token]))
            assert again.status_code == 410 and again.json()["error"] == REMOVED
            assert client.get("/api/annotate/next", params={"token": token}).status_code == 410

    assert race.errors == []
    assert withdrawal.status_code == 200, withdrawal.text
    assert withdrawal.json() == {"withdrawn": True, "withdrawn_code": CODE,
                                 "withdrawn_url": RETURN_URL.replace("{code}", CODE)}
    # The victims' own last answers: stored just before (then erased with the rest), or refused.
    for response in (erased_answer, withdrawn_answer):
        assert response.status_code in (200, 410), response.text
        if response.status_code != 200:
            assert response.json()["error"] == REMOVED
    assert rows_of(engine, (erased_id, withdrawing_id)) == dict.fromkeys(PER_ANNOTATOR, 0)
    with session_scope(engine) as session:
        check = check_judgments(session, "s", k=K)
        assert {trial for _, trial in race.stored} <= stored_trials(session)  # no acknowledged answer lost
        records = session.exec(select(ErasureRecord).order_by(ErasureRecord.id)).all()
        per_pair = Counter(session.exec(select(Judgment.clip_pair_id)).all())
    assert check == {
        "pairs": PAIRS + CONTROLS, "judgments": K * (PAIRS + CONTROLS), "per_pair_min": K, "per_pair_max": K,
        "pairs_with_exactly_k": PAIRS + CONTROLS, "duplicates": 0, "done_assignments": K * (PAIRS + CONTROLS),
        "judgments_without_done_assignment": 0,
    }
    # Every pair a victim had judged was judged again by others, to K.
    redone = set().union(*victims_done.values())
    assert redone and all(per_pair[pair] == K for pair in redone)
    assert [(r.row_id, r.reason, r.erased_by) for r in records] == [
        (erased_id, "erased", "researcher"), (withdrawing_id, "withdrawn", "annotator")]
    assert outcome.record_id == records[0].id
    overlapping = sum(start < erasing[1] and end > erasing[0] for start, end in race.requests)
    last_answers = {erased_token: erased_answer, withdrawing_token: withdrawn_answer}
    redone_judgments = len(victims_done[erased_id]) + len(victims_done[withdrawing_id]) + sum(
        held_formal[token] and response.status_code == 200 for token, response in last_answers.items())
    print(f"\n[{engine.dialect.name}] {RACERS} racing annotators + 2 leaving, K={K}, {PAIRS + CONTROLS} pairs: "
          f"{wall_s:.2f} s from the start of the race to its end, {len(race.requests)} requests of the racers "
          f"({overlapping} overlapping the two erasures, which took {1000 * (erasing[1] - erasing[0]):.0f} ms); "
          f"formal judgments erased and re-done by others: {redone_judgments}; judgments erased in all "
          f"(attention checks included): {sum(r.counts.get('judgment', 0) for r in records)}; the leavers' "
          f"last answers, sent during their erasure: {erased_answer.status_code}, {withdrawn_answer.status_code}")


# The route


def counts_by_table(output: str) -> dict[str, int]:
    return {m[1]: int(m[2]) for m in re.finditer(r"^\s+(\w+): (\d+) row\(s\)$", output, re.M)}


def test_withdrawal_shows_the_code_kills_the_token_and_removes_what_the_dry_run_listed(engine, bench, tmp_path,
                                                                                      capsys):
    data_root = tmp_path / "data"
    leaving, staying = make_study(engine, bench, data_root, annotators=2, judgments_per_pair=K,
                                  trials_per_annotator=4, attention_every=2)
    leaving_id = annotator_id(engine, 0)
    app = FastAPI()
    app.include_router(api_router(engine, data_root))
    url = engine.url.render_as_string(hide_password=False)
    with TestClient(app) as client:
        held = work_then_hold(client, leaving, done=3)  # an attention check among them (every 2)
        work_then_hold(client, staying, done=1)
        skipped = client.post("/api/annotate/skip", json={"token": staying, "trial": next_trial(
            client, staying)["id"], "reason": "clip B stops"})
        assert skipped.status_code == 200
        before = table_counts(engine)

        # Refusals remove nothing: a wrong token, none, a body that is not an object.
        wrong = leaving[:-1] + ("A" if leaving[-1] != "A" else "B")
        for body, status, error in (
            ({"token": wrong}, 403, "unknown annotator token: the link is mistyped or was changed"),
            ({}, 403, "missing annotator token: open the link you were given"),
            (["token", leaving], 400, "the request body must be a JSON object"),
        ):
            response = client.post("/api/annotate/withdraw", json=body)
            assert (response.status_code, response.json()) == (status, {"error": error})
        assert table_counts(engine) == before

        # The researcher's dry run lists what the erasure will remove, and removes nothing.
        assert studies_main(["--url", url, "erase", "--study", "s", "--annotator",
                             annotator_pseudonym(leaving_id), "--dry-run"]) == 0
        listed = counts_by_table(capsys.readouterr().out)
        assert table_counts(engine) == before
        assert listed == {"judgment": 3, "assignment": 4, "annotator": 1}  # 3 done (one an attention check), 1 held

        withdrawal = client.post("/api/annotate/withdraw", json={"token": leaving})
        assert withdrawal.status_code == 200
        assert withdrawal.json() == {"withdrawn": True, "withdrawn_code": CODE,
                                     "withdrawn_url": "https://app.prolific.com/submissions/complete?cc=WITHDRAWN"}
        after = table_counts(engine)
        removed = {table: before[table] - after[table] for table in before if before[table] > after[table]}
        assert removed == listed
        added = {table: after[table] - before[table] for table in before if after[table] > before[table]}
        assert added.items() <= {"erasure_record": 1, "analysis_request": 1, "audit_event": 1}.items()
        assert "erasure_record" in added and "audit_event" in added  # the trail says it, naming nobody
        with session_scope(engine) as session:
            [record] = session.exec(select(ErasureRecord)).all()
        assert (record.reason, record.erased_by) == ("withdrawn", "annotator")
        assert {k: v for k, v in record.counts.items() if k not in ("files", "bytes")} == listed

        # The token is dead: the page's calls, a second withdrawal, the held trial's answer.
        for response in (client.post("/api/annotate/withdraw", json={"token": leaving}),
                         client.get("/api/annotate/next", params={"token": leaving}),
                         client.post("/api/annotate/submit", json=answer_body(leaving, held))):
            # the erasure kept their token's hash (salted): they are told they withdrew
            assert response.status_code == 410
            assert response.json() == {"error": REMOVED}
        assert table_counts(engine) == after
        # The researcher's command line knows them as erased; the other annotator goes on.
        assert studies_main(["--url", url, "erase", "--study", "s", "--annotator",
                             annotator_pseudonym(leaving_id)]) == 0
        assert "was already erased" in capsys.readouterr().out
        assert client.get("/api/annotate/next", params={"token": staying}).json()["status"] == "trial"


def test_a_study_without_a_withdrawn_code_answers_only_that_it_is_done(engine, bench, tmp_path):
    [token] = make_study(engine, bench, tmp_path / "data", annotators=1, withdrawn=False, judgments_per_pair=K)
    leaving = annotator_id(engine, 0)
    app = FastAPI()
    app.include_router(api_router(engine, tmp_path / "data"))
    with TestClient(app) as client:
        work_then_hold(client, token, done=1)
        assert client.post("/api/annotate/withdraw", json={"token": token}).json() == {"withdrawn": True}
    assert rows_of(engine, [leaving]) == dict.fromkeys(PER_ANNOTATOR, 0)


def test_a_prolific_annotator_who_withdrew_is_not_enrolled_again(engine, bench, tmp_path):
    make_study(engine, bench, tmp_path / "data", annotators=1, options={"prolific_study_id": "STUDY42"})
    app = FastAPI()
    app.include_router(api_router(engine, tmp_path / "data"))

    def arrive(pid: str):
        return client.post("/api/annotate/prolific", json={"study": "s", "PROLIFIC_PID": pid, "STUDY_ID": "STUDY42",
                                                           "SESSION_ID": "S1"})

    with TestClient(app) as client:
        token = arrive("PID1").json()["token"]
        work_then_hold(client, token, done=1)
        assert client.post("/api/annotate/withdraw", json={"token": token}).status_code == 200
        # Prolific's link again (it makes a new token each time): their withdrawal stands.
        again = arrive("PID1")
        assert (again.status_code, again.json()) == (410, {"error": REMOVED})
        assert arrive("PID2").status_code == 200
    with session_scope(engine) as session:
        assert session.exec(select(Annotator.external_id).where(Annotator.external_id.is_not(None))).all() == ["PID2"]


def waiting_on_locks(engine) -> int:
    with engine.connect() as connection:
        return connection.exec_driver_sql(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).scalar_one()


def in_thread(results: dict, name: str, work) -> threading.Thread:
    """`work()` on its own thread; its value (or exception) lands in results[name]."""
    def run():
        try:
            results[name] = work()
        except Exception as exc:  # noqa: BLE001 - asserted on by the test
            results[name] = exc

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def late_request(kind: str, routes: AnnotatorRoutes, token: str, trial: dict):
    """The victim's request that comes while they are being erased, as its route runs it."""
    if kind == "answer":
        return lambda: routes.run_work(routes.record_judgment, answer_body(token, trial))
    if kind == "skip":
        return lambda: routes.run_work(routes.record_skip, {"token": token, "trial": trial["id"], "reason": "silent"})
    return lambda: routes.next_trial(token)  # their open trial answered: this one would claim a new one


@pytest.mark.parametrize("engine", ["postgres"], indirect=True)
@pytest.mark.parametrize("kind", ["answer", "skip", "next"])
def test_a_request_sent_while_its_annotator_is_erased_is_refused_and_the_erasure_holds(engine, bench, tmp_path, kind):
    """PostgreSQL runs requests side by side. The erasure has listed the annotator's rows and is
    held up deleting them (another transaction has their judgment's row) when they answer, skip
    or ask for a trial: a judgment, skip or claim stored then is a row the erasure did not list,
    and deleting the annotator fails on it (it did, before answers and skips took the study's
    lock). The request must wait for the erasure and be refused (410)."""
    data_root = tmp_path / "data"
    [token] = make_study(engine, bench, data_root, annotators=1, judgments_per_pair=K)
    victim = annotator_id(engine, 0)
    routes = AnnotatorRoutes(engine, data_root)
    app = FastAPI()
    app.include_router(routes.router)
    with TestClient(app) as client:
        trial = work_then_hold(client, token, done=1)
        if kind == "next":
            assert client.post("/api/annotate/submit", json=answer_body(token, trial)).status_code == 200
    results = {}
    with engine.connect() as blocker:
        blocker.exec_driver_sql(f"SELECT id FROM judgment WHERE annotator_id = {victim} FOR UPDATE")
        erasing = in_thread(results, "erase", lambda: erase(
            engine, "s", "annotator", annotator_pseudonym(victim), erased_by="researcher", data_root=data_root))
        wait_until(lambda: waiting_on_locks(engine) == 1, what="the erasure held up on a judgment's row")
        requesting = in_thread(results, "request", late_request(kind, routes, token, trial))
        wait_until(lambda: "request" in results or waiting_on_locks(engine) == 2,
                   what="the request waiting (or done)")
        blocker.rollback()
    erasing.join(timeout=60)
    requesting.join(timeout=60)
    assert not isinstance(results["erase"], Exception), f"the erasure failed: {str(results['erase'])[:300]}"
    response = results["request"]
    assert not isinstance(response, Exception), f"{kind}: a server error: {str(response)[:300]}"
    assert not isinstance(response, dict), f"{kind} went through for an annotator being erased: {response}"
    assert (response.status_code, json.loads(response.body)) == (410, {"error": REMOVED})
    judged = 2 if kind == "next" else 1
    assert results["erase"].plan.counts() == {"judgment": judged, "assignment": 2, "annotator": 1}
    assert rows_of(engine, [victim]) == dict.fromkeys(PER_ANNOTATOR, 0)


# The page


def test_the_withdraw_button_asks_first_then_shows_the_code_and_the_way_back(browser, bench, tmp_path):
    app = build_app(database_url=f"sqlite:///{tmp_path / 'app.db'}", data_root=tmp_path / "data",
                    researcher_password=secrets.token_urlsafe(12))
    engine = app.state.engine
    [token, other] = make_study(engine, bench, tmp_path / "data", annotators=2, judgments_per_pair=1,
                                trials_per_annotator=2)
    leaving, staying = annotator_id(engine, 0), annotator_id(engine, 1)
    with serve(app) as base_url:
        page = browser.new_page()
        page.goto(f"{base_url}/annotate/session?token={token}")
        withdraw = page.get_by_role("button", name="Withdraw from the study")
        expect(withdraw).to_be_visible()  # already on the instructions
        page.get_by_role("button", name="Start").click()
        expect(page.locator("#trial-title")).to_have_text("Trial 1 of 3")
        withdraw.click()
        expect(page.get_by_role("heading", name="Withdraw from the study?")).to_be_visible()
        expect(page.locator("#withdraw-confirm")).to_contain_text("your judgments and answers will be deleted")
        expect(page.locator("#trial")).to_be_hidden()
        page.get_by_role("button", name="Cancel").click()  # nothing happens: back to the same trial
        expect(page.locator("#trial-title")).to_have_text("Trial 1 of 3")
        assert rows_of(engine, [leaving])["assignment"] == 1
        withdraw.click()
        page.get_by_role("button", name="Withdraw and delete my answers").click()
        expect(page.get_by_role("heading", name="You have withdrawn from the study")).to_be_visible()
        expect(page.locator("#withdrawn-code")).to_have_text(CODE)
        expect(page.get_by_role("link", name="Return to Prolific")).to_have_attribute(
            "href", RETURN_URL.replace("{code}", CODE))
        expect(withdraw).to_be_hidden()
        expect(page.locator("#progress-box")).to_be_hidden()
        assert rows_of(engine, [leaving]) == dict.fromkeys(PER_ANNOTATOR, 0)
        # Opening the link again says why it no longer works.
        page.reload()
        expect(page.locator("#error")).to_have_text(REMOVED)
        expect(withdraw).to_be_hidden()
        page.close()
    assert other and rows_of(engine, [staying])["annotator"] == 1  # the other annotator is untouched
    engine.dispose()


def test_an_annotator_who_finished_can_still_withdraw_from_the_done_page(browser, bench, tmp_path):
    app = build_app(database_url=f"sqlite:///{tmp_path / 'app.db'}", data_root=tmp_path / "data",
                    researcher_password=secrets.token_urlsafe(12))
    engine = app.state.engine
    [token] = make_study(engine, bench, tmp_path / "data", annotators=1, judgments_per_pair=1,
                         trials_per_annotator=1)
    leaving = annotator_id(engine, 0)
    with serve(app) as base_url:
        with httpx.Client(base_url=base_url) as client:  # every trial answered, as the page would
            client.post("/api/annotate/practice-done", json={"token": token})
            while (state := client.get("/api/annotate/next", params={"token": token}).json())["status"] == "trial":
                assert client.post("/api/annotate/submit", json=answer_body(token, state["trial"])).status_code == 200
            assert state["status"] == "complete", state
        page = browser.new_page()
        page.goto(f"{base_url}/annotate/session?token={token}")
        expect(page.locator("#done")).to_be_visible()
        page.get_by_role("button", name="Withdraw from the study").click()
        page.get_by_role("button", name="Withdraw and delete my answers").click()
        expect(page.get_by_role("heading", name="You have withdrawn from the study")).to_be_visible()
        expect(page.locator("#withdrawn-code")).to_have_text(CODE)
        page.close()
    assert rows_of(engine, [leaving]) == dict.fromkeys(PER_ANNOTATOR, 0)
    engine.dispose()
