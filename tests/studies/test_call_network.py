"""Each call's network, from both ends, through the app's own WebRTC path: an aiortc participant
(the page's part played by tests/studies/aiortc_participant.py) calls a study system over
loopback and sends network samples on the data channel as the page does, some of them malformed.
The session's network.jsonl holds the page's valid samples (with the microphone clock at their
arrival) and the server's own once a second (aiortc's counters of the microphone's stream), the
malformed ones are dropped without harm to the call, and the summary is stored with the session.
"""

from __future__ import annotations

import asyncio
import json

import httpx
import numpy as np

from app import build_app
from storage.db import session_scope
from storage.models import ConversationSession
from studies.config import apply_config, parse_config
from studies.network_figures import read_network, summarise
from studies.sessions import network_relpath, timing_relpath
from tests.browser import serve
from tests.studies.aiortc_participant import participant_call
from tests.studies.fake_servers import fake_realtime

TALK_S = 4.5


def sample(t_ms: int, rtt_ms: float, lost: int, received: int) -> str:
    return json.dumps({"kind": "network", "t": t_ms, "rtt_ms": rtt_ms, "jitter_ms": 3.5, "packets_lost": lost,
                       "packets_received": received, "concealed_samples": 480, "total_samples_received": 48000,
                       "playout_delay_ms": 45.0, "candidate_type": "relay", "relay_protocol": "udp",
                       "remote_rtt_ms": None, "remote_fraction_lost": 0.0, "remote_packets_lost": 0})


MALFORMED = ("not json", "[1, 2]", json.dumps({"kind": "network", "rtt_ms": "fast"}),
             json.dumps({"kind": "network", "t": -5}), json.dumps({"kind": "network", "candidate_type": "<b>"}),
             json.dumps({"kind": "network", "packets_lost": True}), "{" + "x" * 5000 + "}",
             '{"kind": "network", "rtt_ms": NaN}')


def test_a_calls_network_is_written_from_both_ends_and_stored(tmp_path, monkeypatch):
    monkeypatch.setenv("TEST_REALTIME_KEY", "test-key")
    app = build_app(database_url=f"sqlite:///{tmp_path / 'app.db'}", data_root=tmp_path, researcher_password="pw")
    mic = (0.3 * np.sin(2 * np.pi * 440 * np.arange(int(TALK_S * 16000)) / 16000)).astype(np.float32)
    messages = (sample(1000, 81.0, 1, 49), *MALFORMED, sample(2000, 85.0, 2, 98))
    with fake_realtime(reply_s=1.0) as (url, _):
        with session_scope(app.state.engine) as session:
            apply_config(session, parse_config({
                "name": "netcall", "session_seconds": 60, "topics": ["the weather"],
                "systems": [{"name": "remote", "kind": "realtime",
                             "config": {"url": url, "api_key_env": "TEST_REALTIME_KEY"}}]}))
        with serve(app) as base_url:
            participant = httpx.post(f"{base_url}/participate/api/netcall/consent", json={"external_id": "n-1"})
            assert participant.status_code == 200, participant.text
            call = asyncio.run(participant_call(base_url, participant.json(), "remote", mic, TALK_S,
                                                page_messages=messages))
    session_id = call["session_id"]
    rows = read_network(tmp_path / network_relpath(session_id))
    page = [r for r in rows if r["side"] == "page"]
    server = [r for r in rows if r["side"] == "server"]
    print("page rows:", page)
    print("server rows:", server)
    # The two valid samples, in order, each where the microphone's clock was when it came; nothing else.
    assert [(r["page_t_ms"], r["rtt_ms"], r["packets_lost"]) for r in page] == [(1000.0, 81.0, 1.0), (2000.0, 85.0, 2.0)]
    assert all(0 <= r["mic_s"] <= TALK_S + 1 and r["t_s"] >= 0 for r in page)
    # The server's own, once a second and once more at the end: the microphone's 20 ms packets.
    assert len(server) >= 3, server
    assert [r["mic_s"] for r in server] == sorted(r["mic_s"] for r in server)
    last = server[-1]
    assert last["packets_received"] >= 0.6 * TALK_S * 50, last  # most of the call's packets, counted
    assert last["packets_lost"] == 0 and last["lost_mic_samples"] == 0  # loopback loses nothing
    assert isinstance(last["late_blocks"], int) and isinstance(last["jitter_ms"], float)
    # how far the server itself was behind, each second (studies.server_load): an idle one hardly
    timed = [r for r in server if "loop_lag_ms" in r]
    assert len(timed) >= 2 and all(0 <= r["loop_lag_ms"] < 1000 for r in timed), timed
    assert all(r["cpu_wait"] is None or 0 <= r["cpu_wait"] <= 1 for r in timed) and timed[-1]["cpu_wait"] is not None
    with session_scope(app.state.engine) as session:
        conversation = session.get(ConversationSession, session_id)
        assert conversation.status == "complete"  # the malformed messages did not disturb the call
        stored = conversation.network
    assert stored == summarise(rows)
    assert (stored["rtt_ms_p50"], stored["candidate_type"], stored["loss_to_page"]) == (83.0, "relay", 0.02)
    assert stored["loss_to_server"] == 0.0 and stored["page_samples"] == 2 and stored["server_samples"] == len(server)
    assert (tmp_path / timing_relpath(session_id)).is_file()
    app.state.engine.dispose()
