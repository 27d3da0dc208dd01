"""A call degraded by this server is blamed on the server, not on the participant's network: the
app, in a process of its own as deployed, is starved of CPU during a call over loopback (a perfect
network: nothing lost, a round trip under a millisecond). Its session is marked "degraded by this
server", with what the server measured of itself: its event loop late, its thread waiting for a
CPU. (The other half, a fifth of the packets dropped on an idle server, is "network too poor":
tests/test_remote_participants.py, test_a_call_losing_a_fifth_of_its_packets_is_not_analysed.)

Starving: the app's threads are pinned to one core beside two busy processes of a higher priority
(beside one, a run in four sent only 10 blocks late, too few to tell from a busy moment); this
test's own process (the participant's aiortc peer, the system's stand-in server) keeps the
other core. It takes the machine to itself (`machine_to_itself`): another test's processes on the
starved core would be starved too.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import httpx
import pytest

from speech.audio import resample
from storage.db import init_db, make_engine, session_scope
from storage.models import ConversationSession
from studies.call_quality import SERVER_BEHIND
from studies.config import apply_config, parse_config
from tests.browser import free_port
from tests.rendered_speech import Utterance, render_speech, speak
from tests.studies.aiortc_participant import participant_call
from tests.studies.fake_servers import fake_realtime
from tests.test_two_processes import start_app
from tests.waiting import wait_until

pytestmark = [pytest.mark.alone, pytest.mark.machine_to_itself]
TALK_S = 8.0
STARVED_CPU, OWN_CPU = 0, 1
HOG = "while True: pass"


def _pin(pid: int, cpu: int) -> None:
    """Every thread of process `pid` onto `cpu`."""
    subprocess.run(["taskset", "-a", "-p", "-c", str(cpu), str(pid)], check=True, capture_output=True)


@contextmanager
def starved(pid: int, hogs: int = 2, nice: int = -10):
    """Process `pid` on one core with `hogs` busy processes of priority `nice` (root may raise it)."""
    def hog_setup():
        os.sched_setaffinity(0, {STARVED_CPU})
        os.nice(nice)

    _pin(pid, STARVED_CPU)
    started = [subprocess.Popen([sys.executable, "-c", HOG], preexec_fn=hog_setup) for _ in range(hogs)]
    try:
        yield
    finally:
        for hog in started:
            hog.kill()
            hog.wait()


def _stored(engine, session_id: int):
    with session_scope(engine) as session:
        row = session.get(ConversationSession, session_id)
        return row if row is not None and row.status != "active" else None


def test_a_call_starved_of_cpu_on_a_perfect_network_is_blamed_on_the_server(tmp_path, monkeypatch):
    assert len(os.sched_getaffinity(0)) >= 2, "this test starves one core and needs another"
    monkeypatch.setenv("TEST_REALTIME_KEY", "test-key")
    url = f"sqlite:///{tmp_path / 'app.db'}"
    # speech both ways (a tone is no speech to the analysable check): the participant's two
    # sentences, the system's one answer after each
    mic = render_speech([Utterance(0, 0.3, "i would like to go hiking in the mountains this weekend"),
                         Utterance(0, 4.3, "do you think the weather will be good enough")], duration=TALK_S,
                        channels=1).samples[0]
    answer = resample(speak("yes it should be sunny and warm", voice="en-us+f3")[None, :], 16000, 24000)[0]
    everything = os.sched_getaffinity(0)
    with fake_realtime(reply_audio=answer) as (realtime_url, _):
        engine = make_engine(url)
        init_db(engine)
        with session_scope(engine) as session:
            apply_config(session, parse_config({
                "name": "starved", "session_seconds": 60, "min_call_seconds": 2, "topics": ["the weather"],
                "systems": [{"name": "remote", "kind": "realtime",
                             "config": {"url": realtime_url, "api_key_env": "TEST_REALTIME_KEY"}}]}))
        port = free_port()
        server = start_app(url, tmp_path / "data", port)
        base_url = f"http://127.0.0.1:{port}"
        try:
            _pin(os.getpid(), OWN_CPU)
            participant = httpx.post(f"{base_url}/participate/api/starved/consent", json={"external_id": "s-1"})
            assert participant.status_code == 200, participant.text
            calling = ThreadPoolExecutor(1).submit(
                asyncio.run, participant_call(base_url, participant.json(), "remote", mic, TALK_S))
            # once the call runs (the server has written its first figures), the server is starved
            wait_until(lambda: list((tmp_path / "data" / "sessions").glob("*/network.jsonl")), 60,
                       "the call to start")
            with starved(server.pid):
                call = calling.result(timeout=120)
            conversation = wait_until(lambda: _stored(engine, call["session_id"]), 30, "the call's session to be stored")
            # the participant's page is told it was not their fault
            state = httpx.get(f"{base_url}/participate/api/participant/{participant.json()['participant']}").json()
            assert state.get("last_call_degraded_by_server") == {"session_id": call["session_id"]}, \
                (state, conversation.quality_reason, conversation.network)
        finally:
            os.sched_setaffinity(0, everything)
            subprocess.run(["taskset", "-a", "-p", "-c", ",".join(map(str, sorted(everything))), str(os.getpid())],
                           capture_output=True)
            server.terminate()
            server.wait(timeout=30)

    network = conversation.network
    print("network:", {k: network[k] for k in ("loss_to_server", "loss_to_page", "rtt_ms_p50", "late_blocks",
                                                "loop_lag_ms_p90", "cpu_wait_p90")})
    print("reason:", conversation.quality_reason)
    assert conversation.analysable is False
    assert conversation.quality_reason.startswith(f"{SERVER_BEHIND}: system audio sent late")
    assert "waiting for a CPU" in conversation.quality_reason and network["cpu_wait_p90"] > 0.25
    # the network itself was perfect: the reason is not the participant's
    assert network["loss_to_server"] == 0.0 and "network" not in conversation.quality_reason
    engine.dispose()
