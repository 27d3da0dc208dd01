"""Several workers: `python app.py --workers 2` on one real PostgreSQL, everything through the
single HAProxy front. A participant's call (a real WebRTC connection from aiortc to a
Realtime-protocol system) stays on the worker that answered its offer; annotators without shared
cookies spread over both workers and every pair ends with exactly K judgments; the researcher logs
in through the front in Chromium and a Gradio view fills (Gradio's queue needs one process per
browser); failed logins count across workers; a killed worker is started again by the supervisor
and the call on the other one goes on undisturbed."""

from __future__ import annotations

import asyncio
import csv
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import soundfile
from aiortc import RTCPeerConnection, RTCSessionDescription
from aiortc.mediastreams import AudioStreamTrack
from playwright.sync_api import expect
from sqlmodel import select

import app
import app_workers
from analysis.dashboard import RESEARCHER_USER
from annotation.assignment import AssignmentSettings
from annotation.register import register_benchmark
from annotation.simulate import Behaviour, check_judgments, run_annotators, stored_trials
from annotation.trials import create_annotators, get_study
from storage.db import init_db, make_engine, session_scope
from storage.models import ConversationSession, LoginFailure
from studies.config import apply_config, parse_config
from studies.participant_secret import HEADER
from studies.sessions import call_relpath
from tests.annotation.small_benchmark import write_small_benchmark
from tests.browser import answers, free_port, log_in_researcher
from tests.databases import postgres_url  # noqa: F401  (pytest fixture)
from tests.studies.fake_servers import fake_realtime
from tests.waiting import poll, wait_until
from webguard.login_throttle import MAX_PER_CLIENT

ROOT = Path(__file__).resolve().parents[1]
PASSWORD = "pw-for-both-workers"
WORKER = app_workers.WORKER_HEADER


class Front:
    """`app.py --workers 2` as a child process; its printed lines are collected as they come."""

    def __init__(self, url: str, data_root: Path, port: int):
        env = {**os.environ, "TURNTAKING_DATA": str(data_root), "TURNTAKING_RESEARCHER_PASSWORD": PASSWORD}
        self.process = subprocess.Popen(
            # no embedded system is called here (the call goes to a Realtime-protocol server): the
            # workers leave the demo study's models unloaded
            [sys.executable, "app.py", "--workers", "2", "--port", str(port), "--database-url", url,
             "--no-model-preload"],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.url, self.lines = f"http://127.0.0.1:{port}", []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, pattern: str, after: int = 0, timeout_s: float = 300) -> re.Match:

        def printed() -> re.Match | None:
            for line in self.lines[after:]:
                if match := re.search(pattern, line):
                    return match
            assert self.process.poll() is None, "\n".join(self.lines)
            return None

        match = poll(printed, timeout_s)
        assert match, f"no line matching {pattern!r} in:\n" + "\n".join(self.lines)
        return match

    def workers(self, after: int = 0) -> dict[str, tuple[int, int]]:
        """name -> (pid, port) of the latest start of each worker printed after line `after`."""
        found = {}
        for line in self.lines[after:]:
            if match := re.match(r"worker (w\d+): pid (\d+) on 127\.0\.0\.1:(\d+)", line):
                found[match[1]] = (int(match[2]), int(match[3]))
        return found

    def sessions_per_worker(self) -> dict[str, int]:
        """HAProxy's count of client sessions given to each worker (its stats socket)."""
        state_dir = self.wait_for(r"config and stats socket in (\S+)\)")[1]
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(f"{state_dir}/haproxy.sock")
            s.sendall(b"show stat\n")
            data = b""
            while chunk := s.recv(65536):
                data += chunk
        rows = csv.DictReader(data.decode().lstrip("# ").splitlines())
        return {r["svname"]: int(r["stot"]) for r in rows if r["pxname"] == "workers" and r["svname"].startswith("w")}


