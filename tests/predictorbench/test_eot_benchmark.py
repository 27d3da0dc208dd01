"""eot-bench end to end on a small dataset in eot-bench-data's exact schema, made of espeak-ng
speech with known pauses: data loading (Parquet bytes, a saved `datasets` dataset with decoded
arrays), the span set, causal inputs, the VAD and cascade predictors, run folders, metrics, report."""

import io
import json
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from predictorbench.eot.data import EotDataError, EotRow, load_rows, row_from_record
from predictorbench.eot.predictors import (
    CascadeEndpointAdapter,
    JudgeTurnChangeAdapter,
    PredictorError,
    SmartTurnAdapter,
    VadBaselineAdapter,
    adapter_name,
    predict_batch_rows,
    predict_streaming_rows,
)
from predictorbench.eot.runs import RunError, predict
from predictorbench.eot.spans import (
    causal_item,
    causal_messages,
    grid_points,
    row_spans,
    span_grid,
)
from tests.predictorbench.speech_fixtures import SR, place, wav_bytes

# (turn id, parts): leading silence, then (text, silence after). Hold pauses 0.25 / 0.45 / 0.7 /
# 1.2 s; every turn ends with 1.5 s of silence (its eot span). t4 also has a 60 ms gap (< 100 ms).
TURNS = {
    "t1": [0.3, ("I would like to book a table", 0.7), ("for two people tonight", 1.5)],
    "t2": [0.3, ("Can you tell me", 0.25), ("the weather in Paris", 1.2), ("please", 1.5)],
    "t3": [0.3, ("Yes", 1.5)],
    "t4": [0.3, ("My number is", 0.06), ("five", 0.45), ("five five", 1.5)],
}
HOLDS = [0.7, 0.25, 1.2, 0.45]


def record(tid, parts, encoded=True):
    audio, segs = place(parts)
    spans = [{"start": a[1], "end": b[0]} for a, b in zip(segs, segs[1:])]
    spans.append({"start": segs[-1][1], "end": len(audio) / SR})
    words = [{"word": f"w{k}", "start": s, "end": e} for k, (s, e) in enumerate(segs)]
    value = {"bytes": wav_bytes(audio), "path": None} if encoded else {"array": audio.tolist(), "sampling_rate": SR}
    return {"id": tid, "language": "en", "audio": value, "silence_spans": spans, "words": words,
            "messages": [{"role": "assistant", "content": "How can I help?"}]}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("eot")
    data = root / "eot-bench-data" / "all"
    data.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([record(t, p) for t, p in TURNS.items()]),
                   data / "validation-00000-of-00001.parquet")
    return root


@pytest.fixture(scope="module")
def rows(dataset):
    return load_rows(dataset / "eot-bench-data", split="validation")


def test_rows_spans_and_causal_inputs(rows, tmp_path):
    assert [r.id for r in rows] == list(TURNS) and all(r.language == "en" for r in rows)
    t4 = rows[3]
    spans = row_spans(t4)
    # the 60 ms gap is skipped but keeps its index; the final span is the eot
    assert [(s.span_index, s.label) for s in spans] == [(1, "hold"), (2, "eot")]
    assert spans[0].duration == pytest.approx(0.45, abs=1e-4) and spans[1].duration == pytest.approx(1.5, abs=1e-4)
    assert list(span_grid(spans[0])) == [0.1, 0.2, 0.3, 0.4]
    assert len(span_grid(spans[1])) == 15
    # words: only those ending by t - 0.5 s are in the current-turn message
    first_end = t4.words[0]["end"]
    assert causal_messages(t4, first_end + 0.49) == [{"role": "assistant", "content": "How can I help?"}]
    assert causal_messages(t4, first_end + 0.5)[-1] == {"role": "user", "content": "w0"}
    item = causal_item(t4, 1.25)
    assert len(item["audio"]) == 20000 and np.array_equal(item["audio"], t4.audio[:20000])

    # the same rows from a `datasets` dataset saved to disk with decoded arrays
    import datasets

    ds = datasets.Dataset.from_list([record(t, p, encoded=False) for t, p in list(TURNS.items())[:2]])
    ds.save_to_disk(str(tmp_path / "saved"))
    again = load_rows(tmp_path / "saved")
    assert [r.id for r in again] == ["t1", "t2"]
    assert np.allclose(again[0].audio, rows[0].audio, atol=1e-4)  # 16-bit WAV vs float array
    assert again[1].silence_spans == rows[1].silence_spans
    # ... and as the Hub ships it: an Audio feature (read with decode=False, decoded by soundfile)
    # inside a DatasetDict, one split chosen
    hub = datasets.Dataset.from_list([record("t3", TURNS["t3"])]).cast_column("audio", datasets.Audio(sampling_rate=SR))
    datasets.DatasetDict({"validation": hub}).save_to_disk(str(tmp_path / "hub"))
    (t3,) = load_rows(tmp_path / "hub", split="validation")
    assert np.array_equal(t3.audio, rows[2].audio) and t3.silence_spans == rows[2].silence_spans
    with pytest.raises(EotDataError, match="no split 'test' \\(has validation\\)"):
        load_rows(tmp_path / "hub", split="test")


