"""Run a break detector over SID-bench clips, causally, and write SID-bench prediction JSONL.

A detector has `name` and `first_break(audio, sample_rate) -> seconds | None`: the time at which
it would act, deciding from the audio before that time only. Built in:
  vad      Silero VAD: the first 32 ms frame with p >= 0.5 (any speech interrupts); the
           reported time is the end of that frame, when a live system could act.
  cascade  the cascaded system's barge-in: Silero threshold 0.3, a speech segment (pauses under
           250 ms bridged) that has lasted 500 ms (huggingface speech-to-speech's min speech),
           reported when the 500 ms are complete.
Neither understands the words: both are baselines for FIR on backchannels and noise.
"""

from __future__ import annotations

import importlib
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from predictorbench.eot.predictors import silero_frame_probs
from predictorbench.sid.data import SPLIT_FILES, prediction_line, write_predictions
from speech.audio import load_audio, mono_mixture

FRAME = 512
SAMPLE_RATE = 16000


@dataclass
class VadBreakDetector:
    """Fires once the current speech segment has lasted `min_speech_ms` (at least one frame).

    A segment starts at a frame with p >= threshold and survives dips until `min_silence_ms` of
    frames below threshold - 0.15 (silero's segmentation rule), so short pauses inside a phrase
    do not restart the count."""

    threshold: float = 0.5
    min_speech_ms: float = 0.0
    min_silence_ms: float = 250.0
    name: str = "vad"

    def first_break(self, audio: np.ndarray, sample_rate: int = SAMPLE_RATE) -> float | None:
        if sample_rate != SAMPLE_RATE:
            raise ValueError(f"audio must be 16 kHz, got {sample_rate} Hz")
        probs = silero_frame_probs(np.pad(audio, (0, (-len(audio)) % FRAME)))
        frame_ms = 1000 * FRAME / SAMPLE_RATE
        need = max(1, int(np.ceil(self.min_speech_ms / frame_ms - 1e-9)))
        start = silent = None
        for i, p in enumerate(probs.tolist()):
            if p >= self.threshold:
                silent = None
                start = i if start is None else start
            elif start is not None and p < self.threshold - 0.15:
                silent = i if silent is None else silent
                if (i + 1 - silent) * frame_ms >= self.min_silence_ms:
                    start = silent = None
            if start is not None and silent is None and i + 1 - start >= need:
                return min((i + 1) * FRAME / SAMPLE_RATE, len(audio) / SAMPLE_RATE)
        return None


DETECTORS = {
    "vad": lambda: VadBreakDetector(),
    "cascade": lambda: VadBreakDetector(threshold=0.3, min_speech_ms=500.0, name="cascade"),
}


def load_detector(reference: str):
    if reference in DETECTORS:
        return DETECTORS[reference]()
    module, sep, attr = reference.partition(":")
    if not sep:
        raise ValueError(f"unknown detector {reference!r}: use {', '.join(DETECTORS)} or module:attribute")
    obj = getattr(importlib.import_module(module), attr)
    return obj() if isinstance(obj, type) else obj


def run_split(detector, clips) -> list[dict]:
    lines = []
    for clip in clips:
        if clip.wav is None or not clip.wav.is_file():
            raise FileNotFoundError(f"WAV file of {clip.audio} not found: {clip.wav}")
        samples, rate = load_audio(clip.wav, SAMPLE_RATE)
        lines.append(prediction_line(clip.audio, detector.first_break(mono_mixture(samples), rate)))
    return lines


def run(detector, splits: dict, out_dir) -> dict:
    """Write <out_dir>/<annotation file stem>.predictions.jsonl per split and a manifest."""
    import json

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written, started = {}, time.monotonic()
    for name, clips in splits.items():
        path = out_dir / (Path(SPLIT_FILES[name]).stem + ".predictions.jsonl")
        write_predictions(path, run_split(detector, clips))
        written[name] = str(path)
    manifest = {"detector": getattr(detector, "name", type(detector).__name__),
                "options": asdict(detector) if hasattr(detector, "__dataclass_fields__") else {},
                "splits": {n: len(c) for n, c in splits.items()}, "predictions": written,
                "elapsed_s": round(time.monotonic() - started, 3)}
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest
