"""The third, blind perturbation generator (annotation/blind_pairs.py) on a
hand-built Switchboard conversation whose every event is known: each edit does what its type says,
the two forms differ only in the removed answer, and a bad corpus path gets one line."""

import json
from pathlib import Path

import pytest

from annotation import blind_pairs
from naturalness.pairs import read_pairs_manifest
from tests.scripted import block_utterances, write_ms98
from turntaking.activity import load_conversation_json

TYPES = ("late_response", "early_entry", "hold_instead_of_shift", "shift_instead_of_hold", "excessive_backchannel")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("swb")
    write_ms98(root, "6001", block_utterances(), 15.0 * 12)
    (root / "splits").mkdir()
    (root / "splits" / "val.txt").write_text("6001\n")
    return root


@pytest.fixture(scope="module")
def built(corpus, tmp_path_factory):
    """{form: manifest path}, both forms of one seed."""
    out = tmp_path_factory.mktemp("blind")
    manifests = {}
    for form in ("mute", "excise"):
        assert blind_pairs.main(["--swb", str(corpus), "--split", "val", "--per-type", "2", "--seed", "0",
                                 "--hold-removal", form, "--out", str(out / form)]) == 0
        manifests[form] = out / form / "manifest.jsonl"
    return manifests


def _lines(manifest: Path) -> dict[str, dict]:
    return {item["pair_id"]: item for item in map(json.loads, manifest.read_text().splitlines())}


def _speech(conv, k, t0, t1) -> float:
    return sum(max(0.0, min(e, t1) - max(s, t0)) for s, e in conv.activity[k])


def test_every_type_is_built_and_read_back_by_the_pairs_reader(built):
    for manifest in built.values():
        entries = read_pairs_manifest(manifest)
        assert sorted(e.type for e in entries) == sorted(TYPES * 2)
        assert {e.source for e in entries} == {"sw6001"}
        for entry in entries:
            for path in (entry.natural, entry.perturbed):
                conv = load_conversation_json(path)
                assert 15.0 <= conv.duration <= 30.0
                for k in (0, 1):  # no speaker overlaps themselves after an edit
                    segments = sorted(conv.activity[k])
                    assert all(b <= c + 1e-6 for (_, b), (c, _) in zip(segments, segments[1:]))


def test_the_forms_differ_only_in_the_removed_answer(built):
    mute, excise = _lines(built["mute"]), _lines(built["excise"])
    assert mute.keys() == excise.keys()
    folder = {"mute": built["mute"].parent, "excise": built["excise"].parent}
    for pair_id, item in mute.items():
        natural = [(folder[f] / lines[pair_id]["natural"]).read_text() for f, lines in (("mute", mute), ("excise", excise))]
        perturbed = [(folder[f] / lines[pair_id]["perturbed"]).read_text() for f, lines in (("mute", mute), ("excise", excise))]
        assert natural[0] == natural[1]
        assert (perturbed[0] == perturbed[1]) == (item["type"] != "hold_instead_of_shift")


@pytest.mark.parametrize("form", ["mute", "excise"])
def test_each_edit_moves_what_its_type_says(built, form):
    manifest = built[form]
    for item in _lines(manifest).values():
        natural = load_conversation_json(manifest.parent / item["natural"])
        perturbed = load_conversation_json(manifest.parent / item["perturbed"])
        change = perturbed.duration - natural.duration
        m = item["magnitude"]
        if item["type"] == "late_response":
            assert 1.2 <= m["delay_s"] <= 2.0 and change == pytest.approx(m["delay_s"], abs=1e-3)
        elif item["type"] == "early_entry":
            assert 1.2 <= -change <= 2.5
            overlap = sum(_speech(perturbed, 1, s, e) for s, e in perturbed.activity[0])
            assert overlap >= 0.5 + sum(_speech(natural, 1, s, e) for s, e in natural.activity[0]) - 1e-3
        elif item["type"] == "hold_instead_of_shift":
            # B's 3.2 s answer is gone: B speaks less by it in both forms
            assert sum(e - s for s, e in natural.activity[1]) - sum(e - s for s, e in perturbed.activity[1]) >= 3.2 - 1e-3
            if form == "mute":
                assert change == pytest.approx(0.0, abs=1e-3)
            else:  # the answer and its gaps (3.8 s) closed up to a pause of 0.1-2.0 s
                assert 0.1 <= m["pause_s"] <= 2.0 and change == pytest.approx(m["pause_s"] - 3.8, abs=1e-3)
        elif item["type"] == "shift_instead_of_hold":
            inserted = sum(e - s for s, e in perturbed.activity[1]) - sum(e - s for s, e in natural.activity[1])
            assert inserted == pytest.approx(m["inserted_turn_s"], abs=1e-3) and inserted >= 1.0
        else:  # 2-3 more backchannels of the listener, nothing moved
            assert change == pytest.approx(0.0, abs=1e-3)
            extra = len(perturbed.words[1]) - len(natural.words[1])
            assert 2 <= extra <= 3 and [w.text for w in perturbed.words[1]].count("yeah") >= extra


def test_the_same_seed_builds_the_same_pairs_and_a_bad_corpus_gets_one_line(corpus, built, tmp_path, capsys):
    assert blind_pairs.main(["--swb", str(corpus), "--split", "val", "--per-type", "2", "--seed", "0",
                             "--hold-removal", "excise", "--out", str(tmp_path / "again")]) == 0
    assert (tmp_path / "again" / "manifest.jsonl").read_text() == built["excise"].read_text()
    capsys.readouterr()
    assert blind_pairs.main(["--swb", str(tmp_path / "nowhere"), "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and len(err.splitlines()) == 1
