"""Voice-activity perturbations with exact expected timings, and the benchmark builder."""

import json

import numpy as np
import pytest

from annotation.edits import apply_edits, crop
from annotation.perturbations import (
    PERTURBATION_TYPES,
    PerturbationParams,
    build_pairs,
    clean_transitions,
    early_entry,
    excessive_backchannel,
    hold_instead_of_shift,
    late_response,
    shift_instead_of_hold,
)
from tests import command_line
from tests.scripted import write_ms98
from turntaking.activity import Conversation, Word, load_conversation_json
from turntaking.events import mutual_silences
from turntaking.switchboard import load_conversation


# A hold pause 5.0-5.6 (A), a shift 9.0-9.5 (A -> B) and a shift 12.5-13.0 (B -> A).
CLIP = Conversation(24.0, ([(1.0, 5.0), (5.6, 9.0), (13.0, 18.0)], [(9.5, 12.5)]))


def fixed(**ranges):
    """Parameters whose ranges are single values, so magnitudes are exact."""
    return PerturbationParams(**{k: (v, v) if not isinstance(v, tuple) else v for k, v in ranges.items()})


def approx(segments):
    return [pytest.approx(s) for s in segments]


@pytest.fixture
def transitions():
    ts = clean_transitions(CLIP.activity, CLIP.duration, context_s=1.0)
    return {(t.start, t.end): t for t in ts}


def test_clean_transitions_follow_the_vap_criterion(transitions):
    assert set(transitions) == {(5.0, 5.6), (9.0, 9.5), (12.5, 13.0)}
    hold = transitions[(5.0, 5.6)]
    assert hold.prev == hold.next == 0
    shift = transitions[(9.0, 9.5)]
    assert (shift.prev, shift.next, shift.after) == (0, 1, (9.5, 12.5))


def test_late_response_inserts_silence_in_the_gap(transitions):
    edits, details = late_response(transitions[(9.0, 9.5)], fixed(late_delay_s=1.5), np.random.default_rng(0))
    out = apply_edits(CLIP, edits)
    assert out.duration == pytest.approx(25.5)
    assert out.activity[1] == approx([(11.0, 14.0)])
    assert out.activity[0] == approx([(1.0, 5.0), (5.6, 9.0), (14.5, 19.5)])
    assert details["shift_s"] == 1.5 and details["gap_after_s"] == pytest.approx(2.0)


def test_early_entry_moves_the_response_into_the_previous_turn(transitions):
    edits, details = early_entry(CLIP.activity, transitions[(9.0, 9.5)], fixed(early_advance_s=2.0), np.random.default_rng(0))
    out = apply_edits(CLIP, edits)
    assert out.duration == CLIP.duration
    assert out.activity[1] == approx([(7.5, 10.5)])
    assert out.activity[0] == CLIP.activity[0]
    assert details["overlap_s"] == pytest.approx(1.5)


def test_hold_instead_of_shift_removes_the_turn_and_compacts_the_gap(transitions):
    made = hold_instead_of_shift(CLIP.activity, transitions[(9.0, 9.5)], fixed(compacted_gap_s=1.0), np.random.default_rng(0))
    edits, details = made
    out = apply_edits(CLIP, edits)
    assert out.activity[1] == []
    assert out.activity[0] == approx([(1.0, 5.0), (5.6, 9.0), (10.0, 15.0)])
    assert out.duration == pytest.approx(21.0)
    assert details["removed_turn"] == [9.5, 12.5]


def test_hold_instead_of_shift_muted_keeps_the_timeline_and_leaves_the_whole_silence(transitions):
    params = PerturbationParams(hold_removal="mute")
    edits, details = hold_instead_of_shift(CLIP.activity, transitions[(9.0, 9.5)], params, np.random.default_rng(0))
    out = apply_edits(CLIP, edits)
    assert out.activity[1] == [] and out.activity[0] == CLIP.activity[0]
    assert out.duration == CLIP.duration
    # A stops at 9.0 and, nobody answering, goes on at 13.0: a 4 s silence.
    assert details["silence_s"] == pytest.approx(4.0) and details["removed_turn"] == [9.5, 12.5]
    with pytest.raises(ValueError, match="hold_removal"):
        hold_instead_of_shift(CLIP.activity, transitions[(9.0, 9.5)], PerturbationParams(hold_removal="drop"),
                              np.random.default_rng(0))


