"""A call where nobody spoke is not a session to analyse. On real audio (espeak-ng
speech, tones, digital silence) through the packaged Silero VAD: a system channel of zeros is "no
answer from the system", a participant channel holding only a tone is "no speech from the
participant", a call shorter than the study's minimum says so, and a normal call stays
analysable; `finish_session`, where every call ends, stores the verdict (SQLite and PostgreSQL);
`python -m studies call` prints it.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile
from sqlmodel import select

from speech.silero import SileroParams, silero_segments, speech_seconds
from storage.db import session_scope
from storage.models import ConversationSession
from storage.records import get_or_create_participant, get_system, start_session
from studies.call_quality import (
    MIN_SPEECH_S,
    NO_PARTICIPANT_SPEECH,
    NO_RECORDING,
    NO_SYSTEM_ANSWER,
    SERVER_BEHIND,
    CallQuality,
    NetworkLimits,
    conversation_quality,
    judge_call,
    recording_quality,
    too_short_reason,
)
from studies.config import StudyConfigError, apply_config, parse_config, study_settings
from studies.__main__ import main
from studies.network_figures import read_network, summarise
from studies.sessions import call_relpath, finish_session, network_relpath
from tests.databases import engine  # noqa: F401  (pytest fixture: real SQLite and PostgreSQL databases)
from tests.rendered_speech import SAMPLE_RATE, Utterance, render_speech
from tests.studies.conftest import scripted_user
from tests.studies.fake_servers import fake_realtime
from turntaking.activity import Conversation

SYSTEM = 1


def tone(seconds: float, hz: float = 440.0) -> np.ndarray:
    t = np.arange(int(seconds * SAMPLE_RATE)) / SAMPLE_RATE
    return (0.3 * np.sin(2 * np.pi * hz * t)).astype(np.float32)


@pytest.fixture(scope="module")
def talk():
    """12 s: the participant (channel 0) asks twice, the system (channel 1) answers once."""
    return render_speech([Utterance(0, 0.5, "hello I would like to talk about hiking"),
                          Utterance(1, 3.5, "sure what would you like to know", voice="en-us+f3"),
                          Utterance(0, 6.5, "what should I bring for a day hike")], duration=12.0)


def write(path, channels: np.ndarray):
    soundfile.write(str(path), channels.T, SAMPLE_RATE, subtype="PCM_16")
    return path


def test_a_system_channel_of_zeros_is_no_answer(talk, tmp_path):
    unanswered = talk.samples.copy()
    unanswered[SYSTEM] = 0.0
    quality = recording_quality(write(tmp_path / "call.wav", unanswered), SYSTEM, minimum_s=5)
    assert (quality.analysable, quality.reason) == (False, NO_SYSTEM_ANSWER)


def test_a_tone_on_the_participant_channel_is_no_speech(talk, tmp_path):
    for system in (np.zeros(talk.samples.shape[1], np.float32), talk.samples[SYSTEM]):  # silent or answering
        channels = np.stack([tone(talk.duration), system])
        quality = recording_quality(write(tmp_path / "tone.wav", channels), SYSTEM, minimum_s=5)
        assert (quality.analysable, quality.reason) == (False, NO_PARTICIPANT_SPEECH)


def test_a_normal_call_stays_analysable_and_a_short_one_does_not(talk, tmp_path):
    path = write(tmp_path / "call.wav", talk.samples)
    assert recording_quality(path, SYSTEM, minimum_s=10).analysable
    short = recording_quality(path, SYSTEM, minimum_s=30)
    assert (short.analysable, short.reason) == (False, too_short_reason(30))
    assert short.reason == "shorter than the study's minimum of 30 s"
    # the system on channel 0 instead: then channel 1 is the participant's, and it answers too
    assert recording_quality(path, 0, minimum_s=10).analysable


def test_counting_speech_stops_early_and_counts_as_the_analysis_does(talk):
    params = SileroParams(threads=1, block_frames=64)  # blocks of 2 s: the early stop shows on 12 s
    participant = talk.samples[0]
    full = sum(e - s for s, e in silero_segments(participant[None], params)[0])
    assert speech_seconds(participant, params) == pytest.approx(full)
    assert 3.0 < full < 6.0  # two utterances of about 2 s
    early = speech_seconds(participant, params, enough_s=MIN_SPEECH_S)
    assert MIN_SPEECH_S <= early < full  # found in the first utterance, the second never looked at
    assert speech_seconds(np.zeros(SAMPLE_RATE * 60, np.float32), params) == 0.0
    assert speech_seconds(tone(12.0), params) == 0.0


def test_the_same_rule_on_stored_voice_activity():
    answered = Conversation(60.0, ([(0.5, 4.5), (10.5, 14.5)], [(5.5, 9.5)]))
    assert conversation_quality(answered, SYSTEM, 10).analysable
    silent_system = Conversation(60.0, ([(0.5, 4.5)], []))
    assert conversation_quality(silent_system, SYSTEM, 10).reason == NO_SYSTEM_ANSWER
    assert conversation_quality(silent_system, 0, 10).reason == NO_PARTICIPANT_SPEECH
    assert conversation_quality(Conversation(8.0, ([(0.5, 4.5)], [(5.0, 6.0)])), SYSTEM, 10).reason == \
        too_short_reason(10)


def test_the_minimum_is_a_study_setting():
    base = {"name": "q", "systems": [{"name": "a", "kind": "cascaded"}]}
    assert parse_config(base).call_minimum_s == 10
    assert parse_config({**base, "session_seconds": 12}).call_minimum_s == 6  # at most half the session
    assert parse_config({**base, "min_call_seconds": 2.5}).call_minimum_s == 2.5
    for bad in (-1, "ten", True, 301):
        with pytest.raises(StudyConfigError, match="'min_call_seconds' must be a number from 0 to session_seconds"):
            parse_config({**base, "min_call_seconds": bad})


def _session(engine, minimum_s: float) -> int:  # noqa: F811
    with session_scope(engine) as session:
        study = apply_config(session, parse_config({
            "name": "quality", "min_call_seconds": minimum_s, "systems": [{"name": "cascaded", "kind": "cascaded"}]}))
        participant = get_or_create_participant(session, study, external_id="p")
        return start_session(session, participant, get_system(session, study, "cascaded"), "hiking").id


@pytest.mark.parametrize("case", ["answered", "unanswered", "tone", "too short", "no audio"])
def test_finish_session_stores_the_verdict(engine, talk, tmp_path, case):  # noqa: F811
    session_id = _session(engine, minimum_s=20 if case == "too short" else 5)
    channels = talk.samples.copy()
    if case == "unanswered":
        channels[SYSTEM] = 0.0
    if case == "tone":
        channels[0] = tone(talk.duration)
    if case != "no audio":
        wav = tmp_path / call_relpath(session_id)
        wav.parent.mkdir(parents=True)
        write(wav, channels)
    finish_session(engine, session_id, "complete" if case != "no audio" else "failed", tmp_path)
    with session_scope(engine) as session:
        row = session.exec(select(ConversationSession).where(ConversationSession.id == session_id)).one()
        found = (row.status, row.analysable, row.quality_reason)
    expected = {"answered": ("complete", True, None), "unanswered": ("complete", False, NO_SYSTEM_ANSWER),
                "tone": ("complete", False, NO_PARTICIPANT_SPEECH),
                "too short": ("complete", False, too_short_reason(20)),
                "no audio": ("failed", False, NO_RECORDING)}[case]
    assert found == expected


def test_the_headless_call_says_whether_the_call_is_analysable(tmp_path, monkeypatch, capsys):
    """`python -m studies call` against a local OpenAI-Realtime server that "answers" each turn with
    a 440 Hz tone: the participant spoke, the system never said a word."""
    user_wav, _ = scripted_user(tmp_path, ["Hello, tell me about sightseeing in New York."], gap_s=1.0)
    monkeypatch.setenv("TEST_REALTIME_KEY", "test-key")
    with fake_realtime(reply_s=1.5) as (url, log):
        config = json.dumps({"url": url, "api_key_env": "TEST_REALTIME_KEY"})
        assert main(["call", str(user_wav), str(tmp_path / "call.wav"), "--kind", "realtime", "--config", config,
                     "--tail", "2.5", "--min-call-seconds", "3"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["replies"] == 1  # the tone came, after the participant's turn ...
    assert (summary["analysable"], summary["quality_reason"]) == (False, NO_SYSTEM_ANSWER)  # ... but it is no speech


def network_rows(loss_to_server: float = 0.0, rtt_ms: float = 80.0, late_blocks: int = 0,
                 loop_lag_ms: float = 1.0, cpu_wait: float = 0.0) -> list[dict]:
    """A call's network.jsonl as both ends write it, 10 s of it: the page's samples and the server's."""
    rows = []
    for second in range(1, 11):
        received = 44 * second  # with 12 % lost: 60 of 500 packets at the end
        rows.append({"side": "page", "t_s": second + 0.3, "mic_s": second + 0.2, "page_t_ms": 1000 * second,
                     "rtt_ms": rtt_ms + second % 3, "jitter_ms": 4.0, "packets_lost": 0, "packets_received": received,
                     "concealed_samples": 0, "total_samples_received": 960 * received, "playout_delay_ms": 50.0,
                     "candidate_type": "host", "relay_protocol": None})
        lost = round(received * loss_to_server / (1 - loss_to_server))
        rows.append({"side": "server", "t_s": second, "mic_s": second - 0.1, "rtt_ms": rtt_ms, "jitter_ms": 2.0,
                     "packets_lost": lost, "packets_received": received, "remote_fraction_lost": 0.0,
                     "remote_packets_lost": 0, "lost_mic_samples": 320 * lost,
                     "late_blocks": late_blocks * second // 10, "loop_lag_ms": loop_lag_ms, "cpu_wait": cpu_wait})
    return rows


def test_a_poor_network_is_the_last_reason():
    normal = dict(duration_s=60.0, participant_speech_s=20.0, system_speech_s=20.0, minimum_s=10.0)
    lossy = summarise(network_rows(loss_to_server=0.12))
    assert lossy["loss_to_server"] == 0.12
    reason = "network too poor to analyse: loss of the participant's audio (0.12 over the study's limit 0.05)"
    assert judge_call(**normal, network=lossy) == CallQuality(False, reason)
    assert judge_call(**normal, network=summarise(network_rows(rtt_ms=900.0))).reason == \
        "network too poor to analyse: median round trip (901 ms over the study's limit 400 ms)"
    # the server's lateness is the server's, named apart from the network; a network over its
    # limits is the reason whatever the server did (a fifth of the packets lost on a busy server)
    late = summarise(network_rows(late_blocks=40, loop_lag_ms=210.0, cpu_wait=0.4))
    assert judge_call(**normal, network=late).reason == (
        "degraded by this server: system audio sent late (40 blocks over the study's limit 25); in its slowest "
        "seconds (p90) its event loop 210 ms late, its thread waiting for a CPU 40 % of the time")
    both = summarise(network_rows(loss_to_server=0.12, late_blocks=40))
    assert judge_call(**normal, network=both).reason == reason
    assert judge_call(**normal, network=both, network_limits=NetworkLimits(max_loss=None)).reason.startswith(
        SERVER_BEHIND)
    # ... but the round trip a server short of CPU lengthens itself (late RTCP answers) is not
    slow_and_late = summarise(network_rows(rtt_ms=900.0, late_blocks=40))
    assert judge_call(**normal, network=slow_and_late).reason.startswith(SERVER_BEHIND)
    # ... after the others: a call without an answer is that, whatever its network
    assert judge_call(**{**normal, "system_speech_s": 0.0}, network=lossy).reason == NO_SYSTEM_ANSWER
    # ... unless this server was behind: the system's channel is what it sent, and a server short of
    # CPU may have sent nothing of an answer the system gave
    assert judge_call(**{**normal, "system_speech_s": 0.0}, network=late).reason.startswith(SERVER_BEHIND)
    assert judge_call(**{**normal, "participant_speech_s": 0.0}, network=lossy).reason == NO_PARTICIPANT_SPEECH
    # within the limits, or not measured, or a check turned off: analysable
    assert judge_call(**normal, network=summarise(network_rows())).analysable
    assert judge_call(**normal, network=None).analysable
    assert judge_call(**normal, network=summarise([])).analysable  # a call whose sides sent nothing
    assert judge_call(**normal, network=lossy, network_limits=NetworkLimits(max_loss=None)).analysable
    assert judge_call(**normal, network=lossy, network_limits=NetworkLimits(max_loss=0.2)).analysable


def test_the_network_limits_are_a_study_setting():
    base = {"name": "q", "systems": [{"name": "a", "kind": "cascaded"}]}
    assert parse_config(base).call_network_limits == NetworkLimits(0.05, 400.0, 25)
    limits = parse_config({**base, "network_limits": {"max_rtt_ms": 250, "max_late_blocks": None}})
    assert limits.call_network_limits == NetworkLimits(0.05, 250.0, None)
    assert limits.study_json()["network_limits"] == {"max_rtt_ms": 250, "max_late_blocks": None}
    assert "network_limits" not in parse_config(base).study_json()  # stored only when set
    refused = {
        "max_lag": "'network_limits': unknown key(s) max_lag (known: max_late_blocks, max_loss, max_rtt_ms)",
        "max_loss": "'network_limits': max_loss must be a number from 0 to 1 (or null: not checked), got 1.5",
        "max_rtt_ms": "'network_limits': max_rtt_ms must be a number from 0 to 60000 (or null: not checked), got 'slow'",
        "max_late_blocks": "'network_limits': max_late_blocks must be a whole number from 0 to 1e+06 (or null: not "
                           "checked), got 2.5",
    }
    values = {"max_lag": 3, "max_loss": 1.5, "max_rtt_ms": "slow", "max_late_blocks": 2.5}
    for key, message in refused.items():
        with pytest.raises(StudyConfigError) as refusal:
            parse_config({**base, "network_limits": {key: values[key]}})
        assert str(refusal.value) == f"study config: {message}"
        assert "\n" not in str(refusal.value)
    with pytest.raises(StudyConfigError, match="'network_limits': must be a mapping"):
        parse_config({**base, "network_limits": [0.05]})


@pytest.mark.parametrize("case", ["lossy", "good", "not measured"])
def test_finish_session_stores_the_network_and_its_verdict(engine, talk, tmp_path, case):  # noqa: F811
    with session_scope(engine) as session:
        study = apply_config(session, parse_config({
            "name": "networked", "min_call_seconds": 5, "network_limits": {"max_loss": 0.1},
            "systems": [{"name": "cascaded", "kind": "cascaded"}]}))
        assert study_settings(study).call_network_limits.max_loss == 0.1  # as stored
        participant = get_or_create_participant(session, study, external_id="p")
        session_id = start_session(session, participant, get_system(session, study, "cascaded"), "hiking").id
    wav = tmp_path / call_relpath(session_id)
    wav.parent.mkdir(parents=True)
    write(wav, talk.samples)
    if case != "not measured":
        lines = [json.dumps(row) for row in network_rows(loss_to_server=0.12 if case == "lossy" else 0.02)]
        # a killed process may leave half a line: skipped
        (tmp_path / network_relpath(session_id)).write_text("\n".join(lines) + '\n{"side": "ser')
    finish_session(engine, session_id, "complete", tmp_path)
    with session_scope(engine) as session:
        row = session.get(ConversationSession, session_id)
        found = (row.analysable, row.quality_reason, row.network)
    if case == "not measured":
        assert found == (True, None, None)
        return
    rows = read_network(tmp_path / network_relpath(session_id))
    assert len(rows) == 20 and found[2] == summarise(rows)
    if case == "lossy":
        assert found[:2] == (False, "network too poor to analyse: loss of the participant's audio "
                                    "(0.12 over the study's limit 0.1)")
    else:
        assert found[:2] == (True, None) and found[2]["loss_to_server"] == 0.02
