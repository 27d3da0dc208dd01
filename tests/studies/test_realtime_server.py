"""The embedded cascade served as its own process (`python -m studies serve-realtime`) over the
OpenAI Realtime protocol: a participant's call through the app (consent, WebRTC offer, recorder,
session row) to a study system of kind `realtime` pointing at that server; and the protocol
itself with a raw WebSocket client (bad messages get `error` events, the call goes on, a
closed connection frees its system).

The server runs the packaged models (Silero, Whisper tiny.en, SmolLM2-135M, Piper) in a
separate process started by the test; the participant is espeak-ng speech sent by an aiortc
peer, the app's own WebRTC path without a browser.
"""

from __future__ import annotations

import asyncio
import base64
import fractions
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import av
import httpx
import numpy as np
import pytest
import soundfile
import websockets
from aiortc import (
    MediaStreamTrack,
    RTCConfiguration,
    RTCPeerConnection,
    RTCSessionDescription,
)
from aiortc.mediastreams import MediaStreamError
from sqlmodel import select

from app import build_app
from speech.audio import resample
from storage.db import session_scope
from storage.files import resolve
from storage.models import ConversationSession, Recording
from studies.__main__ import main as studies_main
from studies.config import apply_config, parse_config
from studies.offline_call import active_segments, reply_latencies
from tests.browser import serve
from tests.studies.conftest import espeak_16k, scripted_user

ROOT = Path(__file__).resolve().parents[2]
SERVER_START_S = 300  # a first run converts the LLM (about a minute on a busy machine)


@pytest.fixture(scope="module")
def cascade_server(tmp_path_factory):
    """`python -m studies serve-realtime --system cascaded --max-calls 1` on a free port:
    (ws url, http base)."""
    log = tmp_path_factory.mktemp("server") / "server.log"
    with open(log, "w") as errors:
        process = subprocess.Popen(
            [sys.executable, "-m", "studies", "serve-realtime", "--system", "cascaded", "--port", "0",
             "--max-calls", "1"],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=errors, text=True, env=dict(os.environ))
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
        url = next(line for line in lines if line.startswith("serving ")).split(" on ")[1].strip()
        yield url, url.replace("ws://", "http://").replace("/v1/realtime", "")
    finally:
        process.terminate()
        process.wait(10)


