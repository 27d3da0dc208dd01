"""The embedded cascade served as its own process (`python -m studies serve-realtime`) over the
OpenAI Realtime protocol: a participant's call through the app (consent, WebRTC offer, recorder,
session row) to a study system of kind `realtime` pointing at that server; and the protocol
itself with a raw WebSocket client (bad messages get `error` events, the call goes on, a
closed connection frees its system). The server has an API key: requests without it get 401,
wrong keys from one address 429 after the researcher login's number of failures, and a server
that would listen beyond loopback refuses to start without a key.

The server runs the packaged models (Silero, Whisper tiny.en, SmolLM2-135M, Piper) in a
separate process started by the test; the participant is espeak-ng speech sent by an aiortc
peer, the app's own WebRTC path without a browser.
"""

from __future__ import annotations

from contextlib import contextmanager

import asyncio
import base64
import json
import os
import re
import signal
import ssl
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import numpy as np
import pytest
import soundfile
import websockets
from sqlmodel import select

from app import build_app
from app_workers import find_haproxy
from speech.audio import resample
from storage.db import session_scope
from storage.files import resolve
from storage.models import ConversationSession, Recording
from studies.__main__ import main as studies_main
from studies.config import apply_config, parse_config
from studies.offline_call import active_segments, reply_latencies
from systems.api_keys import REALTIME_KEY_ENV
from systems.realtime_client import RealtimeClient
from tests.browser import free_port, serve
from tests.studies.aiortc_participant import participant_call
from tests.studies.conftest import espeak_16k, scripted_user
from tests.studies.realtime_events import validated
from tests.waiting import sleep_until_async, wait_until
from webguard.login_throttle import MAX_PER_CLIENT

ROOT = Path(__file__).resolve().parents[2]
SERVER_START_S = 300  # a first run converts the LLM (about a minute on a busy machine)
SERVER_KEY = "test-realtime-key-5f1c9a2e7b"
AUTH = {"Authorization": f"Bearer {SERVER_KEY}"}
WRONG = {"Authorization": "Bearer test-realtime-key-guessed-0"}
# Requests without the key count as failures of their address: each test that makes them uses its
# own loopback address, so 127.0.0.1 (the calls) never reaches the throttle's limit.



@contextmanager
def serving_realtime(log: Path, *options: str):
    """`python -m studies serve-realtime --system cascaded --port 0 --max-calls 1 OPTIONS` in its own
    process, without the key variable of the suite's environment; yields its ws:// URL once it serves."""
    env = {name: value for name, value in os.environ.items() if name != REALTIME_KEY_ENV}
    with open(log, "w") as errors:
        process = subprocess.Popen(
            [sys.executable, "-m", "studies", "serve-realtime", "--system", "cascaded", "--port", "0",
             "--max-calls", "1", *options],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=errors, text=True, env=env)
    lines: list[str] = []
    ready = threading.Event()

    def read():
        for line in process.stdout:
            lines.append(line)
            if line.startswith("serving "):
                ready.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        if not ready.wait(SERVER_START_S):
            raise RuntimeError(f"the server did not start: {''.join(lines)} {log.read_text()[-2000:]}")
        yield next(line for line in lines if line.startswith("serving ")).split(" on ")[1].strip()
    finally:
        process.terminate()
        process.wait(10)


@dataclass(frozen=True)
class Served:
    url: str  # ws://127.0.0.1:PORT/v1/realtime
    http: str  # http://127.0.0.1:PORT
    log: Path  # the server's stderr (its log lines)


@pytest.fixture(scope="module")
def cascade_server(tmp_path_factory) -> Served:
    """`python -m studies serve-realtime --system cascaded --max-calls 1 --api-key-file KEY` on a free port."""
    folder = tmp_path_factory.mktemp("server")
    log, key_file = folder / "server.log", folder / "server.key"
    key_file.write_text(SERVER_KEY + "\n")
    key_file.chmod(0o600)
    with serving_realtime(log, "--api-key-file", str(key_file)) as url:
        yield Served(url, url.replace("ws://", "http://").replace("/v1/realtime", ""), log)


