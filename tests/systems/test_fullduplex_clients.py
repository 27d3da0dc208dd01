"""The OpenAI-Realtime client against a local server speaking the protocol, in real-time headless
calls with espeak-ng speech (the Moshi client: test_moshi_client.py, against Kyutai's server)."""

from __future__ import annotations

import json

import pytest
import soundfile

from studies.__main__ import main as studies_main
from studies.offline_call import active_segments, run_offline_call
from systems import SystemError_, make_system
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
    # Every event both ways is one of the openai package's GA event types, field for field.
    assert log["invalid"] == []
    assert log["headers"]["authorization"] == "Bearer test-key"
    assert "openai-beta" not in log["headers"]  # the GA API takes no beta header
    session = log["session_update"]
    assert session["type"] == "realtime" and session["instructions"] == "Talk about learning Python."
    assert session["audio"]["input"] == {"format": {"type": "audio/pcm", "rate": 24000},
                                         "turn_detection": {"type": "server_vad"}}
    assert session["audio"]["output"]["format"] == {"type": "audio/pcm", "rate": 24000}
    audio, _ = soundfile.read(str(tmp_path / "call.wav"), dtype="float32")
    replies = active_segments(audio[:, 1])
    # Reply 1 starts after the first utterance and is cut when the participant talks over it.
    first_start, first_end = replies[0]
    assert times[0][1] < first_start < times[1][0]
    assert first_end - first_start < 2.5  # cut short of 3 s
    assert abs(first_end - times[1][0]) < 0.2, (first_end, times[1][0])
    kinds = [e["event"] for e in _events(result)]
    assert kinds.count("speech_start") == 2 and "reply" in kinds
    # The server was told how much of the reply was heard: its played audio, not the 3 s it sent.
    assert [t["item_id"] for t in log["truncates"]] == ["item_reply_1"]
    heard_ms = (first_end - first_start) * 1000
    assert abs(log["truncates"][0]["audio_end_ms"] - heard_ms) < 150, (log["truncates"], heard_ms)
    assert log["client_events"].count("conversation.item.truncate") == 1  # the second reply was not cut
    assert result.failure is None


def test_the_beta_dialect_is_there_for_servers_that_speak_it(tmp_path):
    user_wav, times = scripted_user(tmp_path, ["Tell me about trains."], gap_s=2.0)
    with fake_realtime(reply_s=1.0, dialect="beta") as (url, log):
        system = make_system("realtime", {"url": url, "dialect": "beta", "voice": "alloy"})
        result = run_offline_call(user_wav, tmp_path / "call.wav", system=system, tail_s=0.5)
    assert log["invalid"] == []  # every event a beta event of the openai package
    assert log["headers"]["openai-beta"] == "realtime=v1"
    assert log["session_update"] == {"modalities": ["audio", "text"], "input_audio_format": "pcm16",
                                     "output_audio_format": "pcm16", "turn_detection": {"type": "server_vad"},
                                     "voice": "alloy"}
    assert "response.audio.delta" in log["sent"]  # the beta name of the audio, played:
    audio, _ = soundfile.read(str(tmp_path / "call.wav"), dtype="float32")
    replies = active_segments(audio[:, 1])
    assert len(replies) == 1 and replies[0][0] > times[0][1] and result.failure is None
    with pytest.raises(SystemError_, match="config 'dialect' must be one of ga, beta, got 'v2'"):
        make_system("realtime", {"url": url, "dialect": "v2"})


def test_a_server_error_fails_the_call_with_the_servers_message(tmp_path):
    # A session the server refuses: the call does not start, and says why.
    with fake_realtime(refuse_session="Invalid value: 'pcm16'. Supported values are: 'audio/pcm'.") as (url, log):
        system = make_system("realtime", {"url": url, "instructions": "Be brief."})
        with pytest.raises(SystemError_, match=r"the server refused the session: Invalid value: 'pcm16'"):
            system.start()
    # An error mid-call: the call ends there as failed, with the server's words; its recording is kept.
    user_wav, _ = scripted_user(tmp_path, ["Hello there, how are you today?"], gap_s=4.0)
    with fake_realtime(error_after_s=2.0) as (url, log):
        system = make_system("realtime", {"url": url})
        result = run_offline_call(user_wav, tmp_path / "call.wav", system=system, tail_s=0.0)
    assert log["invalid"] == []
    assert result.failure == f"{url}: the server said: The server had an error while processing your request."
    assert 2.0 <= result.duration_s < 3.0, result.duration_s  # not the 6.5 s of the script
    audio, rate = soundfile.read(str(tmp_path / "call.wav"), dtype="float32")
    assert len(audio) / rate == pytest.approx(result.duration_s, abs=0.05)
    failed = [e for e in _events(result) if e["event"] == "failed"]
    assert [e["reason"] for e in failed] == [result.failure]


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


def test_the_headless_call_reports_a_failed_call_in_one_line(tmp_path, capsys):
    user_wav, _ = scripted_user(tmp_path, ["Hello there, how are you today?"], gap_s=2.0)
    with fake_realtime(refuse_session="Unknown parameter: 'session.voice'.") as (url, log):
        config = json.dumps({"url": url})
        assert studies_main(["call", str(user_wav), str(tmp_path / "refused.wav"), "--kind", "realtime",
                             "--config", config]) == 1
    refused = capsys.readouterr()
    assert refused.out == "" and refused.err.count("\n") == 1
    assert refused.err.startswith(f"error: {url}: the server refused the session: Unknown parameter: 'session.voice'.")
    with fake_realtime(error_after_s=2.0) as (url, log):
        assert studies_main(["call", str(user_wav), str(tmp_path / "failed.wav"), "--kind", "realtime",
                             "--config", json.dumps({"url": url}), "--tail", "0"]) == 1
    failed = capsys.readouterr()
    assert failed.err == f"error: the call failed: {url}: the server said: " \
                         "The server had an error while processing your request.\n"
    summary = json.loads(failed.out)  # what was recorded until then, summarised
    assert summary["failure"] == f"{url}: the server said: The server had an error while processing your request."
    assert 2.0 <= summary["duration_s"] < 3.0
