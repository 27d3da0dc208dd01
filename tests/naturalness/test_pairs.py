"""Pairs: manifest parsing and the pair statistics on known dialogue NLLs."""

import json

import pytest

from annotation.register import register_benchmark
from naturalness.pairs import (
    PairEntry,
    PairResult,
    pairs_report,
    read_pairs_manifest,
    score_pairs,
)
from naturalness.turnnat_va import DialogueScore
from storage.db import init_db, make_engine, session_scope
from turntaking.pairs_manifest import ManifestError


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
    # No source given: pairs sharing a natural clip are one cluster (p1 and p3 share n1): 3
    # clusters, and the interval stays inside [0, 1].
    assert acc["interval"] == "95 % CI over 3 natural clips"
    low, high = acc["interval_95"]
    assert 0.0 <= low < 0.5 < high <= 1.0
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
    m.write_text(json.dumps({"pair_id": 7, "type": "t", "natural": "a.json", "perturbed": "b.json",
                             "source": "sw4321"}) + "\n")
    assert read_pairs_manifest(m)[0].source == "sw4321"


def _pairs_from_sources(tmp_path, sources: dict[str, list[float]]) -> list[PairResult]:
    """Pairs with given DeltaNLLs (natural NLL 0), cut from the named source conversations."""
    results = []
    for source, deltas in sources.items():
        for i, delta in enumerate(deltas):
            entry = PairEntry(f"{source}-{i}", "t", tmp_path / f"{source}-{i}-n", tmp_path / f"{source}-{i}-p", source)
            results.append(PairResult(entry, nll(0.0), nll(delta)))
    return results


def test_intervals_are_over_source_conversations(tmp_path):
    # Two conversations, 6 pairs each: all right in one, all wrong in the other. Over pairs the
    # accuracy 0.5 would look well measured; over the 2 conversations a resample holds one of
    # them twice (accuracy 0 or 1) or both (0.5): the interval spans [0, 1].
    report = pairs_report(_pairs_from_sources(tmp_path, {"sw1": [1.0] * 6, "sw2": [-1.0] * 6}))
    acc, c = report["pair_accuracy"], report["c_index"]
    assert (acc["value"], acc["sources"], acc["interval"]) == (0.5, 2, "95 % CI over 2 source conversations")
    assert acc["interval_95"] == [0.0, 1.0]
    # C-index over all 12 x 12 clips: perturbed NLLs {1 x 6, -1 x 6} vs natural {0 x 12}: 0.5.
    # A sample of sw1 twice has only concordant comparisons (1.0), of sw2 twice only discordant.
    assert c["value"] == 0.5 and c["interval_95"] == [0.0, 1.0]

    # One conversation: no interval, and the table says why.
    one = pairs_report(_pairs_from_sources(tmp_path, {"sw1": [1.0, -1.0, 2.0]}))
    assert one["pair_accuracy"]["interval_95"] is None and one["c_index"]["interval_95"] is None
    assert one["pair_accuracy"]["interval"] == "n/a: 1 source conversation"

    # Every pair right, from 4 conversations: every resample says 100 %; the interval is Wilson's
    # of 4 of 4 conversations instead, for accuracy and C-index alike.
    perfect = pairs_report(_pairs_from_sources(tmp_path, {f"sw{k}": [1.0, 2.0] for k in range(4)}))
    for stat in ("pair_accuracy", "c_index"):
        assert perfect[stat]["value"] == 1.0
        assert perfect[stat]["interval_95"] == [pytest.approx(0.510109, abs=1e-5), 1.0]


def test_interval_over_sources_is_wider_than_over_pairs_when_sources_differ(tmp_path):
    # 8 conversations of 10 pairs each, the share of right pairs differs by conversation.
    rates = [0.2, 0.9, 0.5, 1.0, 0.3, 0.8, 0.6, 0.4]
    clustered = {f"sw{k}": [1.0 if i < round(10 * r) else -1.0 for i in range(10)] for k, r in enumerate(rates)}
    results = _pairs_from_sources(tmp_path, clustered)
    by_source = pairs_report(results)["pair_accuracy"]
    unclustered = [PairResult(PairEntry(r.entry.pair_id, "t", r.entry.natural, r.entry.perturbed), r.natural,
                              r.perturbed) for r in results]  # no source: one natural clip a pair
    by_pair = pairs_report(unclustered)["pair_accuracy"]
    assert by_source["value"] == by_pair["value"] == pytest.approx(0.5875)
    width = lambda a: a["interval_95"][1] - a["interval_95"][0]  # noqa: E731
    assert width(by_source) > 1.3 * width(by_pair)
    assert 0.0 <= by_source["interval_95"][0] < 0.5875 < by_source["interval_95"][1] <= 1.0


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


