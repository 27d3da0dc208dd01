"""Metric instance selection and agreement on a hand-built track (system = channel 1)."""

import numpy as np
import pytest

from judge.metrics import (
    InstanceParams,
    confusion_matrix,
    recording_instances,
    select_instances,
    summarize,
)
from judge.thresholds import LABEL_NAMES, MetricThresholds

L = {name: k for k, name in enumerate(LABEL_NAMES)}

# (label, turn owner, human speaking, system speaking, number of chunks)
RUNS = [
    ("C", 0, 1, 0, 8),  # 0-7 human talks
    ("NA", 0, 0, 0, 4),  # 8-11 pause
    ("C", 0, 1, 0, 4),  # 12-15 human goes on: (a) "lets continue" at 12
    ("BC", 0, 1, 1, 2),  # 16-17 system backchannels: (b) positive at 16
    ("C", 0, 1, 0, 3),  # 18-20
    ("I", 0, 1, 1, 2),  # 21-22 system interrupts: (c) positive at 21
    ("C", 0, 1, 0, 2),  # 23-24
    ("NA", 0, 0, 0, 3),  # 25-27 gap
    ("T", 1, 0, 1, 1),  # 28 system speaks up: (a) positive
    ("C", 1, 0, 1, 5),  # 29-33
    ("I", 1, 1, 1, 3),  # 34-36 human interrupts the system
    ("T", 0, 1, 0, 1),  # 37 human took the floor: (e) positive
    ("C", 0, 1, 0, 2),  # 38-39
    ("NA", 0, 0, 0, 3),  # 40-42
    ("T", 1, 0, 1, 1),  # 43 (a) positive
    ("C", 1, 0, 1, 2),  # 44-45
    ("NA", 1, 0, 0, 3),  # 46-48 system pauses
    ("C", 1, 0, 1, 1),  # 49 system goes on: (d) negative
    ("NA", 1, 0, 0, 3),  # 50-52
    ("T", 0, 1, 0, 1),  # 53 human speaks up: (d) positive
    ("C", 0, 1, 0, 1),  # 54
]


def track():
    labels, owner, speaking = [], [], [[], []]
    for label, own, human, system, n in RUNS:
        labels += [L[label]] * n
        owner += [own] * n
        speaking[0] += [human] * n
        speaking[1] += [system] * n
    return np.array(labels), np.array(owner), np.array(speaking, dtype=bool)


def probabilities(n):
    probs = np.tile([0.8, 0.05, 0.05, 0.05, 0.05], (n, 1))  # order C, BC, T, I, NA
    probs[12] = [0.5, 0.05, 0.1, 0.05, 0.3]  # (a) T-C = -0.4: judge C, agrees with "lets continue"
    probs[28] = [0.1, 0.05, 0.6, 0.05, 0.2]  # (a) +0.5: judge T, agrees
    probs[43] = [0.2, 0.05, 0.2, 0.05, 0.5]  # (a) 0.0 is not > 0: judge C, disagrees
    probs[16] = [0.5, 0.3, 0.1, 0.05, 0.05]  # (b) p(BC) 0.3: agrees with the backchannel
    probs[14] = [0.3, 0.15, 0.05, 0.4, 0.1]  # (b) judge BC and (c) judge I (0.1 > -0.45): both disagree
    probs[21] = [0.1, 0.05, 0.05, 0.5, 0.3]  # (c) I-C = 0.4: agrees with the interruption
    probs[49] = [0.3, 0.05, 0.4, 0.05, 0.2]  # (d) T-C = 0.1: judge T, disagrees with "continue"
    probs[37] = [0.3, 0.05, 0.25, 0.3, 0.1]  # (e) T-C = -0.05 > -0.1: judge T, agrees
    return probs


def test_instance_selection():
    labels, owner, speaking = track()
    inst = select_instances(labels, owner, speaking, system=1)
    chunks = {k: v[0].tolist() for k, v in inst.items()}
    positive = {k: v[1].tolist() for k, v in inst.items()}
    assert chunks["speak_up"] == [12, 28, 43] and positive["speak_up"] == [False, True, True]
    assert chunks["backchannel"] == [5, 6, 7, 8, 13, 14, 15, 16, 19, 20, 21, 22, 23, 24, 25, 38, 39, 40, 54]
    assert positive["backchannel"] == [c == 16 for c in chunks["backchannel"]]
    assert chunks["interrupt"] == [5, 6, 7, 13, 14, 15, 19, 20, 21, 24, 39]
    assert positive["interrupt"] == [c == 21 for c in chunks["interrupt"]]
    assert chunks["convey_turn"] == [49, 53] and positive["convey_turn"] == [False, True]
    assert chunks["handle_interruption"] == [37] and positive["handle_interruption"] == [True]


