"""The two-channel call recorder: one mic sample clock, lost packets, system placement, crash safety."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import numpy as np
import soundfile
from sqlmodel import select

from storage.db import session_scope
from storage.models import ConversationSession, Recording, utc_now
from storage.records import get_or_create_participant, get_system, start_session
from studies.__main__ import main
from studies.config import apply_config, parse_config
from studies.recorder import TwoChannelRecorder
from studies.sessions import LEASE_S, call_relpath, mark_open_sessions_incomplete, timing_relpath
from studies.timing import clock_fit
from tests.studies.conftest import espeak_16k, speech_onset

ROOT = Path(__file__).resolve().parents[2]


def _blocks(samples, size=320):
    for start in range(0, len(samples), size):
        yield start, samples[start:start + size]


def test_mic_clock_lost_packets_and_system_placement(tmp_path):
    rate = 16000
    mic = (np.sin(np.arange(rate * 2) * 0.05) * 0.5).astype(np.float32)
    reply = np.full(1600, 0.25, dtype=np.float32)
    recorder = TwoChannelRecorder(tmp_path / "call.wav", tmp_path / "timing.jsonl")
    for start, block in _blocks(mic):
        if 8000 <= start < 8000 + 3 * 320:
            continue  # three packets lost
        if start == 16000:
            # a reply in 20 ms blocks, each sent as the mic reached its position (+ one packet of jitter)
            for i, (offset, piece) in enumerate(_blocks(reply)):
                recorder.add_system(piece, at=16000 + offset + (320 if i % 2 else 0))
        recorder.add_mic(block, pts=start)
    recorder.add_mic(mic[:320], pts=0)  # a duplicate from the past is dropped
    duration = recorder.close()
    audio, sr = soundfile.read(tmp_path / "call.wav", dtype="float32")
    assert sr == rate and audio.shape == (len(mic), 2) and duration == 2.0
    expected_mic = mic.copy()
    expected_mic[8000:8960] = 0.0
    assert np.abs(audio[:, 0] - expected_mic).max() < 1e-4
    system = np.flatnonzero(np.abs(audio[:, 1]) > 0.1)
    assert system[0] == 16000 and system[-1] == 16000 + 1600 - 1 and len(system) == 1600
    events = [json.loads(line) for line in (tmp_path / "timing.jsonl").read_text().splitlines()]
    lost = [e for e in events if e["event"] == "lost"]
    assert lost == [dict(lost[0], samples=960, at_s=0.5)]
    assert events[-1]["event"] == "end" and events[-1]["lost_samples"] == 960


def test_system_audio_after_the_mic_ends_is_kept(tmp_path):
    recorder = TwoChannelRecorder(tmp_path / "call.wav")
    recorder.add_mic(np.zeros(1600, dtype=np.int16))
    recorder.add_system(np.full(3200, 1000, dtype=np.int16))
    assert recorder.close() == (1600 + 3200) / 16000
    audio, _ = soundfile.read(tmp_path / "call.wav", dtype="int16")
    assert (audio[1600:, 1] == 1000).all() and (audio[:1600, 1] == 0).all()


WRITER = """
import sys, time, numpy as np, soundfile
from studies.recorder import TwoChannelRecorder
from tests.waiting import sleep_until
source, _ = soundfile.read(sys.argv[1], dtype="float32")
recorder = TwoChannelRecorder(sys.argv[2], sys.argv[3], flush_s=0.25)
position, began = 0, time.monotonic()
while True:  # the mic loops the file in 20 ms packets until killed: real time, as the recorder's flushes meet it
    for start in range(0, len(source), 320):
        block = source[start:start + 320]
        recorder.add_mic(block, pts=position)
        position += len(block)
        if position - len(block) < 41600 <= position:
            print("2.6 seconds", flush=True)
        sleep_until(began + position / 16000)