def test_schema_errors_are_one_line(tmp_path):
    good = record("t3", TURNS["t3"])
    with pytest.raises(EotDataError, match="missing required field.*language"):
        row_from_record({k: v for k, v in good.items() if k != "language"})
    with pytest.raises(EotDataError, match=r"silence_spans\[0\] ends before it starts"):
        row_from_record({**good, "silence_spans": [{"start": 2.0, "end": 1.0}]})
    with pytest.raises(EotDataError, match="cannot decode audio"):
        row_from_record({**good, "audio": {"bytes": b"not audio"}})
    with pytest.raises(EotDataError, match="cannot load livekit/eot-bench-data from the Hugging Face Hub"):
        load_rows("livekit/eot-bench-data", split="validation")  # a Hub id: no network here (HF_HUB_OFFLINE)
    with pytest.raises(EotDataError, match="no Parquet files of split 'test'"):
        (tmp_path / "d").mkdir()
        pq.write_table(pa.Table.from_pylist([good]), tmp_path / "d" / "validation-0.parquet")
        load_rows(tmp_path / "d", split="test")


def spans_of(preds):
    return {k: g.sort_values("silence_dur") for k, g in pd.DataFrame(preds).groupby(["id", "span_index"])}


def test_vad_baseline_scores_silence_only(rows):
    adapter = VadBaselineAdapter()
    preds, skipped = predict_streaming_rows(adapter, rows)
    assert not skipped
    by_span = spans_of(preds)
    for (rid, idx), g in by_span.items():
        p = g.p_eot.to_numpy()
        assert np.all(np.diff(p) >= 0), (rid, idx)  # silence only grows inside a pause
        # p = trailing silence / 3 s; Silero notices the end of speech within ~100 ms
        assert np.all(np.abs(p * 3 - g.silence_dur.to_numpy()) < 0.12), (rid, idx, p)
    # the batch contract gives the same scores from causal audio prefixes
    t3 = [r for r in rows if r.id == "t3"]
    batch = predict_batch_rows(adapter, t3, batch_size=4)
    stream, _ = predict_streaming_rows(adapter, t3)
    assert [r["p_eot"] for r in batch] == pytest.approx([r["p_eot"] for r in stream], abs=1e-6)


def test_cascade_endpointing_rule_on_frames():
    # 32 ms frames: 10 silent, then speech, then silence. With 16 speech frames (512 ms >= 500 ms)
    # the utterance ends once 8 silent frames (256 ms >= 250 ms) have passed: frame 26 + 8 - 1.
    cascade = CascadeEndpointAdapter()
    probs = np.array([0.0] * 10 + [0.9] * 16 + [0.0] * 20)
    ended = cascade.track(probs)
    assert not ended[:33].any() and ended[33:].all()
    assert cascade.score(ended, 34 * 0.032) == 1.0 and cascade.score(ended, 33 * 0.032) == 0.0
    # 15 speech frames (480 ms) are too short to count as an utterance: it never ends
    assert not cascade.track(np.array([0.0] * 10 + [0.9] * 15 + [0.0] * 20)).any()
    # probabilities between 0.15 and 0.3 keep the speech going (hysteresis)
    assert not cascade.track(np.array([0.9] * 20 + [0.2] * 20)).any()


