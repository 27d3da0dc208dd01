"""The second, independently written perturbation generator (annotation/crosscheck_pairs.py) on a
hand-built conversation whose every region is known."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from annotation.__main__ import main as annotation_main
from annotation.crosscheck_pairs import (
    TYPES,
    build_crosscheck_pairs,
    clean_regions,
    conversation_frames,
    CrosscheckParams,
    write_crosscheck_pairs,
)
from naturalness.pairs import read_pairs_manifest
from tests.scripted import write_ms98
from turntaking.activity import Conversation, Word

ROOT = Path(__file__).resolve().parents[2]


def block_conversation(blocks: int = 10) -> Conversation:
    """15 s blocks: A talks, pauses 0.6 s (a hold), B answers after 0.5 s (a shift), A answers
    after 0.5 s (a shift) and B says "yeah" inside A's speech."""
    a, b, wa, wb = [], [], [], []
    for i in range(blocks):
        o = 15.0 * i
        for s, e in ((o + 0.5, o + 4.0), (o + 4.6, o + 7.0), (o + 11.0, o + 14.0)):
            a.append((s, e))
            wa.append(Word(s, e, "talk"))
        b.append((o + 7.5, o + 10.5))
        wb.append(Word(o + 7.5, o + 10.5, "answer"))
        b.append((o + 12.0, o + 12.3))
        wb.append(Word(o + 12.0, o + 12.3, "yeah"))
    return Conversation(15.0 * blocks, (a, b), (wa, wb), source="blocks")


def speech_s(conv: Conversation, k: int) -> float:
    return sum(e - s for s, e in conv.activity[k])


def test_clean_regions_follow_the_vap_criterion():
    p = CrosscheckParams()
    regions = clean_regions(conversation_frames(block_conversation(2), p), 100)
    kinds = {(r.start / 100, r.end / 100): (r.before, r.after) for r in regions}
    assert kinds[(4.0, 4.6)] == (0, 0)  # A's hold pause
    assert kinds[(7.0, 7.5)] == (0, 1)  # A -> B
    assert kinds[(10.5, 11.0)] == (1, 0)  # B -> A


@pytest.mark.parametrize("form", ["excise", "mute"])
def test_every_type_changes_what_the_paper_says(form):
    pairs = build_crosscheck_pairs([block_conversation()], per_type=2, seed=3, form=form)
    by_type = {t: [p for p in pairs if p.type == t] for t in TYPES}
    assert all(len(v) == 2 for v in by_type.values())
    for p in pairs:
        assert 20.0 - 1.5 <= p.natural.duration <= 25.0 + 1.5
    for p in by_type["late_response"]:
        assert 1.0 <= p.perturbed.duration - p.natural.duration <= 2.5
        assert speech_s(p.perturbed, 1) == pytest.approx(speech_s(p.natural, 1), abs=0.02)
    for p in by_type["early_entry"]:
        assert p.perturbed.duration == pytest.approx(p.natural.duration)
        assert p.details["overlap_s"] > 0.4  # the answer now starts inside the other's speech
    for p in by_type["hold_instead_of_shift"]:
        answer = p.details["answer_s"]
        assert speech_s(p.natural, 1) - speech_s(p.perturbed, 1) == pytest.approx(answer, abs=0.02)
        if form == "mute":
            assert p.perturbed.duration == pytest.approx(p.natural.duration)
        else:
            assert 0.3 <= p.details["pause_s"] <= 2.0
            assert p.details["removed_s"] > answer  # the answer and the silences around it
            assert p.perturbed.duration == pytest.approx(p.natural.duration - p.details["removed_s"] + p.details["pause_s"])
    for p in by_type["shift_instead_of_hold"]:
        # The holds are A's: B's turn goes in, A's speech stays as it was.
        assert speech_s(p.perturbed, 1) - speech_s(p.natural, 1) == pytest.approx(p.details["turn_s"], abs=0.02)
        assert speech_s(p.perturbed, 0) == pytest.approx(speech_s(p.natural, 0), abs=0.02)
    for p in by_type["excessive_backchannel"]:
        k = p.details["listener"]
        assert len(p.perturbed.activity[k]) == len(p.natural.activity[k]) + p.details["count"]
        assert 2 <= p.details["count"] <= 4


