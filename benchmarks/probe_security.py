"""The outsider's probes of the security issue, re-run against a live `python app.py` (SQLite, or
--database-url): each line says what a stranger tried and what the server answered.

    .venv/bin/python benchmarks/probe_security.py [--database-url URL]

Finding 2 (a second process) is probed by tests/test_two_processes.py on PostgreSQL.
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
from pathlib import Path

import httpx
import soundfile

from annotation.assignment import AssignmentSettings
from annotation.register import register_benchmark
from annotation.trials import create_annotators, get_study
from storage.db import init_db, make_engine, session_scope
from storage.demo import DEMO_STUDY
from tests.annotation.small_benchmark import write_small_benchmark
from tests.browser import free_port

from bench_annotation import start_app  # this folder: the same live `python app.py`


def probe(client: httpx.Client, engine, data_root: Path) -> None:
    consent = client.post(f"/participate/api/{DEMO_STUDY}/consent", json={}).json()
    print(f"1. consent hands out a secret of {len(consent['secret'])} characters")
    for what, response in (
        ("end session 1 without the secret", client.post("/participate/api/end/1", json={})),
        ("upload a listener recording to session 1", client.post("/participate/api/listener/1", content=b"RIFF")),
        ("offer a call for someone's participant id", client.post("/participate/api/offer", json={
            "participant": consent["participant"], "system": "x", "topic": "y", "sdp": "v=0", "type": "offer"})),
    ):
        print(f"1. stranger: {what}: {response.status_code}")
    for area in ("annotate", "participate"):
        got = client.get(f"/{area}/gradio_api/file={data_root}/turntaking.db")
        up = client.post(f"/{area}/gradio_api/upload", files={"files": ("big.bin", b"x" * 1000)})
        print(f"3. /{area}/: fetch a server file {got.status_code}, anonymous upload {up.status_code}")

    bench = write_small_benchmark(data_root / "bench", pairs=4, controls=1)
    with session_scope(engine) as session:
        register_benchmark(session, bench, "probe", data_root, AssignmentSettings(judgments_per_pair=1),
                           attention_checks=1, practice=1, pause_s=1.0)
        [token] = create_annotators(session, get_study(session, "probe"), 1)
    arrival = {"study": "probe", "PROLIFIC_PID": "made-up", "STUDY_ID": "any", "SESSION_ID": "s"}
    print(f"4. Prolific arrival for a study without a configured STUDY_ID: "
          f"{client.post('/api/annotate/prolific', json=arrival).status_code}")

    started, answers = time.monotonic(), []
    for n in range(40):
        answers.append(client.post("/analyze/login", data={"username": "researcher", "password": f"guess{n}"}).status_code)
    print(f"5. 40 wrong passwords in {time.monotonic() - started:.2f} s: "
          + ", ".join(f"{answers.count(c)} x {c}" for c in sorted(set(answers))))

    state = client.get("/api/annotate/next", params={"token": token}).json()
    [practice] = state["practice"]
    lengths = {side: soundfile.info(io.BytesIO(client.get(f"/api/annotate/practice/0/{side}",
                                                          params={"token": token}).content)).duration
               for side in "AB"}
    print(f"7. practice trial: /next gives durations {practice['durations']}; "
          f"served audio A {lengths['A']:.3f} s, B {lengths['B']:.3f} s")
    client.post("/api/annotate/practice-done", json={"token": token})
    trial = client.get("/api/annotate/next", params={"token": token}).json()["trial"]
    body = {"token": token, "trial": trial["id"], "choice": "A", "rating_a": 3, "rating_b": 3, "plays": 1,
            "listened_s": 10.0, "response_s": 5.0}
    for field, value in (("plays", 2**70), ("listened_s", 1e308), ("response_s", 2**63 - 1)):
        print(f"6. submit with {field} = {value:.3g}: {client.post('/api/annotate/submit', json={**body, field: value}).status_code}")
    deep = b'{"token": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    print(f"6. a 100,000-deep JSON body: {client.post('/api/annotate/submit', content=deep).status_code}")
    started = time.monotonic()
    huge = client.post("/api/annotate/submit", content=b" " * (100 << 20), headers={"content-type": "application/json"})
    print(f"6. a 100 MiB body: {huge.status_code} after {time.monotonic() - started:.2f} s")
    for what, external in (("a dict", {"a": 1}), ("1 MiB", "x" * (1 << 20)), ("a NUL byte", "a\u0000b")):
        got = client.post(f"/participate/api/{DEMO_STUDY}/consent", json={"external_id": external})
        print(f"8. consent with {what} as external_id: {got.status_code}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", help="default: SQLite in a temporary data root")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        data_root = Path(tmp)
        url = args.database_url or f"sqlite:///{data_root / 'turntaking.db'}"
        engine = make_engine(url)
        init_db(engine)
        port = free_port()
        server = start_app(url, data_root, port)
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
                probe(client, engine, data_root)
        finally:
            server.terminate()
            server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