def test_a_call_through_the_app_to_a_separate_cascade_server(cascade_server, tmp_path, monkeypatch):
    url = cascade_server.url
    # Two servers listed: one that is down (port 9), the live one. The call goes to the live one,
    # with the key the study names: an environment variable of the app's.
    monkeypatch.setenv("TEST_REALTIME_KEY", SERVER_KEY)
    down = "ws://127.0.0.1:9/v1/realtime"
    app = build_app(database_url=f"sqlite:///{tmp_path / 'app.db'}", data_root=tmp_path, researcher_password="pw")
    engine = app.state.engine
    with session_scope(engine) as session:
        apply_config(session, parse_config({
            "name": "remote", "session_seconds": 60, "topics": ["preparing for a hike"],
            "systems": [{"name": "remote-cascade", "kind": "realtime",
                         "config": {"url": [down, url], "api_key_env": "TEST_REALTIME_KEY",
                                    "instructions": "You are a hiking guide. "
                                    "Talk with a person about {topic}. Answer in one or two short sentences."}}],
        }))
    user_wav, _ = scripted_user(tmp_path, ["Hello, I would like to go hiking this weekend.",
                                               "What should I bring with me?"], gap_s=6.0)
    mic, _ = soundfile.read(str(user_wav), dtype="float32")
    with serve(app) as base_url:
        ready = httpx.get(f"{base_url}/participate/api/ready/remote/remote-cascade")
        assert ready.status_code == 200 and ready.json()["status"] == "ready"  # nothing to load in the app
        participant = httpx.post(f"{base_url}/participate/api/remote/consent", json={"external_id": "remote-1"})
        assert participant.status_code == 200
        call = asyncio.run(participant_call(base_url, participant.json(), "remote-cascade", mic,
                                            talk_s=len(mic) / 16000 + 6.0))

    with session_scope(engine) as session:
        conversation = session.get(ConversationSession, call["session_id"])
        recording = session.exec(select(Recording).where(Recording.session_id == conversation.id,
                                                         Recording.kind == "two-channel")).one()
        assert conversation.status == "complete"
        assert conversation.topic == "preparing for a hike"
        path = resolve(recording.path, tmp_path)
    audio, rate = soundfile.read(str(path), dtype="float32")
    assert rate == 16000 and audio.shape[1] == 2
    # The participant's two turns are on channel 0; the server's spoken replies on channel 1,
    # each after a turn ended.
    user = active_segments(audio[:, 0])
    assert len(user) >= 2, user
    latencies, unanswered = reply_latencies(audio[:, 0], audio[:, 1])
    print("reply latencies through the server:", latencies, "unanswered:", unanswered)
    assert len(latencies) >= 1 and all(0 < lat < 5 for lat in latencies), latencies
    system = active_segments(audio[:, 1])
    assert system and system[0][0] > user[0][1], (system, user)
    assert sum(end - start for start, end in system) > 0.5
    # ... and the participant heard them over WebRTC.
    assert max(call["heard"]) > 0.05

    events = [json.loads(line) for line in (path.parent / "timing.jsonl").read_text().splitlines()]
    kinds = [event["event"] for event in events]
    print("timing log:", [k for k in kinds if k not in ("clock", "system")])
    connected = [event for event in events if event["event"] == "connected"]
    assert connected and connected[0]["url"] == url  # the live server of the two
    for kind in ("speech_start", "turn_end", "transcript", "text", "reply"):
        assert kind in kinds, (kind, kinds)
    # The server's VAD heard the participant's first turn end, and its recogniser the words.
    transcripts = " ".join(event["text"] for event in events if event["event"] == "transcript").lower()
    assert "hiking" in transcripts or "bring" in transcripts, transcripts


async def _next(ws, kind: str, timeout: float = 20.0) -> dict:
    """The next server event of type `kind` (others skipped); each one a GA event of the openai
    package's types."""
    deadline = time.monotonic() + timeout
    while True:
        event = json.loads(await asyncio.wait_for(ws.recv(), max(0.1, deadline - time.monotonic())))
        validated(event, "server")
        if event["type"] == kind:
            return event


async def _send(ws, event: dict) -> None:
    """A client event, checked against the openai package's GA types first."""
    validated(event, "client")
    await ws.send(json.dumps(event))


