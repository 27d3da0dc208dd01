import json
import shutil

import numpy as np
import pytest
import soundfile

from examiner.runs import score_run
from examiner.switchboard_backchannels import DISJOINT_JSD, backchannel_timing_report, listener_jsd
from examiner.table import table_row
from examiner.task_sets import make_task_set
from tests.rendered_speech import Utterance, render_speech

SENTENCES = [[0.5, 3.0], [3.6, 6.0], [6.8, 9.0], [9.5, 12.0]]


def _task_dir(tmp_path, backchannel_onsets: list[list[float]]):
    rows = []
    for k, onsets in enumerate(backchannel_onsets):
        folder = tmp_path / str(k)
        folder.mkdir(parents=True)
        (folder / "example.json").write_text(json.dumps({"task": "backchannel", "speech": SENTENCES}))
        rows.append({"example": str(k), "backchannels": [[t, t + 0.4] for t in onsets]})
    return tmp_path, rows


def test_backchannels_just_after_each_sentence_are_closer_to_listeners_than_ones_inside_sentences(tmp_path):
    in_pauses = [[end + 0.15 for _, end in SENTENCES[:-1]]] * 4
    mid_sentence = [[(start + end) / 2 for start, end in SENTENCES]] * 4
    listener = backchannel_timing_report(*_task_dir(tmp_path / "pauses", in_pauses))
    talker = backchannel_timing_report(*_task_dir(tmp_path / "middle", mid_sentence))
    assert listener["timing_jsd"] < talker["timing_jsd"] <= DISJOINT_JSD
    assert listener["examples"] == 4 and listener["backchannels"] == 12 and listener["outside"] == 0
    # three a monologue of 11.5 s
    assert listener["rate_per_s"] == pytest.approx(3 / 11.5)
    assert listener["rate_ratio"] == pytest.approx(listener["rate_per_s"] / listener["switchboard_rate_per_s"])
    assert 0.03 < listener["switchboard_rate_per_s"] < 0.15
    low, high = listener["rate_ratio_ci95"]
    assert low <= listener["rate_ratio"] <= high  # every example alike: a point
    assert sum(listener["observed"]) == 12 and len(listener["observed"]) == len(listener["bins"])


def test_no_backchannels_is_no_timing_and_onsets_outside_the_monologue_are_counted_apart(tmp_path):
    silent = backchannel_timing_report(*_task_dir(tmp_path / "silent", [[], []]))
    assert silent["timing_jsd"] is None and silent["rate_per_s"] == 0 and silent["rate_ratio"] == 0
    late = backchannel_timing_report(*_task_dir(tmp_path / "late", [[12.5], [3.2]]))
    assert late["outside"] == 1 and late["backchannels"] == 1
    row = table_row({"backchannel": {"switchboard": late}})
    assert row["backchannel_timing_jsd_switchboard"] == late["timing_jsd"]
    assert row["backchannel_rate_ratio_switchboard"] == late["rate_ratio"]


def test_examples_without_their_speech_times_are_left_out(tmp_path):
    folder = tmp_path / "0"
    folder.mkdir()
    (folder / "example.json").write_text(json.dumps({"task": "backchannel"}))
    report = backchannel_timing_report(tmp_path, [{"example": "0", "backchannels": [[1.0, 1.4]]}])
    assert report["examples"] == 0 and "speech" in report["note"]


def test_a_run_scores_real_backchannels_against_switchboards_listeners(tmp_path):
    make_task_set(tmp_path / "set", ["backchannel"], 1, seed=1, progress=False)
    example = tmp_path / "run" / "backchannel" / "0"
    shutil.copytree(tmp_path / "set" / "backchannel" / "0", example)
    facts = json.loads((example / "example.json").read_text())
    duration = soundfile.info(str(example / "input.wav")).duration
    # the system says "yeah" 150 ms into each of the first three pauses (espeak-ng, known times)
    speech = render_speech([Utterance(0, start + 0.15, "yeah", "en-us") for start, _ in facts["pauses"][:3]],
                           duration, channels=1)
    speech.write(example / "output.wav")
    report = score_run(tmp_path / "run", ["backchannel"], progress=False)["backchannel"]["switchboard"]
    assert report["examples"] == 1 and report["backchannels"] == 3 and report["outside"] == 0
    in_bins = [report["bins"][k] for k, n in enumerate(report["observed"]) for _ in range(n)]
    assert set(in_bins) <= {"[+0.0, +0.2)", "[+0.2, +0.4)"}  # Silero's onset within 0.25 s of the sound's
    monologue_s = facts["speech"][-1][1] - facts["speech"][0][0]
    assert report["rate_per_s"] == pytest.approx(3 / monologue_s)
    assert 0 < report["timing_jsd"] < DISJOINT_JSD


def test_a_listener_timed_as_switchboards_sets_the_floor_and_it_falls_with_more_backchannels(tmp_path):
    expected = backchannel_timing_report(*_task_dir(tmp_path / "a", [[3.15]]))["expected"]
    few, many = listener_jsd(np.array(expected), 10), listener_jsd(np.array(expected), 100)
    assert few[1] <= few[0] <= few[2] and many[1] <= many[0] <= many[2]
    assert many[0] < few[0] < DISJOINT_JSD  # chance alone keeps a few onsets from the listeners' shape
    assert listener_jsd(np.array(expected), 0) is None
    # the report reads each system against the floor for its own count
    report = backchannel_timing_report(*_task_dir(tmp_path / "b", [[end + 0.15 for _, end in SENTENCES[:-1]]] * 4))
    # (the report rounds its expected counts to four places)
    assert report["listener_timing_jsd"] == pytest.approx(listener_jsd(np.array(report["expected"]), 12)[0], abs=0.005)
    assert table_row({"backchannel": {"switchboard": report}})["backchannel_timing_jsd_listener"] == \
        report["listener_timing_jsd"]
