"""Several processes and threads writing to one database at once lose nothing."""

from __future__ import annotations

import multiprocessing
import threading

from sqlmodel import func, select

from storage.db import current_revision, head_revision, init_db, make_engine, session_scope
from storage.models import Participant, Study

WORKERS = 4
WRITES = 50


def _add_participants(url: str, worker: int, barrier) -> None:
    """One transaction per insert, as the app does per request."""
    engine = make_engine(url)
    barrier.wait()
    for i in range(WRITES):
        with session_scope(engine) as session:
            study = session.exec(select(Study).where(Study.name == "s")).one()
            session.add(Participant(study_id=study.id, external_id=f"w{worker}-{i}"))
    engine.dispose()


def _increment(url: str, worker: int, barrier) -> None:
    """Read-modify-write of one shared value: lost updates would show as a smaller total."""
    engine = make_engine(url)
    barrier.wait()
    for _ in range(WRITES):
        with session_scope(engine) as session:
            study = session.exec(select(Study).where(Study.name == "s")).one()
            study.config = {"count": study.config["count"] + 1}
    engine.dispose()


def _init(url: str, worker: int, barrier) -> None:
    engine = make_engine(url)
    barrier.wait()
    init_db(engine)
    engine.dispose()


def _prepared(url: str):
    engine = make_engine(url)
    init_db(engine)
    with session_scope(engine) as session:
        session.add(Study(name="s", config={"count": 0}))
    engine.dispose()
    return engine


def _run_processes(target, url: str) -> None:
    # fork: children start at once with everything imported. Each makes its own engine; the
    # parent's engines hold no open connections (disposed) and forked children exit without
    # closing inherited ones.
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(WORKERS)
    processes = [context.Process(target=target, args=(url, k, barrier)) for k in range(WORKERS)]
    for p in processes:
        p.start()
    for p in processes:
        p.join(timeout=120)
    assert [p.exitcode for p in processes] == [0] * WORKERS


def test_sqlite_processes_starting_up_together_on_a_new_file(sqlite_url):
    # Several app workers may call init_db at once on a database that does not exist yet.
    _run_processes(_init, sqlite_url)
    engine = make_engine(sqlite_url)
    assert current_revision(engine) == head_revision()
    engine.dispose()


def test_processes_inserting_lose_no_rows(db_url):
    engine = _prepared(db_url)
    _run_processes(_add_participants, db_url)
    with session_scope(engine) as session:
        assert session.exec(select(func.count()).select_from(Participant)).one() == WORKERS * WRITES
        ids = set(session.exec(select(Participant.external_id)).all())
    assert ids == {f"w{k}-{i}" for k in range(WORKERS) for i in range(WRITES)}
    engine.dispose()


def test_sqlite_processes_updating_one_row_lose_no_updates(sqlite_url):
    engine = _prepared(sqlite_url)
    _run_processes(_increment, sqlite_url)
    with session_scope(engine) as session:
        assert session.exec(select(Study)).one().config == {"count": WORKERS * WRITES}
    engine.dispose()


def test_sqlite_threads_sharing_an_engine(sqlite_url):
    engine = _prepared(sqlite_url)
    errors = []

    def work(worker: int):
        try:
            for i in range(WRITES):
                with session_scope(engine) as session:
                    study = session.exec(select(Study).where(Study.name == "s")).one()
                    study.config = {"count": study.config["count"] + 1}
                    session.add(Participant(study_id=study.id, external_id=f"t{worker}-{i}"))
        except Exception as e:  # surfaced below; a thread's exception would otherwise vanish
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(WORKERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with session_scope(engine) as session:
        assert session.exec(select(func.count()).select_from(Participant)).one() == WORKERS * WRITES
        assert session.exec(select(Study)).one().config == {"count": WORKERS * WRITES}
    engine.dispose()