def test_the_protocol_errors_and_a_turn_over_a_raw_websocket(cascade_server, tmp_path):
    url, http = cascade_server.url, cascade_server.http
    speech = espeak_16k("Can you tell me a good place for pizza?", tmp_path / "line.wav")
    audio_24k = np.concatenate([np.zeros(12000, np.float32), resample(speech, 16000, 24000),
                                np.zeros(24000 * 5, np.float32)])
    pcm = (np.clip(audio_24k, -1, 1) * 32767).astype("<i2")

    async def talk():
        async with websockets.connect(url, additional_headers=AUTH) as ws:
            created = validated(await ws.recv(), "server")
            assert created.type == "session.created" and created.session.type == "realtime"
            assert created.session.audio.input.format.type == "audio/pcm"
            status = await asyncio.to_thread(httpx.get, f"{http}/status", headers=AUTH)
            assert status.json()["calls"] == 1 and status.json()["max_calls"] == 1
            # A second call is refused while this one runs (a client with several urls tries the next).
            with pytest.raises(websockets.InvalidStatus) as refused:
                await websockets.connect(url, additional_headers=AUTH)
            assert refused.value.response.status_code == 503

            async def error_for(message: str) -> str:
                await ws.send(message)
                return (await _next(ws, "error"))["error"]["message"]

            assert "not JSON" in await error_for("{not json")
            assert "unknown event type 'bogus'" in await error_for(json.dumps({"type": "bogus"}))
            assert "'type'" in await error_for(json.dumps([1, 2]))
            assert "not base64" in await error_for(json.dumps({"type": "input_audio_buffer.append", "audio": "@@"}))
            # The beta shape is refused with what to send instead; the GA one with another format too.
            beta = {"type": "session.update", "session": {"input_audio_format": "pcm16", "modalities": ["audio"]}}
            validated(beta, "client", "beta")
            assert "session.type must be 'realtime'" in await error_for(json.dumps(beta))
            ulaw = {"type": "session.update", "session": {"type": "realtime",
                                                          "audio": {"input": {"format": {"type": "audio/pcmu"}}}}}
            validated(ulaw, "client")
            assert "audio/pcm at 24000 Hz only" in await error_for(json.dumps(ulaw))
            semantic = {"type": "session.update", "session": {
                "type": "realtime", "audio": {"input": {"turn_detection": {"type": "semantic_vad"}}}}}
            validated(semantic, "client")
            assert "server_vad" in await error_for(json.dumps(semantic))
            # ... and the call goes on: instructions, then a turn in real time (100 ms appends).
            await _send(ws, {"type": "session.update", "session": {
                "type": "realtime", "instructions": "You are a guide to New York {city}. Answer in one short sentence.",
                "audio": {"input": {"format": {"type": "audio/pcm", "rate": 24000},
                                    "turn_detection": {"type": "server_vad"}},
                          "output": {"format": {"type": "audio/pcm", "rate": 24000}}}}})
            updated = await _next(ws, "session.updated")
            assert updated["session"]["instructions"].startswith("You are a guide to New York {city}")
            # A client's barge-in names the reply it cut and how much of it was heard.
            await _send(ws, {"type": "conversation.item.truncate", "item_id": "item_7", "content_index": 0,
                             "audio_end_ms": 640})
            truncated = await _next(ws, "conversation.item.truncated")
            assert (truncated["item_id"], truncated["audio_end_ms"]) == ("item_7", 640)
            events: list[dict] = []
            replied = asyncio.Event()

            async def read():
                async for message in ws:
                    events.append(json.loads(message))
                    if events[-1]["type"] == "response.done":
                        replied.set()

            reader = asyncio.ensure_future(read())
            start = time.monotonic()
            for k, first in enumerate(range(0, len(pcm), 2400)):
                await sleep_until_async(start + k * 0.1)  # 100 ms of audio each 100 ms: a live microphone
                chunk = base64.b64encode(pcm[first:first + 2400].tobytes()).decode()
                await _send(ws, {"type": "input_audio_buffer.append", "audio": chunk})
            # The reply is done once its audio has played out in real time (later on a busy machine).
            await asyncio.wait_for(replied.wait(), 30)
            reader.cancel()
            return events

    events = asyncio.run(talk())
    for event in events:  # every one a GA server event, field for field
        validated(event, "server")
    kinds = [event["type"] for event in events]
    print(kinds[:5], len(kinds))
    for kind in ("input_audio_buffer.speech_started", "input_audio_buffer.speech_stopped",
                 "conversation.item.input_audio_transcription.completed", "response.created",
                 "response.output_audio_transcript.delta", "response.output_audio.delta", "response.done"):
        assert kind in kinds, (kind, sorted(set(kinds)))
    assert kinds.index("input_audio_buffer.speech_stopped") < kinds.index("response.output_audio.delta")
    # Each delta names its response and item, the ones response.created / response.done announce.
    responses = {e["response"]["id"] for e in events if e["type"] == "response.created"}
    assert {e["response_id"] for e in events if e["type"] == "response.output_audio.delta"} <= responses
    assert "error" not in kinds
    # (a speculative transcript may come first, cut at a pause)
    transcripts = [e["transcript"] for e in events if e["type"] == "conversation.item.input_audio_transcription.completed"]
    assert "good place" in transcripts[-1].lower(), transcripts
    reply = np.concatenate([np.frombuffer(base64.b64decode(e["delta"]), "<i2") for e in events
                            if e["type"] == "response.output_audio.delta"]).astype(np.float32) / 32768
    assert len(reply) / 24000 > 0.5 and np.abs(reply).max() > 0.05  # spoken audio at 24 kHz
    done = next(e for e in events if e["type"] == "response.done")
    assert done["response"]["status"] == "completed"
    # The closed connection freed its call.
    status = wait_until(lambda: (answer := httpx.get(f"{http}/status", headers=AUTH).json())["calls"] == 0 and answer,
                        15, "the server freeing the closed call")
    assert status["calls"] == 0 and status["system"] == "cascaded" and status["served"] >= 1


