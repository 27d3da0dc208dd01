"""`python -m examiner decision-cues`: the predictive system's answer latency split into its parts
and its decision into each cue's log-odds term, read from a run folder's logs."""

from __future__ import annotations

import json

import pytest

from judge.turn_end import load_turn_end_model, posterior, sigmoid
from tests.command_line import run_cli

TURN_END_S = 2.4351  # the question's end in the rendered input
# One answer of a seed-0 run of the predictive system on the fitting voices (espeak-ng en-gb+m3@175,
# "Could you help me plan a birthday party?"): the events its reading uses, as the call logged them.
CALL_LOG = [
    {"t": 0.0, "mic_s": 0.0, "event": "start", "sample_rate": 16000},
    {"t": 1.1486, "mic_s": 1.16, "event": "transcript", "text": "Could you help?", "turn": 1},
    {"t": 2.5023, "mic_s": 2.5, "event": "smart_turn", "p_complete": 0.616, "read_s": 0.058, "turn": 9, "again": False},
    {"t": 2.5743, "mic_s": 2.58, "event": "transcript", "text": "Could you help me plan a birthday party?", "turn": 9,
     "asr_s": 0.151},
    {"t": 2.6623, "mic_s": 2.66, "event": "backchannel", "text": "right.", "p_turn_end": 0.811, "silence_s": 0.2,
     "smart_turn_again": None, "acknowledgement": True},
    {"t": 2.8217, "mic_s": 2.82, "event": "turn_end", "p_turn_end": 0.8, "words": "birthday party", "silence_s": 0.36,
     "judge_p_t": 0.337, "smart_turn": 0.616, "smart_turn_read_s": 0.04, "p_sentence_end": 0.1404,
     "p_question": 0.1217, "speech_s": 1.852, "opener": None, "acknowledged": True},
    {"t": 12.4218, "mic_s": 12.4351, "event": "end", "duration_s": 12.4351},
]
OUTPUT_WORDS = {"text": "right sure", "chunks": [{"text": "right", "timestamp": [2.648, 3.008]},
                                                  {"text": "sure", "timestamp": [3.288, 3.288]}]}


def write_run(root, log):
    example = root / "run" / "smooth_turn_taking" / "0"
    example.mkdir(parents=True)
    (example / "example.json").write_text(json.dumps({
        "task": "smooth_turn_taking", "voice": "espeak-ng:en-gb+m3@175",
        "text": "Could you help me plan a birthday party?", "turn_end": TURN_END_S}))
    (example / "call.jsonl").write_text("".join(json.dumps(e) + "\n" for e in log))
    (example / "output.json").write_text(json.dumps(OUTPUT_WORDS))
    return root / "run"


def test_an_answer_is_split_into_its_latency_parts_and_cue_terms(tmp_path):
    run = write_run(tmp_path, CALL_LOG)
    done = run_cli("examiner", "decision-cues", run, "--json", tmp_path / "rows.json")
    assert done.returncode == 0, done.stderr
    assert f"{run}: 1 answers" in done.stdout and "slow: none" in done.stdout
    [row] = json.loads((tmp_path / "rows.json").read_text())[str(run)]
    # the first word ("right.", the acknowledgement) 0.213 s after the question: the VAD's lag,
    # the decision's silence, less the acknowledgement's lead on the decision
    assert row["latency_s"] == pytest.approx(2.648 - TURN_END_S, abs=1e-3)
    assert row["vad_lag_s"] == pytest.approx(2.82 - 0.36 - TURN_END_S, abs=1e-3)
    assert row["after_decision_s"] == pytest.approx(2.648 - 2.82, abs=1e-3)
    assert row["acknowledged"] and row["acknowledged_at_silence_s"] == 0.2
    assert row["heard"] == "Could you help me plan a birthday party?"
    # what the decision waited for, from the pause's first silent frame (2.82 - 0.36 s)
    assert row["transcript_at_silence_s"] == pytest.approx(2.58 - 2.46, abs=1e-3) and row["recognition_s"] == 0.151
    assert row["smart_turn_at_silence_s"] == pytest.approx(2.5 - 2.46, abs=1e-3)
    assert "waits: transcript_at_silence_s 0.120, recognition_s 0.151, smart_turn_at_silence_s 0.040" in done.stdout
    # the terms add up to the P(turn end) the system logged at its decision's silence
    model = load_turn_end_model(None)
    assert sum(row["terms"].values()) == pytest.approx(row["log_odds"], abs=0.01)
    assert posterior(sigmoid(row["log_odds"]), model.pause_survival(0.36)) == pytest.approx(0.8, abs=0.01)
    assert abs(row["rule_silence_s"] - 0.36) <= 0.04  # one 40 ms step of the rule
    # without its question-mark term the decision waits longer
    assert row["without"]["question_mark"] > row["rule_silence_s"]


def test_a_folder_that_is_not_a_run_is_one_line_and_exit_2(tmp_path):
    done = run_cli("examiner", "decision-cues", tmp_path / "missing")
    assert done.returncode == 2 and done.stderr == f"error: {tmp_path / 'missing'} is not a folder\n"
    done = run_cli("examiner", "decision-cues", tmp_path)
    assert done.returncode == 2 and "holds no smooth_turn_taking examples" in done.stderr
    assert done.stderr.count("\n") == 1


def test_a_run_without_predictive_decisions_is_one_line_and_exit_2(tmp_path):
    run = write_run(tmp_path, [e for e in CALL_LOG if e["event"] != "turn_end"])
    done = run_cli("examiner", "decision-cues", run)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "no turn-taking decision of the predictive system" in done.stderr
