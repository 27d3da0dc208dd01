"""The OpenAI-Realtime client against a local server speaking the protocol, in real-time headless
calls with espeak-ng speech (the Moshi client: test_moshi_client.py, against Kyutai's server)."""

from __future__ import annotations

import json

import pytest
import soundfile

from speech.audio import resample
from studies.offline_call import active_segments, run_offline_call
from studies.systems import SystemError_, make_system
from tests.studies.conftest import scripted_user
from tests.studies.fake_servers import fake_realtime


def _events(result):
    return [json.loads(line) for line in result.log_path.read_text().splitlines()]


def test_realtime_client_events_and_barge_in(tmp_path, monkeypatch):
    # The second utterance starts 1 s after the first ends, while the 3 s reply still plays.
    user_wav, times = scripted_user(tmp_path, ["What should I learn first in Python?", "Wait, stop."], gap_s=1.0)
    monkeypatch.setenv("TEST_REALTIME_KEY", "test-key")
    with fake_realtime(reply_s=3.0) as (url, log):
        system = make_system("realtime", {"url": url, "api_key_env": "TEST_REALTIME_KEY",
                                          "instructions": "Talk about {topic}."})
        result = run_offline_call(user_wav, tmp_path / "call.wav", system=system, tail_s=4.0, topic="learning Python")
    assert log["headers"]["authorization"] == "Bearer test-key"
    assert log["session_update"]["turn_detection"] == {"type": "server_vad"}
    assert log["session_update"]["instructions"] == "Talk about learning Python."
    assert log["session_update"]["input_audio_format"] == "pcm16"
    audio, _ = soundfile.read(str(tmp_path / "call.wav"), dtype="float32")
    replies = active_segments(audio[:, 1])
    # Reply 1 starts after the first utterance and is cut when the participant talks over it.
    first_start, first_end = replies[0]
    assert times[0][1] < first_start < times[1][0]
    assert first_end - first_start < 2.5  # cut short of 3 s
    assert abs(first_end - times[1][0]) < 0.2, (first_end, times[1][0])
    kinds = [e["event"] for e in _events(result)]
    assert kinds.count("speech_start") == 2 and "reply" in kinds


def test_clients_report_bad_urls_and_unreachable_servers():
    with pytest.raises(SystemError_, match="must be a ws:// or wss:// address"):
        make_system("moshi", {"url": "http://localhost:8998"})
    system = make_system("realtime", {"url": "ws://127.0.0.1:9/v1/realtime"})
    with pytest.raises(SystemError_, match="ws://127.0.0.1:9/v1/realtime"):
        system.start()


def test_the_realtime_client_reads_its_key_file_at_each_connection(tmp_path):
    key_file = tmp_path / "server.key"
    key_file.write_text("first-key\n")
    with fake_realtime() as (url, log):
        for expected in ("first-key", "second-key"):
            key_file.write_text(expected + "\n")  # replaced between calls: the next call sends the new key
            system = make_system("realtime", {"url": url, "api_key_file": str(key_file)})
            system.start()
            system.close()
            assert log["headers"]["authorization"] == f"Bearer {expected}"


def test_a_key_the_realtime_client_cannot_have_fails_the_call_with_the_reason(tmp_path, monkeypatch):
    with pytest.raises(SystemError_, match="holds a literal api_key") as literal:
        make_system("realtime", {"url": "ws://127.0.0.1:9/v1/realtime", "api_key": "sk-secret"})
    assert "sk-secret" not in str(literal.value)
    monkeypatch.delenv("TEST_UNSET_KEY", raising=False)
    with fake_realtime() as (url, log):
        unset = make_system("realtime", {"url": url, "api_key_env": "TEST_UNSET_KEY"})
        with pytest.raises(SystemError_, match="the environment variable TEST_UNSET_KEY .api_key_env. is not set"):
            unset.start()
        missing = make_system("realtime", {"url": url, "api_key_file": str(tmp_path / "nope.key")})
        with pytest.raises(SystemError_, match="cannot read the key file .api_key_file. .*nope.key: No such file"):
            missing.start()
        assert log["headers"] is None  # no connection was opened without the key