@pytest.mark.parametrize("text", ['{"pair_id": 1, "type": "x", "natural": "a.json"}\n', "{oops\n", "\n"])
def test_the_annotation_side_refuses_a_manifest_with_the_judges_message(tmp_path, text):
    # One reader: registering a benchmark for people fails exactly as scoring it does.
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "manifest.jsonl").write_text(text)
    with pytest.raises(ManifestError) as judged:
        read_pairs_manifest(bench / "manifest.jsonl")
    engine = make_engine(f"sqlite:///{tmp_path / 'db.sqlite'}")
    init_db(engine)
    with session_scope(engine) as session, pytest.raises(ManifestError) as registered:
        register_benchmark(session, bench, "s", tmp_path / "data")
    assert str(registered.value) == str(judged.value)


def test_missing_manifest(tmp_path):
    with pytest.raises(ManifestError, match="manifest not found"):
        read_pairs_manifest(tmp_path / "none.jsonl")


def test_pair_result_delta_sign():
    r = PairResult(PairEntry("x", "t", None, None), nll(2.0), nll(2.5))
    assert r.delta_nll == pytest.approx(0.5)


# ---------------------------------------------------------------------------------------------
# `python -m naturalness pairs` end to end on voice-activity JSON clips

from tests.command_line import one_line_error, run_cli, run_cli_json, write_checkpoint  # noqa: E402
from tests.scripted import scripted_conversation  # noqa: E402
from turntaking.activity import Conversation, conversation_to_json  # noqa: E402


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return write_checkpoint(tmp_path_factory.mktemp("ckpt"))


def late_response(conv: Conversation, at: float, by: float) -> Conversation:
    """Everything from `at` on moved `by` seconds later (the clip grows by `by`)."""
    moved = tuple([(s + by, e + by) if s >= at else (s, e) for s, e in segs] for segs in conv.activity)
    return Conversation(conv.duration + by, moved)


def test_cli_pairs_end_to_end(checkpoint, tmp_path):
    clips = tmp_path / "clips"
    clips.mkdir()
    natural = scripted_conversation(with_words=False)
    sides = {
        "natural": natural,
        "late": late_response(natural, 8.6, 1.8),  # B answers 2.4 s after A stops
        "later": late_response(natural, 16.0, 1.5),
    }
    for name, conv in sides.items():
        (clips / f"{name}.json").write_text(json.dumps(conversation_to_json(conv)))
    manifest = tmp_path / "manifest.jsonl"
    manifest.write_text("".join(json.dumps(e) + "\n" for e in [
        {"pair_id": "a", "type": "late_response", "natural": "clips/natural.json", "perturbed": "clips/late.json"},
        {"pair_id": "b", "type": "late_response", "natural": "clips/natural.json", "perturbed": "clips/later.json"},
        {"pair_id": "c", "type": "identical", "natural": "clips/natural.json", "perturbed": "clips/natural.json"},
    ]))
    report = run_cli_json("naturalness", "pairs", manifest, "--scorer", "turnnat-va", "--checkpoint", checkpoint)
    nat = {r["recording"].rsplit("/", 1)[-1]: r["dialog_nll"]
           for r in run_cli_json("naturalness", "score", *(clips / f"{n}.json" for n in sides), "--scorer", "turnnat-va", "--checkpoint", checkpoint)["dialogues"]}
    deltas = [p["delta_nll"] for p in report["pair_scores"]]
    # pairs predicts the clips as one batch, naturalness one by one: equal up to float rounding
    assert deltas == [pytest.approx(nat["late.json"] - nat["natural.json"], abs=1e-6),
                      pytest.approx(nat["later.json"] - nat["natural.json"], abs=1e-6), 0.0]
    correct = sum(d > 0 for d in deltas[:2])
    assert report["pair_accuracy"]["correct"] == correct and report["pair_accuracy"]["n"] == 3
    assert report["per_type"]["identical"]["pair_accuracy"]["value"] == 0.0  # a tie is not a success
    # C-index: perturbed {late, later, natural} x natural {natural}: natural vs natural is the tie
    c = report["c_index"]
    assert c["ties"] == 1 and c["concordant"] == correct and c["discordant"] == 2 - correct
    assert set(report) >= {"pair_accuracy", "c_index", "per_type"}

    text = run_cli("naturalness", "pairs", manifest, "--scorer", "turnnat-va", "--checkpoint", checkpoint)
    assert text.returncode == 0 and "late_response" in text.stdout and "C-index" in text.stdout


def test_cli_pairs_bad_input(checkpoint, tmp_path):
    one_line_error(run_cli("naturalness", "pairs", tmp_path / "none.jsonl", "--scorer", "turnnat-va", "--checkpoint", checkpoint), "manifest not found")
    manifest = tmp_path / "m.jsonl"
    manifest.write_text('{"pair_id": "a", "type": "t", "natural": "x.json", "perturbed": "y.json"}\nnot json\n')
    one_line_error(run_cli("naturalness", "pairs", manifest, "--scorer", "turnnat-va", "--checkpoint", checkpoint), "m.jsonl:2", "not valid JSON")
    manifest.write_text('{"pair_id": "a", "type": "t", "natural": "x.json", "perturbed": "y.json"}\n')
    one_line_error(run_cli("naturalness", "pairs", manifest, "--scorer", "turnnat-va", "--checkpoint", checkpoint), "not found", "x.json")