def test_silence_edit_removes_one_channels_speech_and_words():
    clip = Conversation(10.0, ([(1.0, 2.0), (5.0, 6.0)], [(3.0, 4.0)]),
                        ([Word(1.0, 2.0, "hello"), Word(5.0, 6.0, "again")], [Word(3.0, 4.0, "yes")]))
    out = apply_edits(clip, [{"op": "silence", "channel": 0, "start": 4.5, "end": 7.0}])
    assert out.activity == ([(1.0, 2.0)], [(3.0, 4.0)]) and out.duration == 10.0
    assert [w.text for w in out.words[0]] == ["hello"] and [w.text for w in out.words[1]] == ["yes"]


def test_shift_instead_of_hold_inserts_the_other_speakers_turn(transitions):
    params = PerturbationParams(inserted_gap_s=0.25)
    edits, details = shift_instead_of_hold(transitions[(5.0, 5.6)], params, np.random.default_rng(0), [(9.5, 12.5)])
    out = apply_edits(CLIP, edits, source=CLIP)
    assert out.duration == pytest.approx(24 - 0.6 + 3.5)
    assert out.activity[1] == approx([(5.25, 8.25), (12.4, 15.4)])
    assert out.activity[0] == approx([(1.0, 5.0), (8.5, 11.9), (15.9, 20.9)])
    assert details["inserted_at"] == pytest.approx(5.25)


def test_excessive_backchannel_pastes_distinct_backchannels_spaced_apart():
    params = PerturbationParams(extra_backchannels=(2, 2), backchannel_spacing_s=0.8)
    source = Conversation(30.0, (CLIP.activity[0], [(9.5, 12.5), (20.0, 20.4), (21.0, 21.5)]))
    edits, details = excessive_backchannel(CLIP.activity, (13.0, 18.0), 1, params, np.random.default_rng(0), [(20.0, 20.4), (21.0, 21.5)])
    out = apply_edits(CLIP, edits, source=source)
    assert out.activity[1] == approx([(9.5, 12.5), (13.8, 14.2), (15.0, 15.5)])
    assert details["count"] == 2


def test_hold_pause_outside_range_is_not_used(transitions):
    params = PerturbationParams(hold_pause_s=(0.1, 0.5))
    assert shift_instead_of_hold(transitions[(5.0, 5.6)], params, np.random.default_rng(0), [(9.5, 12.5)]) is None


def test_edit_ops_move_words_with_the_speech():
    clip = Conversation(10.0, ([(1.0, 2.0)], [(3.0, 4.0)]), ([Word(1.0, 2.0, "hello")], [Word(3.0, 4.0, "yes")]))
    out = apply_edits(clip, [{"op": "insert_silence", "at": 2.5, "duration": 1.0}, {"op": "delete", "start": 0.0, "end": 0.5}])
    assert out.words[1][0].start == pytest.approx(3.5) and out.words[0][0].start == pytest.approx(0.5)
    with pytest.raises(ValueError, match="unknown edit operation"):
        apply_edits(clip, [{"op": "stretch"}])


# -- the builder over a whole (generated) corpus -----------------------------------------------


def long_dialogue(n_rounds: int = 12):
    """Rounds of: A speaks (B backchannels), holds a pause, goes on; B answers; A; B."""
    utts, t = [], 0.5
    for _ in range(n_rounds):
        utts += [
            (0, t, t + 4.0, "so this is what i think about it"),
            (1, t + 1.0, t + 1.4, "yeah"),
            (0, t + 4.6, t + 9.6, "and i want to add one more thing about all of this"),
            (1, t + 10.0, t + 12.6, "well i see it the other way round"),
            (0, t + 13.0, t + 14.2, "really tell me more"),
            (1, t + 14.7, t + 17.6, "it started a long time ago you know"),
        ]
        t += 18.6
    return utts, t + 1.0


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("swb")
    utts, duration = long_dialogue()
    write_ms98(root, "5001", utts, duration)
    write_ms98(root, "5002", utts, duration)
    (root / "splits").mkdir()
    (root / "splits" / "val.txt").write_text("5001\n5002\n")
    return root


