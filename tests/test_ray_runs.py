"""Corpus runs as Ray tasks (jobs/ray_runs.py): `analysis stats`, `naturalness score`, `judge metrics`
and `annotation build-pairs` with --run-dir equal their single-process results item for item,
resume without repeating work, and list a corrupt item with its one-line error while the others
finish. One local Ray (2 CPUs) is shared by the module: starting Ray costs seconds."""

from __future__ import annotations

import contextlib
import io
import json
import random
from pathlib import Path

import numpy as np
import pytest
import soundfile

from analysis.__main__ import main as analysis_main
from annotation.__main__ import main as annotation_main
from judge.__main__ import main as judge_main
from naturalness.__main__ import main as naturalness_main
from naturalness.reports import naturalness_report
from judge.reports import load_judge, metrics_report
from speech.pipeline import statistics_for_path
from jobs import ray_runs
from jobs.ray_runs import corpus_items, read_results, run_items
from tests.studies.conftest import espeak_16k
from turntaking.activity import Conversation, conversation_to_json

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def dialogue(seed: int, turns: int = 40) -> Conversation:
    """A two-speaker voice-activity dialogue: turns with gaps and overlaps, pauses, backchannels."""
    rng = random.Random(seed)
    activity, t, speaker = ([], []), 0.5, 0
    for _ in range(turns):
        for _ in range(rng.randint(1, 3)):  # IPUs of the turn, with pauses between
            end = t + rng.uniform(0.8, 3.0)
            activity[speaker].append((round(t, 2), round(end, 2)))
            if rng.random() < 0.3:  # the listener's backchannel
                bc = end - rng.uniform(0.6, 0.3)
                activity[1 - speaker].append((round(bc, 2), round(bc + 0.3, 2)))
            t = end + rng.uniform(0.25, 0.7)
        t = t - rng.uniform(0.25, 0.7) + rng.uniform(-0.4, 1.2)  # gap (or overlap) at the turn shift
        speaker = 1 - speaker
    activity = tuple(sorted(merge(segs)) for segs in activity)
    return Conversation(round(t + 1.0, 2), activity, None)


def merge(segments):
    out = []
    for s, e in sorted(segments):
        if out and s <= out[-1][1] + 0.05:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    for i in range(4):
        (root / f"dialogue{i}.json").write_text(json.dumps(conversation_to_json(dialogue(i))))
    return root


def run(main, *args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def test_stats_on_ray_equal_the_single_process_run_and_resume(corpus, tmp_path, monkeypatch):
    # one part file for the four results: no flush on the clock, however slow the machine
    monkeypatch.setattr(ray_runs, "FLUSH_SECONDS", 3600.0)
    code, out, err = run(analysis_main, "stats", corpus, "--run-dir", tmp_path / "run", "--workers", 2, "--json")
    assert code == 0, err
    first = json.loads(out)
    assert first["computed"] == 4 and first["skipped"] == 0 and first["failed"] == []
    assert list(first["results"]) == corpus_items(corpus, (".json",))
    for item, stats in first["results"].items():
        code, single, err = run(analysis_main, "stats", item, "--json")
        assert code == 0, err
        assert stats == json.loads(single)
    assert sorted(p.suffix for p in (tmp_path / "run" / "results").iterdir()) == [".parquet"]

    code, out, err = run(analysis_main, "stats", corpus, "--run-dir", tmp_path / "run", "--json")
    again = json.loads(out)
    assert code == 0 and again["computed"] == 0 and again["skipped"] == 4
    assert again["results"] == first["results"]


def test_stats_of_two_channel_recordings_on_ray_equal_the_single_process_run(tmp_path):
    """Audio through the Ray tasks: Silero voice activity of espeak-ng speech placed at known times."""
    folder = tmp_path / "recordings"
    folder.mkdir()
    first = _speech("Did you see the game last night", tmp_path / "a.wav")
    second = _speech("Yes it was a great match", tmp_path / "b.wav")
    for n, gap in enumerate((0.4, 1.2)):
        start = 0.5 + len(first) / 16000 + gap
        call = np.zeros((int((start + len(second) / 16000 + 0.5) * 16000), 2), dtype=np.float32)
        call[8000:8000 + len(first), 0] = first
        call[int(start * 16000):int(start * 16000) + len(second), 1] = second
        soundfile.write(str(folder / f"call{n}.wav"), call, 16000)
    code, out, err = run(analysis_main, "stats", folder, "--run-dir", tmp_path / "run", "--workers", 2, "--no-asr",
                         "--json")
    assert code == 0, err
    results = json.loads(out)["results"]
    assert list(results) == [str(folder / "call0.wav"), str(folder / "call1.wav")]
    for (item, stats), gap in zip(results.items(), (0.4, 1.2)):
        code, single, err = run(analysis_main, "stats", item, "--no-asr", "--json")
        assert code == 0 and stats == json.loads(single)
        assert stats["speakers"] and stats["events"]["gap"][0]["end"] - stats["events"]["gap"][0]["start"] == \
            pytest.approx(gap, abs=0.25)
    code, out, err = run(analysis_main, "stats", folder, "--run-dir", tmp_path / "run", "--no-asr", "--json")
    assert code == 0 and json.loads(out)["computed"] == 0 and json.loads(out)["results"] == results


def _speech(text: str, path: Path):
    samples = espeak_16k(text, path)
    loud = np.flatnonzero(np.abs(samples) > 0.01)
    return samples[loud[0]:loud[-1] + 1]


def test_a_corrupt_item_is_listed_with_its_one_line_error_and_the_others_finish(corpus, tmp_path):
    broken = tmp_path / "corpus"
    broken.mkdir()
    for path in corpus.iterdir():
        (broken / path.name).write_bytes(path.read_bytes())
    (broken / "corrupt.json").write_text('{"duration": 10, "vad": [[[0, 1]]')
    code, out, err = run(analysis_main, "stats", broken, "--run-dir", tmp_path / "run", "--workers", 2, "--json")
    assert code == 1
    report = json.loads(out)
    assert report["computed"] == 4 and len(report["results"]) == 4
    [failure] = report["failed"]
    assert failure["item"] == str(broken / "corrupt.json")
    assert failure["error"].startswith("InputError: ") and "not valid JSON" in failure["error"]
    assert "\n" not in failure["error"] and f"failed: {broken / 'corrupt.json'}: InputError" in err
    listed = [json.loads(line) for line in (tmp_path / "run" / "failures.jsonl").read_text().splitlines()]
    assert listed == [failure]


def test_naturalness_on_ray_equals_the_single_process_report_item_for_item(corpus, tmp_path):
    manifest = tmp_path / "recordings.txt"
    manifest.write_text("".join(f"{p}\n" for p in corpus_items(corpus, (".json",))))
    code, out, err = run(naturalness_main, "score", manifest, "--run-dir", tmp_path / "run", "--json")
    assert code == 0, err
    ray_report = json.loads(out)
    single = json.loads(json.dumps(naturalness_report(corpus_items(corpus, (".json",))), default=float))
    assert ray_report["dialogues"] == single["dialogues"] and len(single["dialogues"]) == 4
    assert {k: ray_report[k] for k in single} == single

    code, out, err = run(naturalness_main, "score", manifest, "--run-dir", tmp_path / "run", "--json")
    assert code == 0 and json.loads(out)["computed"] == 0 and json.loads(out)["dialogues"] == single["dialogues"]
    # Other parameters are other work: the timing-free baseline scorer computes every item again.
    code, out, err = run(naturalness_main, "score", manifest, "--scorer", "durations", "--run-dir",
                         tmp_path / "run", "--json")
    assert code == 0 and json.loads(out)["computed"] == 4


def test_metrics_on_ray_equal_the_single_process_report(corpus, tmp_path):
    code, out, err = run(judge_main, "metrics", corpus, "--system-channel", 1, "--run-dir", tmp_path / "run",
                         "--workers", 2, "--json")
    assert code == 0, err
    ray_report = json.loads(out)
    model, thresholds = load_judge()
    recordings = corpus_items(corpus, (".json",))
    single = json.loads(json.dumps(metrics_report(recordings, 1, model, thresholds), default=float))
    assert {k: ray_report[k] for k in single} == single and single["sessions"] == 4


def test_build_pairs_on_ray_writes_the_single_process_benchmark(corpus, tmp_path):
    common = ["--per-type", 2, "--seed", 3]
    code, _, err = run(annotation_main, "build-pairs", corpus, "--out", tmp_path / "single", *common)
    assert code == 0, err
    code, out, err = run(annotation_main, "build-pairs", corpus, "--out", tmp_path / "ray", *common,
                         "--run-dir", tmp_path / "run", "--workers", 2)
    assert code == 0, err
    assert "4 computed, 0 already done, 0 failed" in err
    files = sorted(p.relative_to(tmp_path / "single") for p in (tmp_path / "single").rglob("*") if p.is_file())
    assert len([f for f in files if f.parts[0] == "clips"]) >= 4
    for name in files:
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "single" / name).read_bytes(), name
    code, _, err = run(annotation_main, "build-pairs", corpus, "--out", tmp_path / "ray", *common,
                       "--run-dir", tmp_path / "run")
    assert code == 0 and "0 computed, 4 already done, 0 failed" in err


def test_the_helper_computes_each_content_once(corpus, tmp_path):
    from analysis.corpus_run import stats_item

    twin = tmp_path / "twin.json"
    twin.write_bytes((corpus / "dialogue0.json").read_bytes())
    items = [str(corpus / "dialogue0.json"), str(twin)]
    params = {"vad": None, "events": {}, "transcribe": False, "no_events": True}
    summary = run_items(items, stats_item, params, tmp_path / "run", workers=1, progress=False)
    assert (summary.computed, summary.skipped) == (1, 1)
    rows = read_results(tmp_path / "run", summary.keys)
    assert rows[items[0]] == rows[items[1]] == {
        k: v for k, v in statistics_for_path(items[0]).items() if k != "events"}


@pytest.mark.parametrize("main, args", [
    (analysis_main, ["stats", "x.json", "--workers", "2"]),
    (naturalness_main, ["score", "x.json", "--ray-address", "auto"]),
    (annotation_main, ["build-pairs", "x", "--out", "y", "--workers", "2"]),
])
def test_ray_options_without_a_run_dir_are_one_line_errors(main, args):
    code, out, err = run(main, *args)
    assert code == 2 and err == "error: --workers and --ray-address go with --run-dir DIR\n"