class WavTrack(MediaStreamTrack):
    """The participant's microphone: 48 kHz samples sent in 20 ms frames on the wall clock,
    silence once they are played."""

    kind = "audio"

    def __init__(self, samples_48k: np.ndarray):
        super().__init__()
        self.samples = (np.clip(samples_48k, -1, 1) * 32767).astype(np.int16)
        self.position = 0
        self.start: float | None = None

    async def recv(self):
        if self.readyState != "live":
            raise MediaStreamError
        self.start = self.start or time.monotonic()
        wait = self.start + self.position / 48000 - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        chunk = np.zeros(960, dtype=np.int16)
        piece = self.samples[self.position:self.position + 960]
        chunk[:len(piece)] = piece
        frame = av.AudioFrame.from_ndarray(chunk.reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate, frame.pts, frame.time_base = 48000, self.position, fractions.Fraction(1, 48000)
        self.position += 960
        return frame


async def _participant_call(base_url: str, participant: dict, mic_16k: np.ndarray, talk_s: float) -> dict:
    """Offer a WebRTC call as the page does, talk for `talk_s`, end it. Returns the offer's
    answer and the loudness of what the participant heard."""
    pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    pc.addTrack(WavTrack(resample(mic_16k, 16000, 48000)))
    pc.createDataChannel("control")
    heard: list[float] = []

    @pc.on("track")
    def on_track(track):
        async def listen():
            while True:
                try:
                    frame = await track.recv()
                except MediaStreamError:
                    return
                heard.append(float(np.abs(frame.to_ndarray()).max()) / 32768)

        asyncio.ensure_future(listen())

    await pc.setLocalDescription(await pc.createOffer())  # aiortc gathers its candidates here
    headers = {"X-Participant-Secret": participant["secret"]}
    async with httpx.AsyncClient(base_url=base_url, timeout=60) as client:
        offer = {"participant": participant["participant"], "system": "remote-cascade",
                 "topic": participant["topics"][0], "sdp": pc.localDescription.sdp, "type": pc.localDescription.type}
        response = await client.post("/participate/api/offer", json=offer, headers=headers)
        assert response.status_code == 200, response.text
        answer = response.json()
        await pc.setRemoteDescription(RTCSessionDescription(sdp=answer["sdp"], type=answer["type"]))
        await asyncio.sleep(talk_s)
        ended = await client.post(f"/participate/api/end/{answer['session_id']}", headers=headers)
        assert ended.status_code == 200, ended.text
    await pc.close()
    return {**answer, "heard": heard}


def test_a_call_through_the_app_to_a_separate_cascade_server(cascade_server, tmp_path):
    url, _ = cascade_server
    # Two servers listed: one that is down (port 9), the live one. The call goes to the live one.
    down = "ws://127.0.0.1:9/v1/realtime"
    app = build_app(database_url=f"sqlite:///{tmp_path / 'app.db'}", data_root=tmp_path, researcher_password="pw")
    engine = app.state.engine
    with session_scope(engine) as session:
        apply_config(session, parse_config({
            "name": "remote", "session_seconds": 60, "topics": ["preparing for a hike"],
            "systems": [{"name": "remote-cascade", "kind": "realtime",
                         "config": {"url": [down, url], "instructions": "You are a hiking guide. "
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
        call = asyncio.run(_participant_call(base_url, participant.json(), mic, talk_s=len(mic) / 16000 + 6.0))

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
    """The next server event of type `kind` (others skipped)."""
    deadline = time.monotonic() + timeout
    while True:
        event = json.loads(await asyncio.wait_for(ws.recv(), max(0.1, deadline - time.monotonic())))
        if event["type"] == kind:
            return event


def test_the_protocol_errors_and_a_turn_over_a_raw_websocket(cascade_server, tmp_path):
    url, http = cascade_server
    speech = espeak_16k("Can you tell me a good place for pizza?", tmp_path / "line.wav")
    audio_24k = np.concatenate([np.zeros(12000, np.float32), resample(speech, 16000, 24000),
                                np.zeros(24000 * 5, np.float32)])
    pcm = (np.clip(audio_24k, -1, 1) * 32767).astype("<i2")

    async def talk():
        async with websockets.connect(url) as ws:
            created = json.loads(await ws.recv())
            assert created["type"] == "session.created"
            status = await asyncio.to_thread(httpx.get, f"{http}/status")
            assert status.json()["calls"] == 1 and status.json()["max_calls"] == 1
            # A second call is refused while this one runs (a client with several urls tries the next).
            with pytest.raises(websockets.InvalidStatus) as refused:
                await websockets.connect(url)
            assert refused.value.response.status_code == 503

            async def error_for(message: str) -> str:
                await ws.send(message)
                return (await _next(ws, "error"))["error"]["message"]

            assert "not JSON" in await error_for("{not json")
            assert "unknown event type 'bogus'" in await error_for(json.dumps({"type": "bogus"}))
            assert "'type'" in await error_for(json.dumps([1, 2]))
            assert "not base64" in await error_for(json.dumps({"type": "input_audio_buffer.append", "audio": "@@"}))
            assert "pcm16 only" in await error_for(json.dumps(
                {"type": "session.update", "session": {"input_audio_format": "g711_ulaw"}}))
            assert "server_vad" in await error_for(json.dumps(
                {"type": "session.update", "session": {"turn_detection": {"type": "semantic_vad"}}}))
            # ... and the call goes on: instructions, then a turn in real time (100 ms appends).
            await ws.send(json.dumps({"type": "session.update", "session": {
                "instructions": "You are a guide to New York {city}. Answer in one short sentence."}}))
            updated = await _next(ws, "session.updated")
            assert updated["session"]["instructions"].startswith("You are a guide to New York {city}")
            events: list[dict] = []

            async def read():
                async for message in ws:
                    events.append(json.loads(message))

            reader = asyncio.ensure_future(read())
            start = time.monotonic()
            for k, first in enumerate(range(0, len(pcm), 2400)):
                await asyncio.sleep(max(0.0, start + k * 0.1 - time.monotonic()))
                chunk = base64.b64encode(pcm[first:first + 2400].tobytes()).decode()
                await ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": chunk}))
            await asyncio.sleep(3.0)
            reader.cancel()
            return events

    events = asyncio.run(talk())
    kinds = [event["type"] for event in events]
    print(kinds[:5], len(kinds))
    for kind in ("input_audio_buffer.speech_started", "input_audio_buffer.speech_stopped",
                 "conversation.item.input_audio_transcription.completed", "response.created",
                 "response.audio_transcript.delta", "response.audio.delta", "response.done"):
        assert kind in kinds, (kind, sorted(set(kinds)))
    assert kinds.index("input_audio_buffer.speech_stopped") < kinds.index("response.audio.delta")
    assert "error" not in kinds
    # (a speculative transcript may come first, cut at a pause)
    transcripts = [e["transcript"] for e in events if e["type"] == "conversation.item.input_audio_transcription.completed"]
    assert "good place" in transcripts[-1].lower(), transcripts
    reply = np.concatenate([np.frombuffer(base64.b64decode(e["delta"]), "<i2") for e in events
                            if e["type"] == "response.audio.delta"]).astype(np.float32) / 32768
    assert len(reply) / 24000 > 0.5 and np.abs(reply).max() > 0.05  # spoken audio at 24 kHz
    done = next(e for e in events if e["type"] == "response.done")
    assert done["response"]["status"] == "completed"
    # The closed connection freed its call.
    deadline = time.monotonic() + 15
    while httpx.get(f"{http}/status").json()["calls"] and time.monotonic() < deadline:
        time.sleep(0.2)
    status = httpx.get(f"{http}/status").json()
    assert status["calls"] == 0 and status["system"] == "cascaded" and status["served"] >= 1


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