def test_cascade_endpointing_on_speech(rows):
    preds, _ = predict_streaming_rows(CascadeEndpointAdapter(), rows)
    spans = {r.id: r.silence_spans for r in rows}
    checked = 0
    for (rid, idx), g in spans_of(preds).items():
        assert set(g.p_eot) <= {0.0, 1.0}
        fired = g.silence_dur[g.p_eot == 1.0]
        if not fired.empty:
            assert (g.p_eot[g.silence_dur >= fired.min()] == 1.0).all()
        # speech since the last pause of >= 250 ms (or since 0.3 s)
        speech = spans[rid][idx][0] - max([e for s, e in spans[rid][:idx] if e - s >= 0.25], default=0.3)
        if speech >= 0.7 and g.silence_dur.max() >= 0.4:
            # 250 ms of silence after the VAD (threshold 0.3) lets go, on the 0.1 s grid
            assert fired.min() in (0.3, 0.4), (rid, idx, list(g.p_eot))
            checked += 1
        if g.silence_dur.max() < 0.3:  # the 0.25 s pause is over before 250 ms + the VAD's lag
            assert fired.empty
    assert checked == 5


def test_judge_adapter_is_causal(rows, tmp_path):
    import torch

    from judge.model import JudgeModel, save_checkpoint

    torch.manual_seed(0)
    ckpt = tmp_path / "judge.pt"
    save_checkpoint(JudgeModel(), ckpt)  # an untrained judge: only the causal plumbing is tested
    adapter = JudgeTurnChangeAdapter(ckpt)
    row = rows[0]
    preds, _ = predict_streaming_rows(adapter, [row])
    assert all(0.0 <= r["p_eot"] <= 1.0 for r in preds)
    # replacing everything after the first hold span's end changes none of its scores
    hold_end = row.silence_spans[0][1]
    noisy = EotRow(row.id, row.language, row.audio.copy(), row.silence_spans, row.words, row.messages)
    noisy.audio[int(hold_end * SR):] = np.random.default_rng(0).normal(0, 0.3, len(noisy.audio) - int(hold_end * SR))
    again, _ = predict_streaming_rows(adapter, [noisy])
    first = [r["p_eot"] for r in preds if r["span_index"] == 0]
    assert first == pytest.approx([r["p_eot"] for r in again if r["span_index"] == 0], abs=1e-6)


def test_smart_turn_without_its_file_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("SMART_TURN_ONNX", str(tmp_path / "missing.onnx"))
    with pytest.raises(PredictorError, match="pipecat-ai"):
        SmartTurnAdapter()
    assert adapter_name(VadBaselineAdapter()) == "vad_baseline_adapter"


def cli(*args):
    """The CLI in this process (same parser and handlers as `python -m predictorbench eot ...`)."""
    from predictorbench.__main__ import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["eot", *args])
    return SimpleNamespace(returncode=code, stdout=out.getvalue(), stderr=err.getvalue())