def _status(http: str, headers: dict, source: str) -> httpx.Response:
    """GET /status from the loopback address `source`."""
    with httpx.Client(transport=httpx.HTTPTransport(local_address=source), timeout=30) as client:
        return client.get(f"{http}/status", headers=headers)


def _refused_call(url: str, headers: dict, source: str) -> websockets.InvalidStatus:
    """The server's refusal of a WebSocket call from `source` (the test fails if it is let in)."""

    async def connect():
        with pytest.raises(websockets.InvalidStatus) as refused:
            async with websockets.connect(url, additional_headers=headers, local_addr=(source, 0)):
                pass
        return refused.value

    return asyncio.run(connect())


def _logged(served: Served, text: str) -> str:
    """The server's log, which holds `text` (a refusal is logged, and flushed, before it is sent)."""
    log = served.log.read_text()
    assert text in log, f"{text!r} not in the server's log: {log[-2000:]}"
    return log


def test_calls_and_status_without_the_right_key_get_401_before_any_model_work(cascade_server, monkeypatch):
    url, http, source = cascade_server.url, cascade_server.http, "127.0.0.2"
    served = _status(http, AUTH, source).json()["served"]
    for headers in ({}, WRONG, {"Authorization": SERVER_KEY}):  # none, a wrong one, the key without "Bearer"
        refused = _refused_call(url, headers, source)
        assert refused.response.status_code == 401
        assert refused.response.headers["WWW-Authenticate"].startswith("Bearer")
    for headers in ({}, WRONG):
        assert _status(http, headers, source).status_code == 401
    # (127.0.0.2 has spent its MAX_PER_CLIENT failures: the right key goes from another address.)
    status = _status(http, AUTH, "127.0.0.5")
    assert status.status_code == 200
    assert status.json()["calls"] == 0 and status.json()["served"] == served  # no refused request reached a call
    # The app's least-busy choice asks GET /status with the study's key.
    monkeypatch.setenv("TEST_STATUS_KEY", SERVER_KEY)
    client = RealtimeClient({"url": [url], "api_key_env": "TEST_STATUS_KEY"})
    assert asyncio.run(client._server_status()) == {url: {"calls": 0, "max_calls": 1}}
    # Each refusal is logged with the client's address; the key never is.
    text = _logged(cascade_server, "refused /status from 127.0.0.2: a wrong API key")
    assert "refused /v1/realtime from 127.0.0.2: no API key" in text
    assert "refused /v1/realtime from 127.0.0.2: a wrong API key" in text
    assert SERVER_KEY not in text and "guessed" not in text


