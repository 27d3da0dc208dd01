"""Simulated annotators working at once against a running app, through the same JSON API as the
listening page, and the checks of what the database holds afterwards.

Used by benchmarks/bench_annotation.py (50 annotators, minutes) and by the test suite (a short
run). Each annotator is a thread with its own HTTP client: it fetches its next trial, "listens"
(sleeps its thinking time), submits, and sometimes sends the same answer twice (a retry after a
lost response) or walks away from a trial (its claim must expire and go to someone else).
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

import httpx
import numpy as np
from sqlmodel import Session, select

from storage.models import Assignment, ClipPair, Judgment
from storage.records import get_study


@dataclass
class Behaviour:
    think_s: tuple[float, float] = (0.0, 0.0)  # time spent on a trial, uniform in this range
    abandon: float = 0.0  # chance of leaving for good when given a trial
    resubmit: float = 0.0  # chance of sending the same answer again
    wait_poll_s: float = 0.2  # how soon to ask again when told to wait
    arrive_within_s: float = 0.0  # opens the link at a random moment in this window (0: all at once)


@dataclass
class SimulationResult:
    fetch_ms: list[float] = field(default_factory=list)
    submit_ms: list[float] = field(default_factory=list)
    stored: set = field(default_factory=set)  # (annotator token, trial id) acknowledged as stored
    resubmits: int = 0
    abandoned: int = 0
    completed: int = 0
    no_work: int = 0  # arrived when nothing was left to judge (no completion code)
    waits: int = 0
    errors: list[str] = field(default_factory=list)
    wall_s: float = 0.0

    def latency(self) -> dict:
        def stats(values):
            if not values:
                return {"n": 0}
            v = np.asarray(values)
            return {"n": len(v), "p50_ms": float(np.percentile(v, 50)), "p95_ms": float(np.percentile(v, 95)),
                    "max_ms": float(v.max())}
        return {"next": stats(self.fetch_ms), "submit": stats(self.submit_ms)}


def _annotate(base_url: str, token: str, behaviour: Behaviour, seed: int, result: SimulationResult, lock) -> None:
    rng = random.Random(seed)
    time.sleep(rng.uniform(0, behaviour.arrive_within_s))
    with httpx.Client(base_url=base_url, timeout=60.0) as client:
        while True:
            t0 = time.perf_counter()
            response = client.get("/api/annotate/next", params={"token": token})
            fetch_ms = (time.perf_counter() - t0) * 1000
            if response.status_code != 200:
                with lock:
                    result.errors.append(f"next: {response.status_code} {response.text}")
                return
            state = response.json()
            with lock:
                result.fetch_ms.append(fetch_ms)
            if state["status"] == "practice":
                client.post("/api/annotate/practice-done", json={"token": token}).raise_for_status()
                continue
            if state["status"] == "wait":
                with lock:
                    result.waits += 1
                time.sleep(min(state["retry_after_s"], behaviour.wait_poll_s))
                continue
            if state["status"] == "complete":
                with lock:
                    result.completed += 1
                return
            if state["status"] == "no_work":
                with lock:
                    result.no_work += 1
                return
            trial = state["trial"]
            if rng.random() < behaviour.abandon:
                with lock:
                    result.abandoned += 1
                return
            time.sleep(rng.uniform(*behaviour.think_s))
            body = {
                "token": token, "trial": trial["id"], "choice": rng.choice("AB"),
                "rating_a": rng.randint(1, 5), "rating_b": rng.randint(1, 5),
                "plays_a": 1, "plays_b": 1,
                "listened_s_a": trial["durations"]["A"], "listened_s_b": trial["durations"]["B"],
                "response_s": round(rng.uniform(5, 60), 3),
            }
            if trial["ask_artifact"]:
                body.update(artifact_rating_a=rng.randint(1, 5), artifact_rating_b=rng.randint(1, 5))
            sends = 2 if rng.random() < behaviour.resubmit else 1
            for attempt in range(sends):
                t0 = time.perf_counter()
                answer = client.post("/api/annotate/submit", json=body)
                submit_ms = (time.perf_counter() - t0) * 1000
                with lock:
                    result.submit_ms.append(submit_ms)
                    if answer.status_code != 200:
                        result.errors.append(f"submit: {answer.status_code} {answer.text}")
                    else:
                        result.stored.add((token, trial["id"]))
                        result.resubmits += attempt
                        if attempt and answer.json()["created"]:
                            result.errors.append(f"a resubmission of trial {trial['id']} created a second judgment")


def run_annotators(
    base_url: str, tokens: list[str], behaviour: Behaviour | list[Behaviour], seed: int = 0
) -> SimulationResult:
    """All annotators at once (one thread each); returns when every one has finished or left.
    `behaviour`: one for all, or one per token."""
    behaviours = behaviour if isinstance(behaviour, list) else [behaviour] * len(tokens)
    result, lock = SimulationResult(), threading.Lock()
    start = threading.Barrier(len(tokens))

    def worker(k, token):
        start.wait()
        try:
            _annotate(base_url, token, behaviours[k], seed * 100_003 + k, result, lock)
        except Exception as exc:  # noqa: BLE001 - reported, so a failing thread fails the run
            with lock:
                result.errors.append(f"annotator {k}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=worker, args=(k, t), daemon=True) for k, t in enumerate(tokens)]
    t0 = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    result.wall_s = time.perf_counter() - t0
    return result


def check_judgments(session: Session, study_name: str, k: int, result: SimulationResult | None = None) -> dict:
    """What the database holds after a run, and the guarantees: K distinct judges on every judged
    pair, no duplicates, every acknowledged answer stored (needs the hashes of the tokens)."""
    study = get_study(session, study_name)
    pairs = session.exec(
        select(ClipPair).where(ClipPair.study_id == study.id, ~ClipPair.is_attention_check, ~ClipPair.is_practice)
    ).all()
    ids = {p.id for p in pairs}
    judgments = session.exec(select(Judgment).where(Judgment.clip_pair_id.in_(ids))).all()
    per_pair = Counter(j.clip_pair_id for j in judgments)
    per_key = Counter((j.annotator_id, j.clip_pair_id) for j in judgments)
    done = session.exec(
        select(Assignment).where(Assignment.clip_pair_id.in_(ids), Assignment.status == "done")
    ).all()
    counts = [per_pair.get(i, 0) for i in ids]
    return {
        "pairs": len(ids),
        "judgments": len(judgments),
        "per_pair_min": min(counts),
        "per_pair_max": max(counts),
        "pairs_with_exactly_k": sum(c == k for c in counts),
        "duplicates": sum(n - 1 for n in per_key.values() if n > 1),
        "done_assignments": len(done),
        "judgments_without_done_assignment": len(
            {(j.annotator_id, j.clip_pair_id) for j in judgments} - {(a.annotator_id, a.clip_pair_id) for a in done}
        ),
    }


def stored_trials(session: Session) -> set[int]:
    """Assignment ids that carry a judgment (to compare with what the clients were told)."""
    rows = session.exec(
        select(Assignment.id).join(
            Judgment,
            (Judgment.annotator_id == Assignment.annotator_id) & (Judgment.clip_pair_id == Assignment.clip_pair_id),
        )
    ).all()
    return set(rows)