def test_roles_swap_for_the_other_channel():
    labels, owner, speaking = track()
    as_system_0 = select_instances(labels, owner, speaking, system=0)
    as_system_1 = select_instances(labels, owner, speaking, system=1)
    assert as_system_0["speak_up"][0].tolist() == as_system_1["convey_turn"][0].tolist()
    assert as_system_0["convey_turn"][0].tolist() == as_system_1["speak_up"][0].tolist()
    # system 0 is interrupted by channel 1 at 21-22, but only 2 chunks of I: no (e) instance
    assert as_system_0["handle_interruption"][0].tolist() == []


def test_pause_length_is_a_parameter():
    labels, owner, speaking = track()
    longer = select_instances(labels, owner, speaking, system=1, params=InstanceParams(pause_chunks=4))
    assert longer["speak_up"][0].tolist() == [12]


def test_agreement_counts_and_session_intervals():
    labels, owner, speaking = track()
    probs = probabilities(len(labels))
    s1 = recording_instances(labels, owner, speaking, probs, system=1)
    s2 = recording_instances(labels, owner, speaking, probabilities(len(labels)) * 0 + [0.8, 0.05, 0.05, 0.05, 0.05], 1)
    report = summarize([s1], MetricThresholds())["metrics"]

    a = report["speak_up"]
    assert a["instances"] == 3
    assert a["decisions"]["speaks up"] == {"count": 2, "percent": pytest.approx(200 / 3)}
    assert a["agreement"]["speaks up"]["agree"] == 1 and a["agreement"]["speaks up"]["percent"] == 50.0
    assert a["agreement"]["lets continue"]["agree"] == 1 and a["agreement"]["lets continue"]["n"] == 1
    # one session: no interval at all (its instances are not independent), and it says why
    assert a["agreement"]["speaks up"]["session_ci_95"] is None
    assert a["agreement"]["speaks up"]["ci_95_percent"] is None
    assert a["agreement"]["speaks up"]["ci_unit"] == "n/a: 1 session"

    b = report["backchannel"]
    assert (b["agreement"]["backchannels"]["agree"], b["agreement"]["backchannels"]["n"]) == (1, 1)
    assert (b["agreement"]["does not backchannel"]["agree"], b["agreement"]["does not backchannel"]["n"]) == (17, 18)
    c = report["interrupt"]
    assert (c["agreement"]["interrupts"]["agree"], c["agreement"]["does not interrupt"]["agree"]) == (1, 9)
    d = report["convey_turn"]
    assert (d["agreement"]["user speaks up"]["agree"], d["agreement"]["user lets system continue"]["agree"]) == (0, 0)
    e = report["handle_interruption"]
    taken = e["agreement"]["user takes the floor"]
    assert (taken["agree"], taken["n"], taken["percent"], taken["session_mean_percent"]) == (1, 1, 100.0, 100.0)
    assert taken["ci_95_percent"] is None

    two = summarize([s1, s2])["metrics"]["backchannel"]["agreement"]["does not backchannel"]
    # sessions 17/18 and 18/18: mean 35/36. Two sessions: the resampled pooled agreement runs
    # from 17/18 (session 1 twice) to 18/18 (session 2 twice), and the expanded percentile
    # interval (t with 1 degree of freedom) takes these extremes; the old normal interval of
    # the mean ran past 100 %.
    assert two["sessions"] == 2 and two["ci_unit"] == "95 % CI over 2 sessions"
    assert two["session_mean_percent"] == pytest.approx(100 * 35 / 36)
    assert two["ci_95_percent"] == [pytest.approx(100 * 17 / 18), pytest.approx(100.0)]
    assert two["session_ci_95"] == [pytest.approx(100 * 17 / 18), pytest.approx(100.0)]
    assert (two["agree"], two["n"]) == (35, 36)


def test_thresholds_change_the_judge():
    labels, owner, speaking = track()
    s1 = recording_instances(labels, owner, speaking, probabilities(len(labels)), system=1)
    report = summarize([s1], MetricThresholds(speak_up=-0.01))["metrics"]["speak_up"]
    assert report["agreement"]["speaks up"]["agree"] == 2  # 43's 0.0 now counts as T


def test_single_label_confusion_matrix():
    labels, owner, speaking = track()
    m = confusion_matrix(labels, owner, probabilities(len(labels)), system=1)
    expected = np.zeros((5, 5), dtype=int)
    expected[L["C"], L["C"]] = 15
    expected[L["C"], L["NA"]] = 10
    expected[L["C"], L["BC"]] = 2
    expected[L["C"], L["I"]] = 1
    expected[L["I"], L["I"]] = 1  # chunk 21: p(I) 0.5 > 0.4 after C 0.1 and NA 0.3 fail
    expected[L["T"], L["T"]] = 1  # chunk 28
    expected[L["NA"], L["T"]] = 1  # chunk 43: p(C) 0.2 is not > 0.2, p(NA) 0.5 > 0.45
    assert m.tolist() == expected.tolist()