def test_wrong_keys_from_one_address_are_answered_429_even_with_the_right_key(cascade_server):
    url, http, guesser = cascade_server.url, cascade_server.http, "127.0.0.3"
    answers = [_status(http, WRONG, guesser).status_code for _ in range(MAX_PER_CLIENT - 1)]
    answers.append(_refused_call(url, WRONG, guesser).response.status_code)
    assert answers == [401] * MAX_PER_CLIENT
    throttled = _status(http, AUTH, guesser)
    assert throttled.status_code == 429 and 0 < int(throttled.headers["Retry-After"]) <= 301
    assert _refused_call(url, AUTH, guesser).response.status_code == 429
    assert _status(http, AUTH, "127.0.0.4").status_code == 200  # another address is not held up
    _logged(cascade_server, "refused /status from 127.0.0.3: too many wrong keys")
    # A request relayed by a TLS front on this machine counts for the address the front names.
    relayed = {**AUTH, "X-Forwarded-For": "198.51.100.7"}
    assert _status(http, relayed, guesser).status_code == 200
    assert _status(http, {**WRONG, "X-Forwarded-For": "198.51.100.7"}, guesser).status_code == 401
    _logged(cascade_server, "refused /status from 198.51.100.7: a wrong API key")


def test_the_documented_tls_front_carries_calls_and_status_with_the_callers_address(cascade_server, tmp_path,
                                                                                   monkeypatch):
    """The HAProxy config of studies/README.md, run in front of the server: wss:// and https://."""
    certificate, private = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(private),
                    "-out", str(certificate), "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    pem = tmp_path / "realtime.pem"
    pem.write_text(certificate.read_text() + private.read_text())
    documented = re.search(r"```haproxy\n(.*?)```", (ROOT / "studies" / "README.md").read_text(), re.S).group(1)
    port, server_port = free_port(), urlsplit(cascade_server.url).port
    config = documented
    for example, here in (("/etc/haproxy/realtime.pem", str(pem)), ("bind :8443", f"bind 127.0.0.1:{port}"),
                          ("127.0.0.1:8765", f"127.0.0.1:{server_port}")):
        assert config.count(example) == 1, example
        config = config.replace(example, here)
    (tmp_path / "haproxy.cfg").write_text(config)
    # As a daemon: haproxy returns once its port is bound (the front is ready), leaving its pid.
    pid_file = tmp_path / "haproxy.pid"
    started = subprocess.run([find_haproxy(), "-D", "-p", str(pid_file), "-f", str(tmp_path / "haproxy.cfg")],
                             capture_output=True, text=True, timeout=30)
    assert started.returncode == 0, started.stderr
    front_pid = int(pid_file.read_text().split()[0])
    try:
        https = f"https://127.0.0.1:{port}"
        tls = ssl.create_default_context(cafile=str(certificate))
        with httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.6", verify=tls)) as client:
            assert client.get(f"{https}/status", headers=AUTH).json()["max_calls"] == 1
            assert client.get(f"{https}/status", headers=WRONG).status_code == 401
        # The server, behind the proxy on 127.0.0.1, logs (and would throttle) the caller's address.
        _logged(cascade_server, "refused /status from 127.0.0.6: a wrong API key")

        async def call():
            async with websockets.connect(f"wss://127.0.0.1:{port}/v1/realtime", additional_headers=AUTH,
                                          ssl=tls) as ws:
                return json.loads(await ws.recv())["type"]

        assert asyncio.run(call()) == "session.created"
        # The app's client over TLS (its CA from SSL_CERT_FILE), the key from its environment.
        monkeypatch.setenv("SSL_CERT_FILE", str(certificate))
        monkeypatch.setenv("TEST_TLS_KEY", SERVER_KEY)
        wss = f"wss://127.0.0.1:{port}/v1/realtime"
        reported = asyncio.run(RealtimeClient({"url": [wss], "api_key_env": "TEST_TLS_KEY"})._server_status())
        assert reported[wss]["max_calls"] == 1
    finally:
        os.kill(front_pid, signal.SIGTERM)


