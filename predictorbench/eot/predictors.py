"""End-of-turn predictors behind eot-bench's two adapter contracts, and the loops that run them.

Batch adapter (pointwise):   adapter_id, score_point, predict_batch(items) -> [p_eot]
    each item: {"audio": causal 16 kHz prefix, "sample_rate", "messages", "language"}
Streaming adapter (per turn): adapter_id, predict_turn(row, *, inference_interval) -> dict with
    "id", "audio_sec", "events", "prediction_rows" (id, span_index, timestamp, silence_dur, p_eot,
    label); may be `async def`. `supports_language(code)` is optional on both.

Adapters here (all causal: a score at time t depends on audio before t only):
  VadBaselineAdapter      silence only: p_eot = trailing silence / horizon_s (capped at 1), from
                          Silero VAD frames (threshold 0.5, hysteresis 0.35) that end by t.
  CascadeEndpointAdapter  the cascaded system's endpointing (huggingface speech-to-speech as used
                          in the Talking Turns study): Silero threshold 0.3, an utterance ends
                          after 250 ms of silence following >= 500 ms of speech; p_eot is 1.0
                          once it has ended, else 0.0 (binary, like provider endpoint events).
  JudgeTurnChangeAdapter  the turn-taking judge on the user's voice-activity track (the agent
                          channel silent): p_eot = p(T) / (p(T) + p(C)) for the 40 ms chunk that
                          starts at t, i.e. "if someone speaks next, it is the other speaker".
  SmartTurnAdapter        Smart Turn v3.2 ONNX (pipecat-ai; speech.smart_turn), when its file is
                          installed: the last 8 s of audio (left-padded with zeros) as Whisper features.
Silero frame probabilities are causal (recurrent, frame by frame), so the streaming adapters run
Silero once per turn and read each timestamp's prefix; their `predict_batch` runs Silero on each
prefix and gives the same scores.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import re
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from predictorbench.eot.data import SAMPLE_RATE, EotRow
from predictorbench.eot.spans import (
    INFERENCE_INTERVAL,
    MIN_SILENCE_SPAN,
    TRANSCRIPT_LAG,
    causal_item,
    grid_points,
    row_spans,
)
from judge.labels import CHUNK_S
from speech.models import ModelError
from speech.silero import channel_probabilities
from speech.smart_turn import SmartTurn
from storage.files import sha256_file
from turntaking.activity import Conversation
from turntaking.segment import Segment

FRAME = 512  # Silero frame, 32 ms at 16 kHz
FRAME_S = FRAME / SAMPLE_RATE
PREDICTION_COLUMNS = ("id", "language", "span_index", "timestamp", "silence_dur", "p_eot", "label")


class PredictorError(ValueError):
    """A predictor that cannot be built or run (missing model file, unknown adapter, bad output)."""


# ---------------------------------------------------------------------------------------------
# Silero frames


def silero_frame_probs(audio: np.ndarray) -> np.ndarray:
    """Speech probability of every complete 32 ms frame of a mono 16 kHz signal."""

    n = len(audio) // FRAME
    if n == 0:
        return np.zeros(0, dtype=np.float32)
    return channel_probabilities(np.asarray(audio[: n * FRAME], dtype=np.float32))


def speech_frames(probs: np.ndarray, threshold: float, neg_threshold: float) -> np.ndarray:
    """Bool per frame: speech starts at p >= threshold and lasts until p < neg_threshold."""
    out = np.zeros(len(probs), dtype=bool)
    speaking = False
    for i, p in enumerate(probs.tolist()):
        speaking = p >= threshold or (speaking and p >= neg_threshold)
        out[i] = speaking
    return out


def frames_before(timestamp: float) -> int:
    """Number of frames that end by `timestamp`."""
    return int(np.floor(timestamp / FRAME_S + 1e-9))


def trailing_silence(speech: np.ndarray, timestamp: float) -> float:
    """Seconds since the end of the last speech frame among the frames that end by `timestamp`."""
    n = min(frames_before(timestamp), len(speech))
    hits = np.flatnonzero(speech[:n])
    return timestamp if len(hits) == 0 else max(0.0, timestamp - (hits[-1] + 1) * FRAME_S)


def speech_segments(speech: np.ndarray) -> list[Segment]:
    padded = np.concatenate([[False], speech, [False]]).astype(np.int8)
    edges = np.flatnonzero(np.diff(padded))
    return [Segment(a * FRAME_S, b * FRAME_S) for a, b in zip(edges[0::2], edges[1::2])]


# ---------------------------------------------------------------------------------------------
# adapters


def _turn_result(row: EotRow, rows: list[dict]) -> dict:
    return {"id": row.id, "audio_sec": row.duration, "events": [], "prediction_rows": rows}


class _SileroStreaming:
    """Streaming on top of a per-frame causal track: `track(probs)` -> `score(track, t)`."""

    adapter_id = "silero"
    score_point = None
    concurrency = 1

    def supports_language(self, lang_code: str) -> bool:
        return True  # acoustic only

    def options(self) -> dict:
        return {}

    def track(self, probs):
        raise NotImplementedError

    def score(self, track, timestamp: float) -> float:
        raise NotImplementedError

    def predict_turn(self, row: EotRow, *, inference_interval: float = INFERENCE_INTERVAL,
                     min_silence_span: float = MIN_SILENCE_SPAN) -> dict:
        track = self.track(silero_frame_probs(row.audio))
        rows = [prediction_row(span, dur, t, self.score(track, t))
                for span, dur, t in grid_points(row, min_silence_span, inference_interval)]
        return _turn_result(row, rows)

    def predict_batch(self, batch: list[dict]) -> list[float]:
        out = []
        for item in batch:
            t = len(item["audio"]) / item.get("sample_rate", SAMPLE_RATE)
            out.append(self.score(self.track(silero_frame_probs(item["audio"])), t))
        return out


@dataclass
class VadBaselineAdapter(_SileroStreaming):
    threshold: float = 0.5
    neg_threshold: float = 0.35
    horizon_s: float = 3.0  # p_eot reaches 1 after this much silence

    adapter_id = "vad-baseline"
    display_name = "Silero silence predictor"

    def options(self) -> dict:
        return asdict(self)

    def track(self, probs):
        return speech_frames(probs, self.threshold, self.neg_threshold)

    def score(self, track, timestamp: float) -> float:
        return float(min(1.0, trailing_silence(track, timestamp) / self.horizon_s))


@dataclass
class CascadeEndpointAdapter(_SileroStreaming):
    threshold: float = 0.3
    neg_threshold: float = 0.15  # silero's default: threshold - 0.15
    min_silence_ms: float = 250.0
    min_speech_ms: float = 500.0

    adapter_id = "cascade-endpointing"
    display_name = "Cascade endpointing (Silero 0.3, 250 ms)"

    def options(self) -> dict:
        return asdict(self)

    def track(self, probs):
        """Bool per frame: an utterance has ended by the end of this frame and no speech since."""
        ended = np.zeros(len(probs), dtype=bool)
        speech_start = silence_start = None
        done = False
        for i, p in enumerate(probs.tolist()):
            if p >= self.threshold:
                silence_start = None
                done = False
                if speech_start is None:
                    speech_start = i
            elif speech_start is not None and p < self.neg_threshold:
                if silence_start is None:
                    silence_start = i
                if (i + 1 - silence_start) * FRAME_S * 1000 >= self.min_silence_ms - 1e-6:
                    done = (silence_start - speech_start) * FRAME_S * 1000 >= self.min_speech_ms
                    speech_start = silence_start = None
            ended[i] = done
        return ended

    def score(self, track, timestamp: float) -> float:
        n = min(frames_before(timestamp), len(track))
        return float(track[n - 1]) if n > 0 else 0.0


class JudgeTurnChangeAdapter:
    adapter_id = "judge-turn-change"
    display_name = "Turn-taking judge p(T)/(p(T)+p(C))"
    score_point = None
    concurrency = 1

    def __init__(self, checkpoint=None, threshold: float = 0.5, neg_threshold: float = 0.35):
        from judge.model import (
            DEFAULT_CHECKPOINT,
            load_checkpoint,
            packaged_checkpoint_dir,
        )

        path = Path(checkpoint) if checkpoint else packaged_checkpoint_dir() / DEFAULT_CHECKPOINT
        self.model = load_checkpoint(path)
        if self.model.needs_audio:
            raise PredictorError(f"{path}: the eot judge adapter needs a voice-activity judge checkpoint")
        self.checkpoint = str(path)
        self.checkpoint_sha256 = sha256_file(path)
        self.threshold, self.neg_threshold = threshold, neg_threshold

    def supports_language(self, lang_code: str) -> bool:
        return True

    def options(self) -> dict:
        return {"checkpoint_sha256": self.checkpoint_sha256, "threshold": self.threshold,
                "neg_threshold": self.neg_threshold}

    def _scores(self, speech: np.ndarray, timestamps: list[float]) -> list[float]:
        from judge.model import predict_many

        convs, chunks = [], []
        for t in timestamps:
            prefix = speech[: frames_before(t)]
            # One more chunk than the audio: its row is p(label of the chunk at t | everything before t).
            convs.append(Conversation(t + CHUNK_S, (speech_segments(prefix), [])))
            chunks.append(int(round(t / CHUNK_S)))
        out = []
        for preds, i in zip(predict_many(self.model, convs), chunks):
            p = preds.label_probs[min(i, len(preds.label_probs) - 1)]
            out.append(float(p[2] / max(p[2] + p[0], 1e-12)))  # LABELS = C, BC, T, I, NA
        return out

    def predict_turn(self, row: EotRow, *, inference_interval: float = INFERENCE_INTERVAL,
                     min_silence_span: float = MIN_SILENCE_SPAN) -> dict:
        speech = speech_frames(silero_frame_probs(row.audio), self.threshold, self.neg_threshold)
        points = list(grid_points(row, min_silence_span, inference_interval))
        scores = self._scores(speech, [t for _, _, t in points]) if points else []
        return _turn_result(row, [prediction_row(s, d, t, p) for (s, d, t), p in zip(points, scores)])

    def predict_batch(self, batch: list[dict]) -> list[float]:
        out = []
        for item in batch:
            speech = speech_frames(silero_frame_probs(item["audio"]), self.threshold, self.neg_threshold)
            out += self._scores(speech, [len(item["audio"]) / item.get("sample_rate", SAMPLE_RATE)])
        return out


class SmartTurnAdapter:
    """Smart Turn v3.2 (`speech.smart_turn`) behind the batch contract."""

    adapter_id = "smart-turn-v3.2"
    display_name = "Smart Turn v3.2"
    score_point = 0.2  # Smart Turn runs once VAD has seen ~200 ms of silence
    concurrency = 1

    def __init__(self, onnx_path=None):
        try:
            self.model = SmartTurn(onnx_path)
        except ModelError as exc:  # the file is missing or not the pinned one
            raise PredictorError(str(exc)) from None

    def supports_language(self, lang_code: str) -> bool:
        return True

    def options(self) -> dict:
        return {"onnx_sha256": self.model.sha256}

    def predict_batch(self, batch: list[dict]) -> list[float]:
        return self.model.predict([item["audio"] for item in batch])


BUILTIN_ADAPTERS = {
    "vad": VadBaselineAdapter,
    "cascade": CascadeEndpointAdapter,
    "judge": JudgeTurnChangeAdapter,
    "smart-turn": SmartTurnAdapter,
}


def load_adapter(reference: str, **kwargs):
    """A built-in name (vad, cascade, judge, smart-turn) or `module:attribute` / `module.attribute`;
    classes are instantiated (with `kwargs` for the built-ins, with no arguments otherwise)."""
    if reference in BUILTIN_ADAPTERS:
        return BUILTIN_ADAPTERS[reference](**kwargs)
    module, sep, attr = reference.partition(":")
    if not sep:
        module, _, attr = reference.rpartition(".")
    if not module or not attr:
        raise PredictorError(f"unknown adapter {reference!r}: use one of {', '.join(BUILTIN_ADAPTERS)} "
                             "or module:attribute")
    try:
        obj = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise PredictorError(f"cannot load adapter {reference!r}: {exc}") from None
    obj = obj() if inspect.isclass(obj) else obj
    if not hasattr(obj, "predict_batch") and not hasattr(obj, "predict_turn"):
        raise PredictorError(f"adapter {reference!r} has neither predict_batch nor predict_turn")
    return obj


def adapter_name(adapter) -> str:
    """Run-folder name of an adapter: its class name in snake case (eot-bench's convention)."""
    name = type(adapter).__name__
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def is_streaming(adapter) -> bool:
    return hasattr(adapter, "predict_turn")


# ---------------------------------------------------------------------------------------------
# running


def prediction_row(span, silence_dur: float, timestamp: float, p_eot: float) -> dict:
    return {"id": span.id, "language": span.language, "span_index": span.span_index,
            "timestamp": float(timestamp), "silence_dur": float(silence_dur), "p_eot": float(p_eot),
            "label": span.label}


def predict_batch_rows(adapter, rows, min_silence_span=MIN_SILENCE_SPAN, inference_interval=INFERENCE_INTERVAL,
                       transcript_lag=TRANSCRIPT_LAG, batch_size: int = 128) -> list[dict]:
    out, pending = [], []

    def flush():
        scores = list(adapter.predict_batch([item for _, item in pending]))
        if len(scores) != len(pending):
            raise PredictorError(f"{adapter.adapter_id}: predict_batch returned {len(scores)} scores "
                                 f"for {len(pending)} inputs")
        out.extend(prediction_row(*key, p) for (key, _), p in zip(pending, scores))
        pending.clear()

    for row in rows:
        for span, dur, t in grid_points(row, min_silence_span, inference_interval):
            pending.append(((span, dur, t), causal_item(row, t, transcript_lag)))
            if len(pending) >= batch_size:
                flush()
    if pending:
        flush()
    return out


def predict_streaming_rows(adapter, rows, min_silence_span=MIN_SILENCE_SPAN,
                           inference_interval=INFERENCE_INTERVAL) -> tuple[list[dict], list[dict]]:
    """(prediction rows, skipped rows) of a streaming adapter; language filled from the row."""
    out, skipped = [], []
    for row in rows:
        kwargs = {"inference_interval": inference_interval}
        if "min_silence_span" in inspect.signature(adapter.predict_turn).parameters:
            kwargs["min_silence_span"] = min_silence_span
        result = adapter.predict_turn(row, **kwargs)
        if inspect.isawaitable(result):
            result = asyncio.run(result)
        if result.get("skipped"):
            skipped.append({"id": row.id, "reason": str(result.get("reason", ""))})
            continue
        for r in result["prediction_rows"]:
            r = dict(r)
            r.setdefault("language", row.language)
            missing = [c for c in PREDICTION_COLUMNS if c not in r]
            if missing:
                raise PredictorError(f"{adapter.adapter_id}: prediction row of {row.id} lacks {', '.join(missing)}")
            out.append({c: r[c] for c in PREDICTION_COLUMNS})
    return out, skipped


def expected_keys(rows, min_silence_span=MIN_SILENCE_SPAN) -> set[tuple[str, int]]:
    return {(s.id, s.span_index) for row in rows for s in row_spans(row, min_silence_span)}
