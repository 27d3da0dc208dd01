"""The cascaded system (Silero -> faster-whisper -> SmolLM2 -> Piper, all packaged models) in
real-time calls driven by espeak-ng speech: it answers after the participant's turn, and its
barge-in policy decides whether it stops when talked over."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
import soundfile

from storage.demo import DEMO_SYSTEMS
from studies.__main__ import main
from studies.offline_call import reply_latencies, run_offline_call
from systems import SystemError_, make_system
from systems.base import BLOCK, SAMPLE_RATE
from systems.cascaded import CascadedSettings, CascadedSystem
from tests.studies.conftest import espeak_16k, scripted_user
from tests.waiting import sleep_until


def test_answers_a_spoken_question_after_the_turn(tmp_path, cascade_components):
    user_wav, times = scripted_user(tmp_path, ["What should I bring on a hike?"], gap_s=7.0)
    system = CascadedSystem({}, components=cascade_components)
    result = run_offline_call(user_wav, tmp_path / "call.wav", system=system, tail_s=0.0, topic="preparing for a hike")
    audio, rate = soundfile.read(str(tmp_path / "call.wav"), dtype="float32")
    source, _ = soundfile.read(str(user_wav), dtype="float32")
    assert rate == SAMPLE_RATE and audio.shape[1] == 2
    # Channel 0 is the participant's audio sample for sample (the mic is the clock).
    assert np.abs(audio[: len(source), 0] - source).max() < 1e-4
    # The system spoke only after the participant's turn ended, and answered it.
    user_end = times[0][1]
    system_active = np.flatnonzero(np.abs(audio[:, 1]) > 0.01)
    assert len(system_active) > SAMPLE_RATE * 0.3
    assert system_active[0] / SAMPLE_RATE > user_end
    # The rendered reply does not clip: its peak is below -1 dBFS.
    reply_peak_dbfs = 20 * np.log10(np.abs(audio[:, 1]).max())
    print(f"reply peak {reply_peak_dbfs:.2f} dBFS")
    assert reply_peak_dbfs < -1.0
    assert result.latencies_s and result.unanswered == 0
    events = [json.loads(line) for line in result.log_path.read_text().splitlines()]
    kinds = [e["event"] for e in events]
    for kind in ("speech_start", "turn_end", "transcript", "decided", "audio_start"):
        assert kind in kinds, kinds
    assert kinds.index("turn_end") < kinds.index("audio_start")
    transcript = [e["text"] for e in events if e["event"] == "transcript"][-1].lower()
    assert "bring" in transcript and "hike" in transcript
    # The log's audio_start is where channel 1 starts (both on the mic clock): nothing before
    # it, the first 20 ms block right at it.
    audio_start = round(next(e["mic_s"] for e in events if e["event"] == "audio_start") * SAMPLE_RATE)
    assert not audio[:audio_start, 1].any()
    assert audio[audio_start:audio_start + 320, 1].any()


def _talk_over_the_reply(system, events, question, interruption, max_s=25.0):
    """Drive `system` in real time: ask, wait for its reply audio, talk over it from the first
    reply block on. Returns the seconds of reply audio sent from the interruption's start until
    the system yielded (or the interruption ended)."""
    rate = SAMPLE_RATE
    mic = np.concatenate([np.zeros(rate // 2, dtype=np.float32), question])
    start = time.monotonic()
    interrupted_at = None
    sent_after = 0
    i = 0
    while time.monotonic() - start < max_s:
        due = start + i * BLOCK / rate
        sleep_until(due)  # a live microphone: the system's answering in real time is what is tested
        out = system.send()
        if out is not None and interrupted_at is None:
            interrupted_at = i
            before = np.pad(mic, (0, max(0, i * BLOCK - len(mic))))[: i * BLOCK]
            mic = np.concatenate([before, interruption, np.zeros(rate * 3, dtype=np.float32)])
        if interrupted_at is not None:
            if any(e.kind == "yielded" for e in events):
                break
            sent_after += out is not None
        block = mic[i * BLOCK:(i + 1) * BLOCK]
        system.receive(np.pad(block, (0, BLOCK - len(block))))
        i += 1
        if interrupted_at is not None and i - interrupted_at > len(interruption) // BLOCK:
            break
    assert interrupted_at is not None, "the system never answered"
    return sent_after * BLOCK / rate


@pytest.mark.parametrize("policy", ["yield", "ignore"])
def test_barge_in_policy(tmp_path, cascade_components, policy):
    question = espeak_16k("Tell me about good places to eat in Manhattan.", tmp_path / "q.wav")
    interruption = espeak_16k("Wait, wait, stop, I have another question about that place.", tmp_path / "i.wav")
    events = []
    system = CascadedSystem({"barge_in": policy}, on_event=events.append, components=cascade_components)
    system.start("places to eat in Manhattan")
    try:
        talked_over_s = _talk_over_the_reply(system, events, question, interruption)
    finally:
        system.close()
    kinds = [e.kind for e in events]
    if policy == "yield":
        assert "yielded" in kinds
        # barge_in_ms (200) of speech plus VAD frames and the interruption's own onset
        assert talked_over_s < 0.6, talked_over_s
        assert system.send() is None  # the rest of the reply was dropped
    else:
        assert "yielded" not in kinds
        assert talked_over_s > 1.0, talked_over_s


def test_reply_latencies_from_a_recording():
    rate = SAMPLE_RATE
    user = np.zeros(rate * 10, dtype=np.float32)
    system = np.zeros(rate * 10, dtype=np.float32)
    user[rate * 1: rate * 2] = 0.5  # utterance 1: 1.0-2.0 s, answered at 2.6 s
    user[int(rate * 2.1): rate * 3] = 0.5  # a pause of 0.1 s inside the same turn: bridged
    system[int(rate * 3.6): rate * 5] = 0.5
    user[rate * 6: rate * 7] = 0.5  # utterance 2: never answered
    system[int(rate * 6.5): int(rate * 7.5)] = 0.5  # (talking over it is no answer)
    system[int(rate * 7.6): rate * 8] = 0.5  # nor is its continuation after a short pause
    latencies, unanswered = reply_latencies(user, system)
    assert latencies == [0.6] and unanswered == 1


def test_bad_config_and_inputs(tmp_path, capsys):
    with pytest.raises(SystemError_, match="unknown config key.*colour"):
        make_system("cascaded", {"colour": "red"})
    with pytest.raises(SystemError_, match="barge_in must be"):
        make_system("cascaded", {"barge_in": "sometimes"})
    with pytest.raises(SystemError_, match="unknown dialogue system kind"):
        make_system("telepathy")
    assert main(["call", str(tmp_path / "missing.wav"), str(tmp_path / "out.wav")]) == 1
    assert "cannot read" in capsys.readouterr().err
    assert main(["call", str(tmp_path / "missing.wav"), str(tmp_path / "out.wav"), "--config", "{nope"]) == 1
    assert "--config is not valid JSON" in capsys.readouterr().err


def test_the_demo_study_labels_mean_the_packaged_models():
    [(_, _, labels)] = [s for s in DEMO_SYSTEMS if s[1] == "cascaded"]
    settings = CascadedSettings.from_config(labels)
    assert (settings.asr_model, settings.llm, settings.tts_voice) == (None, None, None)
    other = CascadedSettings.from_config({"asr": "Systran/faster-whisper-base.en", "tts": "/voices/x.onnx"})
    assert (other.asr_model, other.tts_voice) == ("Systran/faster-whisper-base.en", "/voices/x.onnx")
    with pytest.raises(SystemError_, match="vad must be 'silero'"):
        CascadedSettings.from_config({"vad": "webrtcvad"})