def test_serve_realtime_refuses_to_listen_beyond_loopback_without_a_key():
    env = {name: value for name, value in os.environ.items() if name != REALTIME_KEY_ENV}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "studies", "serve-realtime", "--host", "0.0.0.0", "--port", "0"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    took = time.monotonic() - started
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("error: --host 0.0.0.0 lets other machines in: give the server a key with "
                                  f"--api-key-file FILE or {REALTIME_KEY_ENV}")
    assert "loading" not in done.stdout and took < 60, (done.stdout, took)  # refused before the models load


def test_serve_realtime_reports_unusable_keys_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(REALTIME_KEY_ENV, raising=False)
    short = tmp_path / "short.key"
    short.write_text("abc123\n")
    assert studies_main(["serve-realtime", "--api-key-file", str(short)]) == 1
    assert capsys.readouterr().err.startswith("error: the server's key has 6 characters; it needs at least 16")
    assert studies_main(["serve-realtime", "--api-key-file", str(tmp_path / "none.key")]) == 1
    assert capsys.readouterr().err.strip() == f"error: cannot read the key file {tmp_path / 'none.key'}: " \
                                              "No such file or directory"
    (tmp_path / "empty.key").write_text("\n")
    assert studies_main(["serve-realtime", "--api-key-file", str(tmp_path / "empty.key")]) == 1
    assert capsys.readouterr().err.strip() == f"error: the key file {tmp_path / 'empty.key'} is empty"
    monkeypatch.setenv(REALTIME_KEY_ENV, SERVER_KEY)
    assert studies_main(["serve-realtime", "--api-key-file", str(short)]) == 1
    assert capsys.readouterr().err.strip() == f"error: both --api-key-file and {REALTIME_KEY_ENV} are set: " \
                                              "give the key one way"
    monkeypatch.setenv(REALTIME_KEY_ENV, "has a space in it 123456")
    assert studies_main(["serve-realtime"]) == 1
    assert "holds spaces or characters other than printable ASCII" in capsys.readouterr().err


def test_serve_realtime_reports_bad_options_in_one_line(capsys):
    assert studies_main(["serve-realtime", "--config", "[1]"]) == 1
    assert capsys.readouterr().err.strip() == "error: --config must be a JSON object"
    assert studies_main(["serve-realtime", "--config", "{bad"]) == 1
    assert capsys.readouterr().err.startswith("error: --config is not valid JSON")
    assert studies_main(["serve-realtime", "--max-calls", "0"]) == 1
    assert "at least 1" in capsys.readouterr().err
    assert studies_main(["serve-realtime", "--config", '{"colour": "red"}', "--port", "0"]) == 1
    assert "unknown config key(s) colour" in capsys.readouterr().err


def test_a_call_whose_servers_are_all_down_gets_a_503_and_a_failed_session(tmp_path):
    app = build_app(database_url=f"sqlite:///{tmp_path / 'app.db'}", data_root=tmp_path, researcher_password="pw")
    engine = app.state.engine
    down = ["ws://127.0.0.1:9/v1/realtime", "ws://127.0.0.1:7/v1/realtime"]
    with session_scope(engine) as session:
        apply_config(session, parse_config({
            "name": "down", "topics": ["cooking"],
            "systems": [{"name": "remote-cascade", "kind": "realtime", "config": {"url": down}}]}))
    with serve(app) as base_url:
        consent = httpx.post(f"{base_url}/participate/api/down/consent", json={}).json()
        offer = {"participant": consent["participant"], "system": "remote-cascade", "topic": "cooking",
                 "sdp": "x", "type": "offer"}
        response = httpx.post(f"{base_url}/participate/api/offer", json=offer,
                              headers={"X-Participant-Secret": consent["secret"]}, timeout=60)
        assert response.status_code == 503
        message = response.json()["error"]
        assert message.startswith("the dialogue system cannot start") and all(url in message for url in down)
        # the participant may try again: no call is left running
        again = httpx.post(f"{base_url}/participate/api/offer", json=offer,
                           headers={"X-Participant-Secret": consent["secret"]}, timeout=60)
        assert again.status_code == 503
    with session_scope(engine) as session:
        statuses = [row.status for row in session.exec(select(ConversationSession))]
    assert statuses == ["failed", "failed"]