def test_cli_predict_metrics_compare(dataset, tmp_path):
    out = tmp_path / "output"
    for adapter in ("vad", "cascade"):
        args = ["predict", "--path", str(dataset / "eot-bench-data"), "--split", "validation", "--adapter", adapter,
                "--output-dir", str(out)]
        if adapter == "vad":  # once through the real entry point
            r = subprocess.run([sys.executable, "-m", "predictorbench", "eot", *args], capture_output=True, text=True)
        else:
            r = cli(*args)
        assert r.returncode == 0, r.stderr
    lang = out / "eot-bench-data__validation__min_silence_100ms" / "en"
    spans = pd.read_parquet(lang / "span_set.parquet")
    assert sorted(spans.loc[spans.label == "hold", "duration"].round(3)) == sorted(HOLDS)
    assert (spans.label == "eot").sum() == 4
    runs = sorted(p for p in lang.iterdir() if p.name.startswith(("vad_", "cascade_")))
    assert [p.name.split("__")[0] for p in runs] == ["cascade_endpoint_adapter", "vad_baseline_adapter"]
    manifest = json.loads((runs[1] / "manifest.json").read_text())
    assert runs[1].name.endswith(manifest["options_hash"]) and manifest["mode"] == "streaming"
    preds = pd.read_parquet(runs[1] / "predictions.parquet")
    assert list(preds.columns) == ["id", "language", "span_index", "timestamp", "silence_dur", "p_eot", "label"]

    r = cli("metrics", "--predictions", str(runs[1] / "predictions.parquet"), "--json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert {"cutoff_at_300ms", "cutoff_at_600ms", "latency_at_5pct", "latency_at_10pct", "pareto"} <= set(summary)
    # Hold pauses 0.25 / 0.45 / 0.7 / 1.2 s: answering within 0.3 s cuts off the three pauses
    # longer than that, within 0.6 s the two longer than 0.6 s; no cutoff needs > 1.2 s of waiting.
    vad = summary["vad_baseline"]
    assert (vad["cutoff_at_300ms"], vad["cutoff_at_600ms"]) == (0.75, 0.5)
    assert vad["latency_at_5pct"] == pytest.approx(1.21)
    # the silence-only predictor knows what the VAD baseline knows, on a 0.1 s grid
    assert (summary["cutoff_at_300ms"], summary["cutoff_at_600ms"]) == (0.75, 0.5)
    # (Silero's lag after speech differs a little between words: one eot span may fire at 1.2 s)
    assert 1.2 <= summary["latency_at_5pct"] <= 1.3 + 1e-9
    assert cli("metrics", "--predictions", str(runs[0] / "predictions.parquet")).returncode == 0

    r = cli("compare", str(lang))
    assert r.returncode == 0, r.stderr
    report = (lang / "comparison" / "report.md").read_text()
    assert "| Silero silence predictor |" in report and "| VAD baseline | **75.0%** | **50.0%** |" in report
    for name in ("pareto_frontier.html", "cutoff_rate_at_latency_budget_300_600ms.html",
                 "latency_at_cutoff_budget_5_10pct.html", "plotly.min.js"):
        assert (lang / "comparison" / name).is_file()

    r = cli("predict", "--path", str(dataset / "eot-bench-data"), "--split", "validation", "--adapter", "vad",
            "--output-dir", str(out))
    assert r.returncode == 0 and "exists, kept" in r.stderr
    r = cli("metrics", "--predictions", str(tmp_path / "nope.parquet"))
    assert r.returncode == 2 and r.stderr.startswith("error: predictions file not found") and r.stderr.count("\n") == 1
    r = cli("predict", "--path", str(dataset / "eot-bench-data"), "--adapter", "nosuch", "--output-dir", str(out))
    assert r.returncode == 2 and "unknown adapter 'nosuch'" in r.stderr


class HalfStreaming:
    """A user's streaming adapter (async, as eot-bench allows): p_eot 0.5 everywhere, no language."""

    adapter_id = "half"

    async def predict_turn(self, row, *, inference_interval):
        rows = [{"id": s.id, "span_index": s.span_index, "timestamp": t, "silence_dur": d, "p_eot": 0.5,
                 "label": s.label} for s, d, t in grid_points(row, inference_interval=inference_interval)]
        if self.drop_one and row.id == "t3":
            rows = []  # forgets the only span of t3
        return {"id": row.id, "audio_sec": row.duration, "events": [], "prediction_rows": rows}

    drop_one = False


class DropsOne(HalfStreaming):
    drop_one = True


class WrongCount:
    adapter_id = "wrong"
    score_point = 0.2

    def predict_batch(self, batch):
        return [0.0]


def test_user_adapters_by_reference(dataset, tmp_path):
    path = dataset / "eot-bench-data"
    (run,) = predict(path, "tests.predictorbench.test_eot_benchmark:HalfStreaming", tmp_path, split="validation")
    preds = pd.read_parquet(run / "predictions.parquet")
    assert set(preds.language) == {"en"} and set(preds.p_eot) == {0.5}
    assert run.name.startswith("half_streaming__")
    with pytest.raises(RunError, match="1 spans missing"):
        predict(path, "tests.predictorbench.test_eot_benchmark:DropsOne", tmp_path, split="validation")
    with pytest.raises(PredictorError, match="returned 1 scores for 4 inputs"):
        predict(path, "tests.predictorbench.test_eot_benchmark.WrongCount", tmp_path, split="validation", batch_size=4)
