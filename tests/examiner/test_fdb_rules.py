"""FDB's scoring rules on hand-made examples in its folder layout, through `python -m examiner fdb`."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon

from examiner.fdb_rules import (
    TimedWord,
    backchannel_decision,
    backchannel_histogram,
    backchannel_jsd,
    takeover,
    words_in_segment,
)
from examiner.task_sets import backchannel_reference
from tests.command_line import run_cli


def words(*spans):
    """Words w0, w1, ... at the given (start, end) times."""
    return [TimedWord(f"w{k}", s, e) for k, (s, e) in enumerate(spans)]


def write_example(root, name, task, chunks, user_end=None, interrupt=None):
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "output.json").write_text(json.dumps(
        {"text": " ".join(c[0] for c in chunks), "chunks": [{"text": t, "timestamp": [s, e]} for t, s, e in chunks]}))
    if task == "pause_handling":
        (folder / "pause.json").write_text(json.dumps([{"text": "[PAUSE]", "timestamp": [1.0, 2.5]}]))
    if task == "smooth_turn_taking":
        turn = [{"text": "[TURN-TAKING]", "timestamp": [user_end, user_end + 3]}]
        (folder / "turn_taking.json").write_text(json.dumps(turn))
    if task == "user_interruption":
        (folder / "interrupt.json").write_text(json.dumps(
            [{"context": "tell me a story", "interrupt": "wait, stop", "timestamp": list(interrupt)}]))
    return folder


def score(root, task):
    done = run_cli("examiner", "fdb", root, "--task", task, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_short_output_of_few_words_is_no_takeover_a_longer_one_is():
    assert takeover(words((3.0, 3.2), (3.3, 3.6))).tor == 0  # 2 words, 0.6 s
    assert takeover(words((3.0, 3.2), (3.3, 4.2))).tor == 1  # 2 words, 1.2 s
    assert takeover(words((3.0, 3.1), (3.2, 3.3), (3.4, 3.5))).tor == 0  # 3 words, 0.5 s
    assert takeover(words((3.0, 3.1), (3.2, 3.3), (3.4, 3.5), (3.55, 3.6))).tor == 1  # 4 words, 0.6 s
    assert takeover(words((3.0, 3.5), (3.6, 4.0))).tor == 1  # exactly 1 s is not "shorter than 1 s"
    assert takeover([]).tor == 0
    # A null end: the last word's start closes the turn (eval_pause_handling.py).
    assert takeover(words((3.0, 3.2), (3.9, None))).duration_s == pytest.approx(0.9)


def test_pause_handling_tor_over_a_folder(tmp_path):
    write_example(tmp_path, "0", "pause_handling", [("mm", 2.0, 2.3), ("hmm", 2.4, 2.6)])  # 0.6 s, 2 words
    write_example(tmp_path, "1", "pause_handling", [("sure", 2.0, 2.3), ("thing", 2.4, 3.2)])  # 1.2 s
    write_example(tmp_path, "2", "pause_handling", [])
    report = score(tmp_path, "pause_handling")
    assert report["tor"] == pytest.approx(1 / 3)
    assert [r["tor"] for r in report["rows"]] == [0, 1, 0]
    assert report["latency_s"] is None
    assert report["words_from"] == ["output.json (given)"]


def test_smooth_turn_taking_latency_is_clipped_at_zero_and_averaged_over_takeovers(tmp_path):
    write_example(tmp_path, "0", "smooth_turn_taking", [("well", 5.4, 5.8), ("i", 5.9, 6.0), ("think", 6.1, 6.6)],
                  user_end=5.0)  # take-over, latency 0.4
    write_example(tmp_path, "1", "smooth_turn_taking", [("so", 4.7, 5.2), ("the", 5.3, 5.5), ("answer", 5.6, 6.2)],
                  user_end=5.0)  # take-over started 0.3 s early: latency 0
    write_example(tmp_path, "2", "smooth_turn_taking", [("yeah", 9.0, 9.3)], user_end=5.0)  # no take-over: left out
    report = score(tmp_path, "smooth_turn_taking")
    assert report["tor"] == pytest.approx(2 / 3)
    assert [r["latency_s"] for r in report["rows"]] == [pytest.approx(0.4), 0.0, None]
    assert report["latency_s"] == pytest.approx(0.2)


def test_user_interruption_latency_runs_from_the_interruption_end_and_the_judge_stays_empty(tmp_path):
    # The interruption's timestamp is [start, end]; latency counts from its end (timestamp[1]).
    write_example(tmp_path, "0", "user_interruption", [("okay", 7.5, 7.9), ("sorry", 8.0, 8.6)], interrupt=(5.0, 6.8))
    write_example(tmp_path, "1", "user_interruption", [("oh", 6.9, 7.1)], interrupt=(5.0, 6.8))  # 0.2 s, 1 word
    report = score(tmp_path, "user_interruption")
    assert report["tor"] == 0.5
    assert report["latency_s"] == pytest.approx(0.7)
    assert report["judge"] is None and "no offline equal" in report["judge_note"]


def test_backchannel_words_are_assigned_to_segments_by_fdbs_overlap_rule():
    ws = [TimedWord("a", 0.9, 1.2), TimedWord("b", 1.3, 1.5), TimedWord("c", 1.9, 2.3), TimedWord("d", 2.5, 2.7),
          TimedWord("e", None, 1.4), TimedWord("f", 1.4, None), TimedWord("g", 2.2, None)]
    # a runs over the start, b inside, c over the end, d after; e (null start) never counts; f (null
    # end, starting inside) is skipped, g (null end, starting after the segment's end) too.
    assert words_in_segment(ws, 1.0, 2.0) == ["a", "b", "c"]


def test_backchannel_scan_stops_at_a_turn_and_the_last_segment_decides():
    mm = words((1.0, 1.3))
    tor, bcs = backchannel_decision([(1.0, 1.4), (5.0, 9.0), (12.0, 12.3)], mm)
    assert (tor, bcs) == (1, [(1.0, 1.4)])  # the 4 s segment is a turn: the scan ends there
    many = words((1.0, 1.1), (1.1, 1.2), (1.2, 1.3), (1.3, 1.4))
    tor, bcs = backchannel_decision([(1.0, 1.5), (6.0, 6.4)], many)
    assert (tor, bcs) == (0, [(1.0, 1.5), (6.0, 6.4)])  # 4 words in the first, none in the last: last wins
    tor, bcs = backchannel_decision([(6.0, 6.4), (1.0, 1.5)], many)
    assert tor == 1 and len(bcs) == 2  # a segment that is a take-over still counts as a backchannel


def test_backchannel_histogram_and_jsd():
    hist = backchannel_histogram([(0.1, 0.45), (1.0, 1.1)], clip_s=2.0)
    assert len(hist) == 11  # int(2.0 / 0.2) + 1
    counts = np.array([1, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0]) + 1e-10
    np.testing.assert_allclose(hist, counts / counts.sum())
    reference = np.linspace(1, 2, 6)  # resized onto 11 points: linear in between
    expected = jensenshannon(hist, np.linspace(1, 2, 11))
    assert backchannel_jsd(hist, reference) == pytest.approx(expected)
    assert backchannel_jsd(hist, hist) == pytest.approx(0, abs=1e-6)


def test_jsd_against_a_monologue_reference_is_finite():
    # a task set's reference (equal mass in each pause) whose interpolation left one bin at -1e-18:
    # the distance was infinite, and so was the task's mean
    pauses, duration = [[2.4228, 3.4228], [5.8503, 6.4503], [9.3149, 10.5049]], 12.5049
    reference = backchannel_reference(pauses, duration)
    hist = backchannel_histogram([(2.5228, 2.9228)], duration)  # one backchannel in the first pause
    assert 0.0 < backchannel_jsd(hist, reference) < 1.0


def test_bad_input_is_one_line_and_a_nonzero_exit(tmp_path):
    done = run_cli("examiner", "fdb", tmp_path / "nowhere", "--task", "pause_handling")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"error: {tmp_path / 'nowhere'} is not a folder"]
    folder = tmp_path / "set" / "0"
    folder.mkdir(parents=True)
    (folder / "output.json").write_text("{not json")
    done = run_cli("examiner", "fdb", tmp_path / "set", "--task", "pause_handling")
    assert done.returncode == 2 and "not valid JSON" in done.stderr and "Traceback" not in done.stderr
    (folder / "output.json").write_text(json.dumps({"text": "", "chunks": []}))
    done = run_cli("examiner", "fdb", tmp_path / "set", "--task", "smooth_turn_taking")
    assert done.returncode == 2 and "turn_taking.json is missing" in done.stderr


def test_a_clip_without_backchannels_scores_jsd_1_and_no_reference_leaves_it_empty():
    from examiner.fdb_rules import backchannel_clip

    turn = backchannel_clip([(2.0, 6.0)], words((2.0, 2.5), (2.6, 5.9)), clip_s=10.0, reference=[0.5, 0.5])
    assert (turn.tor, turn.backchannels, turn.frequency_per_s, turn.jsd) == (1, (), 0.0, 1.0)
    assert backchannel_clip([(2.0, 2.4)], words((2.0, 2.4)), clip_s=10.0).jsd is None


def test_intervals_over_examples_are_bootstrapped(tmp_path):
    for k in range(8):  # TOR 1 for 0-5, latency 0.2 * k; 6 and 7 say one short word
        chunks = [("well", 3.0 + 0.2 * k, 3.5 + 0.2 * k), ("then", 3.6 + 0.2 * k, 4.4 + 0.2 * k)] if k < 6 \
            else [("mm", 5.0, 5.2)]
        write_example(tmp_path, str(k), "smooth_turn_taking", chunks, user_end=3.0)
    report = score(tmp_path, "smooth_turn_taking")
    assert report["tor"] == 0.75 and report["latency_s"] == pytest.approx(0.5)
    low, high = report["tor_ci95"]
    assert 0.25 <= low < 0.75 < high <= 1.0
    low, high = report["latency_ci95"]
    assert 0.0 <= low < 0.5 < high <= 1.0
