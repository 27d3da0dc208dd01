import json

import numpy as np
import pytest

from turntaking.intervals import margin_of_error
from judge.thresholds import (
    DIFFERENCE_SWEEP,
    JudgeThresholds,
    MetricThresholds,
    OperatingPoints,
    ThresholdsError,
    hard_labels,
    load_thresholds,
    save_thresholds,
    thresholds_for_checkpoint,
    thresholds_path,
    conversations_in_half,
    tune_metric_threshold,
    tune_operating_points,
)


def test_reference_defaults():
    t = JudgeThresholds()
    assert (t.metrics.speak_up, t.metrics.backchannel, t.metrics.interrupt, t.metrics.convey_turn,
            t.metrics.handle_interruption) == (0.0, 0.1, -0.45, 0.0, -0.1)
    assert (t.operating_points.C, t.operating_points.NA, t.operating_points.I, t.operating_points.BC,
            t.operating_points.T) == (0.2, 0.45, 0.4, 0.4, 0.4)


def test_hard_labels_priority_then_argmax():
    probs = np.array([
        [0.25, 0.0, 0.0, 0.0, 0.75],  # C 0.25 > 0.2 wins over a larger NA
        [0.2, 0.0, 0.0, 0.3, 0.5],  # C not > 0.2; NA 0.5 > 0.45
        [0.1, 0.41, 0.0, 0.41, 0.08],  # I before BC
        [0.1, 0.35, 0.39, 0.0, 0.16],  # nothing passes: argmax T
        [0.0, 0.0, 0.45, 0.1, 0.45],  # T 0.45 > 0.4 (NA 0.45 is not > 0.45)
    ])
    assert hard_labels(probs).tolist() == [0, 4, 3, 2, 2]
    assert hard_labels(probs, OperatingPoints(C=0.9)).tolist() == [4, 4, 3, 2, 2]


def test_save_load_next_to_checkpoint(tmp_path):
    ckpt = tmp_path / "judge.pt"
    ckpt.write_bytes(b"x")
    assert thresholds_path(ckpt) == tmp_path / "judge.thresholds.json"
    assert thresholds_for_checkpoint(ckpt) == JudgeThresholds()
    tuned = JudgeThresholds(MetricThresholds(backchannel=0.07), OperatingPoints(T=0.3))
    save_thresholds(tuned, thresholds_path(ckpt), extra={"tuned_on": "val"})
    loaded = thresholds_for_checkpoint(ckpt)
    assert loaded.metrics.backchannel == 0.07 and loaded.operating_points.T == 0.3
    assert loaded.metrics.interrupt == -0.45
    assert json.loads(thresholds_path(ckpt).read_text())["tuned_on"] == "val"