def test_both_forms_hold_the_same_pairs_but_the_hold():
    excise = build_crosscheck_pairs([block_conversation()], per_type=2, seed=5, form="excise")
    mute = build_crosscheck_pairs([block_conversation()], per_type=2, seed=5, form="mute")
    for x, m in zip(excise, mute):
        assert (x.type, x.clip_start, x.clip_end) == (m.type, m.clip_start, m.clip_end)
        if x.type != "hold_instead_of_shift":
            assert x.perturbed.activity == m.perturbed.activity


@pytest.mark.parametrize("form", ["excise", "mute"])
def test_equal_length_cuts_both_clips_to_one_duration_around_the_edit(form):
    pairs = build_crosscheck_pairs([block_conversation(16)], per_type=2, seed=4, form=form, equal_length=True)
    assert {p.type for p in pairs} == set(TYPES)
    expected_change = {
        "late_response": lambda d: d["delay_s"],
        "early_entry": lambda d: 0.0,
        "hold_instead_of_shift": lambda d: d["pause_s"] - d["removed_s"] if form == "excise" else 0.0,
        "shift_instead_of_hold": lambda d: d["turn_s"] + sum(d["silences_s"]) - d["pause_s"],
        "excessive_backchannel": lambda d: 0.0,
    }
    for p in pairs:
        assert p.perturbed.duration == pytest.approx(p.natural.duration)
        change = p.details["length_change_s"]
        assert change == pytest.approx(expected_change[p.type](p.details), abs=0.011)
        # The window moves by half the change of length: the edit keeps its place in the middle.
        assert p.details["perturbed_window_shift_s"] == pytest.approx(change / 2, abs=0.011)
        if p.type == "hold_instead_of_shift" and form == "excise":
            # The cut-out answer takes in material beyond the natural clip: more of A's speech.
            assert change < -1.0
            assert speech_s(p.perturbed, 0) > speech_s(p.natural, 0)
            assert speech_s(p.perturbed, 1) < speech_s(p.natural, 1)
        if p.type == "late_response":
            silent = [e - s for s, e in runs_of_silence(p.perturbed)]
            assert max(silent) >= p.details["delay_s"] + p.details["gap_s"] - 0.02


def runs_of_silence(conv: Conversation) -> list[tuple[float, float]]:
    edges = sorted({0.0, conv.duration, *(t for k in (0, 1) for seg in conv.activity[k] for t in seg)})
    return [(s, e) for s, e in zip(edges, edges[1:])
            if not any(a < e and s < b for k in (0, 1) for a, b in conv.activity[k])]


def test_written_pairs_are_read_by_the_naturalness_pairs_reader(tmp_path):
    pairs = build_crosscheck_pairs([block_conversation()], per_type=1, seed=0)
    manifest = write_crosscheck_pairs(pairs, tmp_path, {"seed": 0})
    entries = read_pairs_manifest(manifest)
    assert [e.type for e in entries] == list(TYPES)
    assert all(e.source == "blocks" and e.natural.is_file() and e.perturbed.is_file() for e in entries)
    assert json.loads((tmp_path / "benchmark.json").read_text())["generator"] == "crosscheck"
    assert np.isfinite(pairs[0].perturbed.duration)


