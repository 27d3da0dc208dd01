"""The timing-hazard model file: fitted on human conversation, saved with its manifest (sha256,
what it was fitted on, the human reference), loaded with its sha256 checked. The packaged one is
naturalness/checkpoints/timing_hazard.npz, made by `python -m naturalness fit-scorers SWB`."""

from __future__ import annotations

from pathlib import Path

from naturalness.model_files import check_manifest_sha256, packaged_path, read_manifest, write_manifest
from naturalness.timing_hazard import NAME
from naturalness.timing_hazard.context import FRAME_RATE, ipu_frames
from naturalness.timing_hazard.hazards import HazardCounts, TimingHazardModel, TimingModelError
from turntaking.events import EventParams

MODEL_FILE = "timing_hazard.npz"


def packaged_model_path() -> Path:
    return packaged_path(MODEL_FILE)


def load_timing_model(path=None) -> TimingHazardModel:
    """The timing model at `path` (default: the packaged one), its sha256 checked against its manifest."""
    path = packaged_model_path() if path is None else Path(path)
    if not path.is_file():
        raise TimingModelError(f"timing model not found: {path}")
    check_manifest_sha256(path, TimingModelError)
    return TimingHazardModel.load(path)


def recorded_reference(path: Path) -> dict:
    """Human-human naturalness by window length recorded in the manifest of the model file at
    `path` when it was fitted ({length_s: {"mean", "sd", "windows"}}); {} without one."""
    return read_manifest(path).get("human_reference", {}).get("naturalness_by_window_s", {})


def fit_timing_model(conversations, events: EventParams = EventParams(), smoothing: float = 10.0,
                     meta: dict | None = None) -> TimingHazardModel:
    counts = HazardCounts.empty()
    n = 0
    for conv in conversations:
        counts.add(ipu_frames(conv, events))
        n += 1
    return TimingHazardModel.from_counts(counts, smoothing, {**(meta or {}), "conversations": n,
                                                             "events": events.as_dict()})


def save_timing_model(model: TimingHazardModel, path, extra: dict | None = None) -> dict:
    """Write the model and its manifest (sha256, what it was fitted on); return the manifest."""
    path = Path(path)
    model.save(path)
    return write_manifest(path, {"scorer": NAME, "frame_rate": FRAME_RATE, "smoothing": model.smoothing,
                                 "meta": model.meta, **(extra or {})})