class BrowserCall:
    """The participant's side of a WebRTC call (aiortc, a silent mic), on its own event loop."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.pc = self.run(self._new_pc())

    def run(self, coroutine, timeout_s: float = 30):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout_s)

    async def _new_pc(self):
        return RTCPeerConnection()

    async def _offer(self):
        self.pc.addTrack(AudioStreamTrack())
        await self.pc.setLocalDescription(await self.pc.createOffer())
        return self.pc.localDescription

    def offer(self) -> RTCSessionDescription:
        return self.run(self._offer())

    def accept(self, answer: dict) -> None:
        self.run(self.pc.setRemoteDescription(RTCSessionDescription(sdp=answer["sdp"], type=answer["type"])))

    def state(self) -> str:
        return self.pc.connectionState

    def close(self) -> None:
        self.run(self.pc.close())
        self.loop.call_soon_threadsafe(self.loop.stop)


def login(url: str, password: str, source: str = "127.0.0.1") -> int:
    with httpx.Client(transport=httpx.HTTPTransport(local_address=source), timeout=30) as c:
        return c.post(f"{url}/analyze/login", data={"username": RESEARCHER_USER, "password": password}).status_code


def test_two_workers_behind_one_front(postgres_url, tmp_path, browser):
    data_root = tmp_path / "data"
    engine = make_engine(postgres_url)
    init_db(engine)
    bench = write_small_benchmark(tmp_path / "bench", pairs=10, controls=1)
    settings = AssignmentSettings(judgments_per_pair=2, trials_per_annotator=6, attention_every=5)
    key_file = tmp_path / "realtime.key"
    key_file.write_text("worker-key\n")
    with fake_realtime(reply_s=1.0) as (realtime_url, realtime_log):
        with session_scope(engine) as session:
            register_benchmark(session, bench, "s", data_root, settings, attention_checks=1, practice=1, pause_s=1.0)
            tokens = create_annotators(session, get_study(session, "s"), 8)
            apply_config(session, parse_config({"name": "calls", "topics": ["hiking"], "session_seconds": 600,
                                                "systems": [{"name": "rt", "kind": "realtime",
                                                             "config": {"url": realtime_url,
                                                                        "api_key_file": str(key_file)}}]}))
        front = Front(postgres_url, data_root, free_port())
        call = None
        try:
            front.wait_for(r"Researcher login: user 'researcher', password from TURNTAKING_RESEARCHER_PASSWORD")
            workers = front.workers()
            assert sorted(workers) == ["w1", "w2"]
            assert all(answers(f"http://127.0.0.1:{port}/") for _, port in workers.values())

            # A participant: consent, offer and end through the front, all on one worker.
            participant = httpx.Client(base_url=front.url, timeout=60)
            consent = participant.post("/participate/api/calls/consent", json={})
            assert consent.status_code == 200, consent.text
            holder = consent.headers[WORKER]
            secret = {HEADER: consent.json()["secret"]}
            call = BrowserCall()
            offer = call.offer()
            answer = participant.post("/participate/api/offer", headers=secret, json={
                "participant": consent.json()["participant"], "system": "rt", "topic": "hiking",
                "sdp": offer.sdp, "type": offer.type})
            assert answer.status_code == 200, answer.text
            assert answer.headers[WORKER] == holder
            session_id = answer.json()["session_id"]
            call.accept(answer.json())
            wait_until(lambda: call.state() == "connected", what="the WebRTC connection")
            assert realtime_log["headers"]["authorization"] == "Bearer worker-key"  # read by the worker
            wav = data_root / call_relpath(session_id)
            wait_until(lambda: wav.is_file() and soundfile.info(str(wav)).frames > 0, what="the call's recording")

            # Annotators, each with its own client (own cookies), through the front: both workers serve.
            before = front.sessions_per_worker()
            first = run_annotators(front.url, tokens[:3], Behaviour(resubmit=0.2), seed=1)
            served = {name: n - before[name] for name, n in front.sessions_per_worker().items()}
            print("client sessions per worker (annotators):", served)
            assert first.errors == [] and all(n > 0 for n in served.values()), served

            # The researcher through the front in a real browser: login, then Gradio's queue fills a view.
            # (The suite's one Chromium: a second Playwright in this thread would be refused.)
            context = browser.new_context()
            page = context.new_page()
            page.set_default_timeout(60_000)
            log_in_researcher(page, front.url, PASSWORD, RESEARCHER_USER)
            expect(page.get_by_role("tab", name="Study overview")).to_be_visible()
            expect(page.get_by_label("Study", exact=True)).to_have_value(re.compile(r"\w"))
            context.close()

            # Guesses spread over both workers (and the front) count together: one database.
            guesser = "127.0.0.3"
            w1, w2 = (f"http://127.0.0.1:{workers[name][1]}" for name in ("w1", "w2"))
            statuses = [login(url, "guess", guesser) for url in [w1, w2, front.url, w1, w2][:MAX_PER_CLIENT]]
            assert statuses == [400] * MAX_PER_CLIENT
            assert login(w1, PASSWORD, guesser) == 429 and login(front.url, PASSWORD, guesser) == 429
            assert login(front.url, PASSWORD) == 200  # the front forwards each browser's own address
            with session_scope(engine) as session:
                assert {f.client for f in session.exec(select(LoginFailure))} == {guesser}

            # The worker without the call is killed: the supervisor starts it again; the call goes on.
            other = "w2" if holder == "w1" else "w1"
            seen = len(front.lines)
            os.kill(workers[other][0], signal.SIGKILL)
            front.wait_for(rf"worker {other}: pid \d+ on", after=seen, timeout_s=60)
            assert front.workers(after=seen)[other][0] != workers[other][0]
            wait_until(lambda: answers(f"http://127.0.0.1:{workers[other][1]}/"), timeout_s=300,
                       what=f"the restarted {other}")
            frames = soundfile.info(str(wav)).frames
            second = run_annotators(front.url, tokens[3:], Behaviour(resubmit=0.2), seed=2)
            print("annotators' trials stored:", len(first.stored), "+", len(second.stored))
            assert second.errors == []
            assert call.state() == "connected" and soundfile.info(str(wav)).frames > frames
            with session_scope(engine) as session:
                assert session.get(ConversationSession, session_id).status == "active"

            ended = participant.post(f"/participate/api/end/{session_id}", headers=secret)
            assert ended.status_code == 200 and ended.headers[WORKER] == holder
            with session_scope(engine) as session:  # ended by the process holding the call
                assert session.get(ConversationSession, session_id).status == "complete"
                check = check_judgments(session, "s", k=2)
                acknowledged = {trial for result in (first, second) for _, trial in result.stored}
                assert stored_trials(session) == acknowledged  # nothing lost, nothing unacknowledged
        finally:
            if call is not None:
                call.close()
            if front.process.poll() is None:
                front.process.terminate()  # SIGTERM: the supervisor stops haproxy and the workers
                assert front.process.wait(timeout=30) == 0
            engine.dispose()
    assert check["pairs_with_exactly_k"] == check["pairs"] == 11 and check["duplicates"] == 0
    assert check["per_pair_min"] == check["per_pair_max"] == 2
    for pid, _ in [*workers.values(), *front.workers(after=seen).values()]:
        assert not _alive(pid), f"worker pid {pid} outlived its supervisor"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_bad_worker_counts_get_one_line_errors(capsys):
    done = subprocess.run([sys.executable, "app.py", "--workers", "0"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip() == f"error: --workers 0: give 1 to {app_workers.MAX_WORKERS} " \
                                  "(each worker loads the dialogue systems' models)"
    # the same check as app.main(argv) in this process (an interpreter start costs seconds)
    assert app.main(["--workers", "1000"]) == 2
    assert capsys.readouterr().err.strip() == f"error: --workers 1000: give 1 to {app_workers.MAX_WORKERS} " \
                                              "(each worker loads the dialogue systems' models)"


def test_the_haproxy_config_is_valid_and_sticky(tmp_path):
    workers = app_workers.plan_workers(3, free_port())
    config = tmp_path / "haproxy.cfg"
    config.write_text(app_workers.haproxy_config("0.0.0.0", 7860, workers, tmp_path / "haproxy.sock"))
    checked = subprocess.run([app_workers.find_haproxy(), "-c", "-f", str(config)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    text = config.read_text()
    assert f"cookie {app_workers.STICKY_COOKIE} insert indirect nocache" in text
    assert [w.port for w in workers] == list(range(workers[0].port, workers[0].port + 3))
    for worker in workers:
        assert f"server {worker.name} 127.0.0.1:{worker.port} cookie {worker.name} check" in text


def test_a_poll_that_reads_its_own_request_back_is_not_answering_yet():
    """Polling a worker's port before it listens can connect the poll to itself (the kernel may
    pick that ephemeral port as the source) and read its own request back. That once stopped
    `app.py --workers 2` in this suite with http.client.BadStatusLine: "GET / HTTP/1.1". The
    supervisor's check must say "not answering yet" and keep waiting. A real socket echoing the
    request stands in for the self-connected one."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()

        def echo_one_request():
            connection, _ = server.accept()
            with connection:
                connection.sendall(connection.recv(65536))

        thread = threading.Thread(target=echo_one_request, daemon=True)
        thread.start()
        assert app_workers._answers(f"http://127.0.0.1:{server.getsockname()[1]}") is False
        thread.join(timeout=10)
        assert not thread.is_alive()