"""


def test_killed_writer_leaves_a_readable_file_and_an_incomplete_session(tmp_path, engine):
    data_root = tmp_path / "data"
    speech = espeak_16k("Hello, I would like to talk about hiking.", tmp_path / "speech.wav")
    source = np.concatenate([np.zeros(8000, dtype=np.float32), speech])
    soundfile.write(tmp_path / "source.wav", source, 16000)
    with session_scope(engine) as session:
        study = apply_config(session, parse_config({"name": "kill", "systems": [{"name": "c", "kind": "cascaded"}]}))
        participant = get_or_create_participant(session, study)
        conversation = start_session(session, participant, get_system(session, study, "c"), "preparing for a hike")
        session_id, heard = conversation.id, conversation.heartbeat_at
    wav = data_root / call_relpath(session_id)
    log = data_root / timing_relpath(session_id)
    wav.parent.mkdir(parents=True)
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(tmp_path / "source.wav"), str(wav), str(log)],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert writer.stdout.readline().strip() == "2.6 seconds"
        killed_at = time.monotonic()
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait(timeout=10)
    finally:
        if writer.poll() is None:
            writer.kill()
    # Readable as it is, with at most the last flush interval (plus a packet) missing.
    info = soundfile.info(str(wav))
    assert info.channels == 2 and info.samplerate == 16000
    assert info.duration >= 2.6 - 0.25 - 0.1 - 0.3  # ~2.6 s written; scheduling on a busy machine
    audio, _ = soundfile.read(str(wav), dtype="float32")
    n = min(len(audio), len(source))
    assert np.abs(audio[:n, 0] - source[:n]).max() < 1e-4
    assert speech_onset(audio[:, 0]) == speech_onset(source)
    # While its lease runs (up to its last instant: a clock, not the time this test took), the call
    # belongs to its (maybe live) process: nothing is touched.
    assert mark_open_sessions_incomplete(engine, data_root, now=heard + timedelta(seconds=LEASE_S)) == []
    assert soundfile.info(str(wav)).frames == info.frames
    # Once it expired (lease_s=0: now), the sweep repairs the header (recovers samples after the
    # last flush) and closes the session.
    assert mark_open_sessions_incomplete(engine, data_root, lease_s=0) == [session_id]
    assert soundfile.info(str(wav)).frames >= info.frames
    with session_scope(engine) as session:
        conversation = session.get(ConversationSession, session_id)
        recording = session.exec(select(Recording).where(Recording.session_id == session_id)).one()
        assert conversation.status == "incomplete" and conversation.ended_at is not None
        # it ended when its audio stopped (the file's last write), not at the sweep
        assert conversation.ended_at <= conversation.started_at + timedelta(seconds=time.monotonic() - killed_at + 10)
        assert (utc_now() - conversation.ended_at).total_seconds() >= time.monotonic() - killed_at - 1
        assert recording.channels == 2 and recording.system_channel == 1 and recording.duration_s >= 2.0
    assert mark_open_sessions_incomplete(engine, data_root, lease_s=0) == []
    assert time.monotonic() - killed_at < 30


def test_sweep_cli(tmp_path, capsys, monkeypatch):
    url = f"sqlite:///{tmp_path / 'sweep.db'}"
    monkeypatch.setenv("TURNTAKING_DATA", str(tmp_path / "data"))
    assert main(["--url", url, "sweep"]) == 0
    assert "marked 0 open session(s) incomplete" in capsys.readouterr().out


def test_clock_fit_from_the_timing_log(tmp_path):
    log = tmp_path / "timing.jsonl"
    # mic seconds 0..20; server time runs 0.1% fast with +-5 ms of alternating arrival jitter
    lines = [json.dumps({"t": 0.5 + 1.001 * k + (0.005 if k % 2 else -0.005), "mic_s": float(k), "event": "clock"})
             for k in range(21)]
    log.write_text("\n".join(lines) + "\n")
    fit = clock_fit(log)
    assert fit.points == 19 and abs(fit.slope - 1.001) < 1e-3
    assert 4.9 < fit.residual_sd_ms < 5.1 and 5.0 <= fit.residual_p99_ms < 5.5  # odd count: a slight tilt
