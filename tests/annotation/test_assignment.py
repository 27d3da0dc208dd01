"""Assignment of trials, on a real SQLite file and a real PostgreSQL database: K judgments per
pair from distinct annotators, balanced load, claims that expire and go to someone else,
attention checks mixed in, and the database's own refusals of a (K+1)th holder or a second look."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest
import sqlalchemy as sa
from sqlmodel import select

from annotation.assignment import AssignmentSettings
from annotation.register import register_benchmark
from annotation.trials import (
    AccessDenied,
    authenticate,
    create_annotators,
    current_state,
    get_study,
    submit,
)
from storage.db import session_scope
from storage.models import Annotator, Assignment, ClipPair, Judgment, utc_now
from tests.annotation.small_benchmark import write_small_benchmark
from tests.databases import engine  # noqa: F401  (pytest fixture: real SQLite and PostgreSQL databases)

T0 = utc_now()


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    return write_small_benchmark(tmp_path_factory.mktemp("bench") / "b", pairs=5)


def setup_study(engine, bench, data_root, annotators, attention=0, **settings):
    with session_scope(engine) as session:
        register_benchmark(session, bench, "s", data_root, AssignmentSettings(**settings),
                           attention_checks=attention, practice=0, pause_s=1.0)
        return create_annotators(session, get_study(session, "s"), annotators)


def annotator_of(session, token):
    return authenticate(session, token, now=T0)


def state(engine, token, now=T0):
    with session_scope(engine) as session:
        return current_state(session, annotator_of(session, token), now=now)


def answer(engine, token, trial, now=T0):
    body = {"trial": trial["id"], "choice": "A", "rating_a": 3, "rating_b": 4, "plays_a": 1, "plays_b": 1,
            "listened_s_a": trial["durations"]["A"], "listened_s_b": trial["durations"]["B"], "response_s": 3.0}
    with session_scope(engine) as session:
        return submit(session, annotator_of(session, token), body, now=now)


def live_counts(engine, token=None) -> dict[int, int]:
    """Per pair: judged or claimed (the slots in use); with `token`, only the pairs that
    annotator has not had yet."""
    with session_scope(engine) as session:
        pairs = set(session.exec(select(ClipPair.id).where(~ClipPair.is_attention_check)).all())
        held = Counter(session.exec(select(Assignment.clip_pair_id).where(Assignment.slot.is_not(None))).all())
        if token is not None:
            seen = select(Assignment.clip_pair_id).where(Assignment.annotator_id == annotator_of(session, token).id)
            pairs -= set(session.exec(seen).all())
    return {p: held.get(p, 0) for p in pairs}


def test_each_pair_gets_k_distinct_annotators_with_balanced_load(engine, bench, tmp_path):
    tokens = setup_study(engine, bench, tmp_path / "data", annotators=8, judgments_per_pair=3,
                         trials_per_annotator=100)
    # Everybody claims a trial before anyone answers: after each claim the pairs stay within one.
    open_trials = {}
    for token in tokens[:7]:
        open_trials[token] = state(engine, token)["trial"]
        counts = live_counts(engine).values()
        assert max(counts) - min(counts) <= 1
    for token, trial in open_trials.items():
        answer(engine, token, trial)
    # Then one trial at a time in turns until nobody gets any more. Each new trial is a pair with
    # the fewest judges among those the annotator has not had (others may be lower but seen).
    finished = set()
    while len(finished) < len(tokens):
        for token in tokens:
            if token in finished:
                continue
            open_to_them = {p: n for p, n in live_counts(engine, token).items() if n < 3}
            current = state(engine, token)
            if current["status"] == "complete":
                assert open_to_them == {}
                finished.add(token)
                continue
            assert current["status"] == "trial"
            with session_scope(engine) as session:
                pair_id = session.get(Assignment, current["trial"]["id"]).clip_pair_id
            assert open_to_them[pair_id] == min(open_to_them.values())
            answer(engine, token, current["trial"])
    with session_scope(engine) as session:
        judgments = session.exec(select(Judgment)).all()
    per_pair = Counter(j.clip_pair_id for j in judgments)
    assert sorted(per_pair.values()) == [3] * 5
    assert len({(j.annotator_id, j.clip_pair_id) for j in judgments}) == 15
    # 15 judgments over 8 annotators: nobody does more than 2.
    assert max(Counter(j.annotator_id for j in judgments).values()) == 2


def test_an_expired_claim_goes_to_the_next_annotator(engine, bench, tmp_path):
    first, second = setup_study(engine, bench, tmp_path / "data", annotators=2, judgments_per_pair=1,
                                trials_per_annotator=1, claim_timeout_s=60)
    # Four of the five pairs are done by others; one is left.
    with session_scope(engine) as session:
        filler = create_annotators(session, get_study(session, "s"), 4)
    for token in filler:
        answer(engine, token, state(engine, token)["trial"])

    trial = state(engine, first)["trial"]
    # While the claim holds, the second annotator is told to wait, not sent away.
    assert state(engine, second, now=T0 + timedelta(seconds=59))["status"] == "wait"
    later = T0 + timedelta(seconds=61)
    with session_scope(engine) as session:
        held = session.get(Assignment, trial["id"])
        pair_id, slot = held.clip_pair_id, held.slot
    taken = state(engine, second, now=later)["trial"]
    with session_scope(engine) as session:
        # The first claim's row is gone; the second annotator holds the same pair and slot.
        [row] = session.exec(select(Assignment).where(Assignment.clip_pair_id == pair_id)).all()
        assert (row.id, row.slot, row.annotator_id) == (taken["id"], slot, annotator_of(session, second).id)
    with pytest.raises(AccessDenied, match=f"trial {trial['id']} is not assigned to you"):
        answer(engine, first, trial, now=later)
    # The first annotator waits while the pair is claimed; once it is judged, having judged
    # nothing, they have no work (and no completion code).
    assert state(engine, first, now=later)["status"] == "wait"
    answer(engine, second, taken, now=later)
    assert state(engine, first, now=later)["status"] == "no_work"
    with session_scope(engine) as session:
        assert len(session.exec(select(Judgment)).all()) == 5


def test_an_expired_claim_nobody_took_can_still_be_answered(engine, bench, tmp_path):
    [token] = setup_study(engine, bench, tmp_path / "data", annotators=1, judgments_per_pair=1,
                          trials_per_annotator=1, claim_timeout_s=60)
    trial = state(engine, token)["trial"]
    much_later = T0 + timedelta(hours=2)
    # Coming back (resume) renews it; answering works either way.
    assert state(engine, token, now=much_later)["trial"] == trial
    judgment, created = answer(engine, token, trial, now=much_later)
    assert created and judgment.submitted_at == much_later


def test_attention_checks_come_once_per_block(engine, bench, tmp_path):
    tokens = setup_study(engine, bench, tmp_path / "data", annotators=3, attention=2, judgments_per_pair=3,
                         trials_per_annotator=4, attention_every=2)
    for token in tokens:
        kinds = []
        while (current := state(engine, token))["status"] == "trial":
            with session_scope(engine) as session:
                a = session.get(Assignment, current["trial"]["id"])
                kinds.append(session.get(ClipPair, a.clip_pair_id).is_attention_check)
                assert current["progress"]["total"] == 6
            answer(engine, token, current["trial"])
        # 4 formal trials, one attention check within each block of 2 (checks end a block at the latest).
        assert len(kinds) == 6 and sum(kinds) == 2
        formal_before = [kinds[:i].count(False) for i, k in enumerate(kinds) if k]
        assert formal_before[0] <= 2 and 2 <= formal_before[1] <= 4
    with session_scope(engine) as session:
        attention = session.exec(
            select(Judgment.clip_pair_id).join(ClipPair).where(ClipPair.is_attention_check)
        ).all()
    assert sorted(Counter(attention).values()) == [3, 3]  # every annotator saw each check once


def test_the_database_refuses_a_taken_slot_and_a_second_look(engine, bench, tmp_path):
    setup_study(engine, bench, tmp_path / "data", annotators=2, judgments_per_pair=3)
    with session_scope(engine) as session:
        pair = session.exec(select(ClipPair)).first()
        a1, a2 = session.exec(select(Annotator)).all()
        session.add(Assignment(clip_pair_id=pair.id, annotator_id=a1.id, slot=0, position=1, natural_side="A"))
    cases = [
        Assignment(clip_pair_id=pair.id, annotator_id=a2.id, slot=0, position=1, natural_side="B"),  # slot taken
        Assignment(clip_pair_id=pair.id, annotator_id=a1.id, slot=1, position=2, natural_side="B"),  # seen already
        Assignment(clip_pair_id=pair.id + 1, annotator_id=a1.id, slot=0, position=1, natural_side="A"),  # 2 tabs
        Assignment(clip_pair_id=pair.id, annotator_id=a2.id, slot=1, position=1, natural_side="C"),  # no side C
    ]
    for row in cases:
        with pytest.raises(sa.exc.IntegrityError):
            with session_scope(engine) as session:
                session.add(row)
    with session_scope(engine) as session:
        assert len(session.exec(select(Assignment)).all()) == 1
