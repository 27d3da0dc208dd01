"""The embedded cascade with timers (`cascade-backchannel`) backchannels in the pauses of a long
turn, answers after it, and yields when talked over (the cascade's packaged models, real time,
espeak-ng speech); study files and database rows that name it by its former names still load and
call."""

from __future__ import annotations

import json

import numpy as np
import soundfile
from sqlmodel import select

from storage.db import session_scope
from storage.models import DialogueSystem
from studies.__main__ import main
from studies.call_manager import CallManager
from studies.config import apply_config, load_config
from studies.offline_call import active_segments, run_offline_call
from systems import system_spec
from systems.cascade_backchannel import CascadeBackchannel
from tests.studies.conftest import espeak_16k, scripted_user


def test_backchannels_during_a_long_turn_then_answers(tmp_path, cascade_components):
    rate = 16000
    phrases = ["I went hiking last weekend in the mountains", "and it was really beautiful up there",
               "but I forgot to bring enough water with me"]
    parts = [np.zeros(rate, dtype=np.float32)]
    for k, phrase in enumerate(phrases):
        speech = espeak_16k(phrase, tmp_path / f"p{k}.wav")
        loud = np.flatnonzero(np.abs(speech) > 0.01)
        # exactly 0.3 s between the phrases: espeak's own leading/trailing silence cut off
        parts += [speech[loud[0]:loud[-1] + 1], np.zeros(int(0.3 * rate), dtype=np.float32)]
    parts.append(np.zeros(7 * rate, dtype=np.float32))
    user = np.concatenate(parts)
    soundfile.write(str(tmp_path / "user.wav"), user, rate)
    turn = active_segments(user, bridge_s=0.35)  # the 0.3 s pauses are inside one turn
    assert len(turn) == 1
    turn_start, turn_end = turn[0]

    system = CascadeBackchannel({"backchannel_after_s": 1.5}, components=cascade_components)
    result = run_offline_call(tmp_path / "user.wav", tmp_path / "call.wav", system=system, tail_s=0.0)
    events = [json.loads(line) for line in result.log_path.read_text().splitlines()]
    backchannels = [e for e in events if e["event"] == "backchannel"]
    # only one turn end: the backchannel pauses did not end the participant's turn
    [ended] = [e["mic_s"] for e in events if e["event"] == "turn_end"]
    assert ended > turn_end
    # one backchannel in each of the two pauses inside the turn (a third may come as it ends)
    assert sum(turn_start < e["mic_s"] < turn_end for e in backchannels) == 2
    assert all(e["mic_s"] < ended for e in backchannels)
    audio, _ = soundfile.read(str(tmp_path / "call.wav"), dtype="float32")
    system_speech = active_segments(audio[:, 1])
    during = [s for s in system_speech if s[0] < turn_end]
    after = [s for s in system_speech if s[0] > turn_end]
    assert during and all(e - s < 1.0 for s, e in during)  # short backchannels inside the turn
    assert after  # and a reply after it


def test_calls_share_the_loaded_models(engine, tmp_path, cascade_components):
    calls = CallManager(engine, tmp_path)
    calls.cascade_components({}, loaded=cascade_components)
    baseline = calls.build_system(system_spec("full-duplex", {"backchannel_after_s": 2.0}))  # an older demo study's kind
    cascade = calls.build_system(system_spec("cascaded", {"barge_in": "yield"}))
    assert isinstance(baseline, CascadeBackchannel)
    assert baseline.stages.language_model is cascade.stages.language_model is cascade_components[2]


def test_a_study_file_with_the_former_kind_name_loads_and_calls(engine, tmp_path, cascade_components):
    path = tmp_path / "old.yaml"
    path.write_text("name: old\nsystems:\n  - {name: baseline, kind: full-duplex-baseline,"
                    " config: {backchannel_after_s: 2.0}}\n")
    with session_scope(engine) as session:
        apply_config(session, load_config(path))
    with session_scope(engine) as session:
        row = session.exec(select(DialogueSystem).where(DialogueSystem.name == "baseline")).one()
        kind, config = row.kind, dict(row.config)
    assert kind == "cascade-backchannel"  # stored under the kind's name
    calls = CallManager(engine, tmp_path)
    calls.cascade_components({}, loaded=cascade_components)
    # a row of a database loaded before the rename still carries the former name: the same system
    assert isinstance(calls.build_system(system_spec("full-duplex-baseline", config)), CascadeBackchannel)
    system = calls.build_system(system_spec(kind, config))
    assert isinstance(system, CascadeBackchannel) and system.settings.backchannel_after_s == 2.0
    user_wav, _ = scripted_user(tmp_path, ["What should I bring on a hike?"], gap_s=7.0)
    result = run_offline_call(user_wav, tmp_path / "call.wav", system=system, tail_s=0.0, topic="preparing for a hike")
    assert result.latencies_s and result.unanswered == 0 and result.failure is None


def test_serve_realtime_takes_the_former_kind_name(capsys):
    # a bad key is refused by the kind's settings before any model loads: the message names the kind
    assert main(["serve-realtime", "--system", "full-duplex-baseline", "--config", '{"colour": 1}']) == 1
    captured = capsys.readouterr()
    assert "loading the cascade-backchannel system's models" in captured.out
    assert captured.err.startswith("error: cascade-backchannel system: ") and "colour" in captured.err