def test_cli_builds_the_same_pairs_twice_and_refuses_a_missing_split(tmp_path):
    conv = block_conversation()
    utterances = sorted([(k, w.start, w.end, "well we talked" if w.text == "talk" else w.text)
                         for k in (0, 1) for w in conv.words[k]], key=lambda u: u[1])
    write_ms98(tmp_path / "swb", "6001", utterances, conv.duration)
    (tmp_path / "swb" / "splits").mkdir()
    (tmp_path / "swb" / "splits" / "val.txt").write_text("6001\n")

    def build(out, *options):
        return subprocess.run([sys.executable, "-m", "annotation", "build-crosscheck-pairs", str(tmp_path / "swb"),
                               "--out", str(out), "--per-type", "1", "--seed", "2", *options],
                              cwd=ROOT, capture_output=True, text=True, timeout=120)

    first, second = build(tmp_path / "a", "--split", "val"), build(tmp_path / "b", "--split", "val")
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    manifest = (tmp_path / "a" / "manifest.jsonl").read_text()
    assert manifest == (tmp_path / "b" / "manifest.jsonl").read_text()
    assert [json.loads(line)["type"] for line in manifest.splitlines()] == list(TYPES)
    info = json.loads((tmp_path / "a" / "benchmark.json").read_text())
    assert info["hold_removal"] == "excise" and info["params"]["kept_pause_s"] == [0.3, 2.0]
    # --equal-length in the test process (an interpreter start costs seconds of CPU)
    assert annotation_main(["build-crosscheck-pairs", str(tmp_path / "swb"), "--out", str(tmp_path / "eq"),
                            "--per-type", "1", "--seed", "2", "--split", "val", "--hold-removal", "excise",
                            "--equal-length"]) == 0
    assert json.loads((tmp_path / "eq" / "benchmark.json").read_text())["equal_length"] is True
    equal = read_pairs_manifest(tmp_path / "eq" / "manifest.jsonl")
    assert len(equal) >= 3
    for entry in equal:
        natural, perturbed = (json.loads(path.read_text())["duration"] for path in (entry.natural, entry.perturbed))
        assert perturbed == pytest.approx(natural)
    refused = build(tmp_path / "c", "--split", "test")
    assert refused.returncode == 2 and refused.stderr.strip().startswith("error: split list not found")
    assert len(refused.stderr.strip().splitlines()) == 1


def texts(conv: Conversation, k: int) -> list[str]:
    return [w.text for w in conv.words[k]]


@pytest.mark.parametrize("form,equal_length", [("excise", False), ("mute", False), ("excise", True)])
def test_words_travel_with_the_speech_and_the_removed_answer_loses_its_words(form, equal_length):
    pairs = build_crosscheck_pairs([block_conversation(16)], per_type=2, seed=4, form=form, equal_length=equal_length)
    assert {p.type for p in pairs} == set(TYPES)
    for p in pairs:
        for conv in (p.natural, p.perturbed):
            assert conv.words is not None
            for k in (0, 1):  # every word's middle lies in its speaker's speech
                for w in conv.words[k]:
                    assert any(s - 0.02 <= (w.start + w.end) / 2 <= e + 0.02 for s, e in conv.activity[k]), (p.type, w)
        if equal_length:
            continue  # an equal-length crop can take in or lose words at its ends
        if p.type == "hold_instead_of_shift":
            assert texts(p.perturbed, 1).count("answer") == texts(p.natural, 1).count("answer") - 1
            assert texts(p.perturbed, 0) == texts(p.natural, 0)
        elif p.type == "shift_instead_of_hold":
            assert texts(p.perturbed, 1).count("answer") == texts(p.natural, 1).count("answer") + 1
        elif p.type == "excessive_backchannel":
            listener = p.details["listener"]
            assert len(texts(p.perturbed, listener)) == len(texts(p.natural, listener)) + p.details["count"]
        elif p.type == "late_response":
            assert texts(p.perturbed, 0) == texts(p.natural, 0) and texts(p.perturbed, 1) == texts(p.natural, 1)
            moved = [b.start - a.start for k in (0, 1) for a, b in zip(p.natural.words[k], p.perturbed.words[k])]
            assert set(np.round(moved, 2)) <= {0.0, round(p.details["delay_s"], 2)} and max(moved) > 0