# ---------------------------------------------------------------------------------------------
# `python -m judge metrics` end to end on the scripted conversation of tests/analysis/scripted.py:
# with B (channel 1) as the system, the instances follow from its timeline:
#   (a) A's pauses/gaps: 3.6-3.8 A goes on, 6.0-6.5 A goes on, 8.0-8.6 B speaks up,
#       15.0-16.0 B speaks up (3.0-3.2 ends in B's backchannel: not an instance)
#   (b) B's "yeah" at 5.0 starts while A speaks: the one backchannel decision
#   (d) B's pause 11.0-11.5, B goes on
#   (e) A interrupts B at 9.5 (A stops first: B keeps the floor) and 12.5 (B stops: A takes it)

import json  # noqa: E402

from turntaking.activity import conversation_to_json  # noqa: E402
from tests.scripted import scripted_conversation, write_ms98  # noqa: E402
from tests.command_line import one_line_error, run_cli, run_cli_json, write_checkpoint  # noqa: E402


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return write_checkpoint(tmp_path_factory.mktemp("ckpt"))


@pytest.fixture(scope="module")
def scripted_json(tmp_path_factory):
    path = tmp_path_factory.mktemp("rec") / "scripted.json"
    path.write_text(json.dumps(conversation_to_json(scripted_conversation())))
    return path


def decision_counts(metric: dict) -> list[int]:
    return [d["count"] for d in metric["decisions"].values()]


def test_cli_metrics_on_voice_activity_json(checkpoint, scripted_json):
    report = run_cli_json("judge", "metrics", scripted_json, "--system-channel", "1", "--checkpoint", checkpoint)
    m = report["metrics"]
    assert report["sessions"] == 1 and report["system_channel"] == 1
    assert decision_counts(m["speak_up"]) == [2, 2]
    assert m["backchannel"]["decisions"]["backchannels"]["count"] == 1
    assert m["interrupt"]["decisions"]["interrupts"]["count"] == 0
    assert decision_counts(m["convey_turn"]) == [0, 1]
    assert decision_counts(m["handle_interruption"]) == [1, 1]
    for metric in m.values():
        for a in metric["agreement"].values():
            assert 0 <= a["agree"] <= a["n"]
    assert report["thresholds"]["metrics"]["interrupt"] == -0.45  # no tuned file: reference values
    assert sum(map(sum, report["confusion"]["counts"])) == report["confusion"]["total"] > 0

    # Two sessions: an interval over sessions, pooled counts double.
    two = run_cli_json("judge", "metrics", scripted_json, scripted_json, "--system-channel", "1", "--checkpoint", checkpoint)
    a = two["metrics"]["backchannel"]["agreement"]["does not backchannel"]
    assert two["sessions"] == 2 and a["sessions"] == 2 and a["ci_unit"] == "95 % CI over 2 sessions"
    assert a["n"] == 2 * m["backchannel"]["agreement"]["does not backchannel"]["n"]

    text = run_cli("judge", "metrics", scripted_json, "--system-channel", "1", "--checkpoint", checkpoint)
    assert text.returncode == 0 and "speaks up" in text.stdout and "single-label confusion" in text.stdout


def test_cli_metrics_human_reference_on_switchboard_layout(checkpoint, tmp_path):
    for conv_id in ("4321", "4322"):
        write_ms98(tmp_path, conv_id)
    (tmp_path / "splits").mkdir()
    (tmp_path / "splits" / "val.txt").write_text("sw4321\nsw4322\n")
    report = run_cli_json("judge", "metrics", tmp_path, "--checkpoint", checkpoint)
    m = report["metrics"]
    assert report["sessions"] == 2 and report["conversations"] == 2
    # each speaker in the system role: (a) of B and of A (= (d) of B) in each conversation
    assert decision_counts(m["speak_up"]) == [4, 6]
    assert decision_counts(m["convey_turn"]) == [4, 6]
    assert decision_counts(m["handle_interruption"]) == [2, 2]  # only A interrupts
    # Intervals over the conversations (each with both speakers in the system role), not over chunks.
    assert report["interval_unit"] == "conversations"
    assert m["speak_up"]["agreement"]["lets continue"]["ci_unit"] == "95 % CI over 2 conversations"


def test_cli_metrics_bad_input(checkpoint, scripted_json, tmp_path):
    one_line_error(run_cli("judge", "metrics", tmp_path / "nope.json", "--system-channel", "0", "--checkpoint", checkpoint),
                   "not found", "nope.json")
    one_line_error(run_cli("judge", "metrics", scripted_json, "--checkpoint", checkpoint), "--system-channel")
    broken = tmp_path / "broken.json"
    broken.write_text('{"duration": 5, "vad": [[[0, 1]]]}')
    one_line_error(run_cli("judge", "metrics", broken, "--system-channel", "0", "--checkpoint", checkpoint),
                   "exactly two speakers")
    one_line_error(run_cli("judge", "metrics", scripted_json, "--system-channel", "0", "--checkpoint", tmp_path / "x.pt"),
                   "checkpoint not found")
    bad_thresholds = tmp_path / "t.json"
    bad_thresholds.write_text('{"metrics": {"speakup": 0}}')
    one_line_error(run_cli("judge", "metrics", scripted_json, "--system-channel", "0", "--checkpoint", checkpoint,
                             "--thresholds", bad_thresholds), "unknown metrics entries speakup")