def test_bad_thresholds_files(tmp_path):
    with pytest.raises(ThresholdsError, match="not found"):
        load_thresholds(tmp_path / "none.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(ThresholdsError, match="not valid JSON"):
        load_thresholds(bad)
    bad.write_text(json.dumps({"metrics": {"speek_up": 0.1}}))
    with pytest.raises(ThresholdsError, match="unknown metrics entries speek_up"):
        load_thresholds(bad)
    bad.write_text(json.dumps({"operating_points": {"C": "high"}}))
    with pytest.raises(ThresholdsError, match="must be numbers"):
        load_thresholds(bad)


def test_tune_metric_threshold_balanced_agreement():
    scores = np.array([0.3, 0.1, -0.2, -0.3, -0.1, 0.2, -0.4])
    positive = np.array([True, True, True, False, False, False, False])
    res = tune_metric_threshold(scores, positive, DIFFERENCE_SWEEP)
    # at -0.3: all 3 positives above, negatives -0.3 and -0.4 at or below: (1 + 0.5) / 2
    assert res["threshold"] == -0.3
    assert res["balanced_agreement"] == 0.75
    assert (res["agreement_positive"], res["agreement_negative"]) == (1.0, 0.5)
    assert (res["n_positive"], res["n_negative"]) == (3, 4)
    assert len(res["sweep"]) == 101
    assert res["margin_of_error_positive"] == pytest.approx(margin_of_error(res["sweep_agreement_positive"]))


def test_tune_operating_points_best_f1():
    probs = np.array([
        [0.9, 0.0, 0.1, 0.0, 0.0],
        [0.6, 0.0, 0.4, 0.0, 0.0],
        [0.3, 0.0, 0.7, 0.0, 0.0],
        [0.1, 0.0, 0.0, 0.0, 0.9],
    ])
    labels = np.array([0, 0, 2, 4])
    points, report = tune_operating_points(probs, labels)
    assert points.C == 0.3 and report["C"]["f1"] == 1.0  # 0.3 is not > 0.3
    assert points.T == 0.4 and points.NA == 0.05  # T: 0.4 is not > 0.4, so only row 2
    assert report["BC"] == {"threshold": 0.05, "f1": 0.0, "n_true": 0}


# ---------------------------------------------------------------------------------------------
# `python -m judge tune` end to end: thresholds written next to the checkpoint and then used

from tests.scripted import write_ms98
from tests.command_line import one_line_error, run_cli, run_cli_json, write_checkpoint


def test_validation_halves_are_disjoint_fixed_and_about_even():
    ids = [str(i) for i in range(2000, 4000)]
    tuning, reference = conversations_in_half(ids, "tuning"), conversations_in_half(ids, "reference")
    assert not set(tuning) & set(reference) and sorted(tuning + reference) == ids
    assert 900 < len(tuning) < 1100
    # A conversation's half is its own: the same in a shorter list, with or without the "sw" prefix.
    assert conversations_in_half(ids[:50], "tuning") == [i for i in tuning if i in ids[:50]]
    assert conversations_in_half(["sw" + i for i in ids[:50]], "tuning") == ["sw" + i for i in tuning if i in ids[:50]]
    with pytest.raises(ValueError, match="unknown half 'test'"):
        conversations_in_half(ids, "test")


# Of the scripted corpus' conversation numbers, 4323 and 4325 fall in the tuning half, 4321 in the
# reference half (`validation_half`).
TUNING, REFERENCE = ("4323", "4325"), ("4321",)


def test_cli_tune_writes_thresholds_the_scorer_loads(tmp_path):
    checkpoint = write_checkpoint(tmp_path)
    corpus = tmp_path / "swb"
    for conv_id in TUNING + REFERENCE:
        write_ms98(corpus, conv_id)
    (corpus / "splits").mkdir()
    (corpus / "splits" / "val.txt").write_text("sw4321\nsw4323\nsw4325\n")
    assert conversations_in_half(["4321", "4323", "4325"], "tuning") == list(TUNING)

    report = run_cli_json("judge", "tune", corpus, "--checkpoint", checkpoint)
    written = thresholds_path(checkpoint)
    assert report["written"] == str(written) and written.is_file()
    speak_up = report["metrics"]["speak_up"]
    # both speakers in the system role: 4 turn changes and 6 continuations after pauses
    assert (speak_up["n_positive"], speak_up["n_negative"]) == (4, 6)
    assert -0.5 <= speak_up["threshold"] <= 0.5
    assert 0 <= report["metrics"]["backchannel"]["threshold"] <= 1
    assert 0.0 <= speak_up["balanced_agreement"] <= 1.0

    tuned = load_thresholds(written)
    assert tuned.metrics.speak_up == speak_up["threshold"]
    saved = json.loads(written.read_text())
    assert saved["tuned_on"]["conversations"] == 2 and "margin_of_error_positive" in saved["sensitivity"]["speak_up"]
    assert saved["tuned_on"]["conversation_ids"] == list(TUNING) and saved["tuned_on"]["half"] == "tuning"
    assert tuned.tuned_on == TUNING

    # The human reference is scored on the other half only, with the tuned thresholds ...
    used = run_cli_json("judge", "metrics", corpus, "--checkpoint", checkpoint)
    assert used["thresholds"]["source"] == str(written)
    assert used["metrics"]["speak_up"]["threshold"] == speak_up["threshold"]
    assert used["conversations"] == 1 and used["out_of_sample"]["conversation_ids"] == list(REFERENCE)
    text = run_cli("judge", "metrics", corpus, "--checkpoint", checkpoint)
    assert "human reference on 1 conversations, none of the 2 the thresholds were tuned on" in text.stdout
    # ... and refused on conversations the thresholds were tuned on.
    one_line_error(run_cli("judge", "metrics", corpus, "--checkpoint", checkpoint, "--half", "all"),
                   "2 of the 3 conversations (e.g. 4323) are ones the thresholds", "were tuned on")


def test_cli_tune_bad_corpus(tmp_path):
    checkpoint = write_checkpoint(tmp_path)
    one_line_error(run_cli("judge", "tune", tmp_path, "--checkpoint", checkpoint), "not a Switchboard directory")