def test_build_pairs_clips_start_and_end_in_mutual_silence(corpus):
    convs = [load_conversation(corpus, i) for i in ("5001", "5002")]
    params = PerturbationParams()
    pairs = build_pairs(convs, per_type=3, seed=7, params=params)
    assert {p.type for p in pairs} == set(PERTURBATION_TYPES)
    by_source = {c.source: c for c in convs}
    for pair in pairs:
        assert params.clip_min_s <= pair.clip_end - pair.clip_start <= params.clip_max_s
        conv = by_source[pair.source]
        silences = mutual_silences(conv.activity, conv.duration)
        for t in (pair.clip_start, pair.clip_end):
            assert any(s < t < e for s, e in silences), (pair.pair_id, t)
        # The natural clip is exactly the crop; the perturbed one is the crop with the edits.
        assert pair.natural.activity == crop(conv, pair.clip_start, pair.clip_end).activity
        assert pair.perturbed.activity == apply_edits(pair.natural, pair.edits, source=conv).activity
        assert pair.perturbed.activity != pair.natural.activity


def test_build_pairs_cli_writes_the_judge_manifest_and_is_deterministic(corpus, tmp_path):
    def build(out, *options, run=command_line.run_cli):
        # `main(argv)` in this process (an interpreter start costs seconds), the first as the real process
        proc = run("annotation", "build-pairs", corpus, "--split", "val", "--out", out, "--per-type", "2",
                   "--seed", "3", *options)
        assert proc.returncode == 0, proc.stderr
        return (out / "manifest.jsonl").read_text()

    first, second = build(tmp_path / "a", run=command_line.run_cli_process), build(tmp_path / "b")
    assert first == second
    entries = [json.loads(line) for line in first.splitlines()]
    assert len(entries) == 10
    for e in entries:
        assert {"pair_id", "type", "natural", "perturbed", "edits", "clip_start", "clip_end"} <= set(e)
        nat = load_conversation_json(tmp_path / "a" / e["natural"])
        assert nat.duration == pytest.approx(e["clip_end"] - e["clip_start"])
    info = json.loads((tmp_path / "a" / "benchmark.json").read_text())
    assert info["seed"] == 3 and info["params"]["late_delay_s"] == [1.2, 2.0]
    assert info["params"]["events"]["ipu_silence_s"] == 0.2
    # The event parameters reach the perturbations (and are recorded) from the command line.
    build(tmp_path / "c", "--ipu-silence", "0.3")
    assert json.loads((tmp_path / "c" / "benchmark.json").read_text())["params"]["events"]["ipu_silence_s"] == 0.3
    # Muting the answer instead of cutting it out keeps every other pair as it was.
    muted = [json.loads(line) for line in build(tmp_path / "d", "--hold-removal", "mute").splitlines()]
    assert json.loads((tmp_path / "d" / "benchmark.json").read_text())["params"]["hold_removal"] == "mute"
    assert [(e["pair_id"], e["clip_start"]) for e in muted] == [(e["pair_id"], e["clip_start"]) for e in entries]
    for e, m in zip(entries, muted):
        if e["type"] == "hold_instead_of_shift":
            assert [x["op"] for x in m["edits"]] == ["silence"]
            assert m["details"]["silence_s"] > 1.2
        else:
            assert m["edits"] == e["edits"]


def test_build_pairs_cli_rejects_a_missing_source(tmp_path):
    proc = command_line.run_cli("annotation", "build-pairs", tmp_path / "none", "--out", tmp_path / "o")
    assert proc.returncode == 2 and "source not found" in proc.stderr
