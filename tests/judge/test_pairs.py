"""Pairs: manifest parsing and the pair statistics on known dialogue NLLs."""

import json

import pytest

from judge.naturalness import DialogueScore
from judge.pairs import ManifestError, PairEntry, PairResult, pairs_report, read_pairs_manifest, score_pairs


def nll(value: float) -> DialogueScore:
    return DialogueScore(value, value, value, 3)


def test_pair_statistics_exact(tmp_path):
    n1, n2, n4 = tmp_path / "n1.json", tmp_path / "n2.json", tmp_path / "n4.json"
    dialog = {n1: 1.0, n2: 1.5, n4: 0.5, tmp_path / "p1.json": 2.0, tmp_path / "p2.json": 1.2,
              tmp_path / "p3.json": 1.0, tmp_path / "p4.json": 3.0}
    entries = [
        PairEntry("p1", "A", n1, tmp_path / "p1.json"),  # +1.0: correct
        PairEntry("p2", "A", n2, tmp_path / "p2.json"),  # -0.3: wrong
        PairEntry("p3", "B", n1, tmp_path / "p3.json"),  # 0.0: a tie is not correct
        PairEntry("p4", "B", n4, tmp_path / "p4.json"),  # +2.5: correct
    ]
    scored = []
    results = score_pairs(entries, lambda p: scored.append(p) or nll(dialog[p]))
    assert len(scored) == 7  # n1 is shared by two pairs and scored once
    assert [r.delta_nll for r in results] == pytest.approx([1.0, -0.3, 0.0, 2.5])

    report = pairs_report(results)
    acc = report["pair_accuracy"]
    assert (acc["correct"], acc["n"], acc["value"]) == (2, 4, 0.5)
    assert acc["wilson_95"] == [pytest.approx(0.150039, abs=1e-5), pytest.approx(0.849961, abs=1e-5)]
    # perturbed {2.0, 1.2, 1.0, 3.0} x natural {1.0, 1.5, 0.5}: 9 concordant, 2 discordant, 1 tie
    c = report["c_index"]
    assert (c["concordant"], c["discordant"], c["ties"]) == (9, 2, 1)
    assert c["value"] == pytest.approx(9 / 11)
    assert report["per_type"]["A"]["pair_accuracy"]["value"] == 0.5
    assert report["per_type"]["A"]["c_index"]["value"] == pytest.approx(0.75)
    assert report["per_type"]["B"]["c_index"]["value"] == 1.0  # 3 concordant, 1 tie
    assert report["per_type"]["B"]["c_index"]["ties"] == 1
    assert report["mean_delta_nll"] == pytest.approx(0.8)


def test_manifest_paths_relative_to_manifest(tmp_path):
    sub = tmp_path / "bench"
    sub.mkdir()
    m = sub / "manifest.jsonl"
    m.write_text(json.dumps({"pair_id": 7, "type": "late_response", "natural": "clips/a.json",
                             "perturbed": "clips/b.wav", "extra": 1}) + "\n\n")
    [e] = read_pairs_manifest(m)
    assert e == PairEntry("7", "late_response", sub / "clips/a.json", sub / "clips/b.wav")


@pytest.mark.parametrize("text, message", [
    ('{"pair_id": 1, "type": "x", "natural": "a.json"}\n', r"m.jsonl:1: missing perturbed"),
    ('{"pair_id": 1, "type": "x", "natural": "a.json", "perturbed": "b.json"}\n{oops\n', r"m.jsonl:2: not valid JSON"),
    ('["a.json", "b.json"]\n', r"m.jsonl:1: expected a JSON object"),
    ('{"pair_id": 1, "type": "x", "natural": "", "perturbed": "b.json"}\n', r"must be file paths"),
    ("\n", r"no pairs"),
])
def test_malformed_manifest(tmp_path, text, message):
    m = tmp_path / "m.jsonl"
    m.write_text(text)
    with pytest.raises(ManifestError, match=message):
        read_pairs_manifest(m)


def test_missing_manifest(tmp_path):
    with pytest.raises(ManifestError, match="manifest not found"):
        read_pairs_manifest(tmp_path / "none.jsonl")


def test_pair_result_delta_sign():
    r = PairResult(PairEntry("x", "t", None, None), nll(2.0), nll(2.5))
    assert r.delta_nll == pytest.approx(0.5)
