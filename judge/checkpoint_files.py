"""Where the packaged checkpoints are and what their manifests say, without loading torch: the
turn-end model and the naturalness scorers read their files through these in processes (the app, the
CLIs) that never run the judge."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from turntaking.jsonfiles import read_json

DEFAULT_CHECKPOINT = "judge_va.pt"


class CheckpointError(ValueError):
    """A checkpoint that is missing, corrupt, or does not match its recorded hash."""


def packaged_checkpoint_dir() -> Path:
    return Path(str(resources.files("judge").joinpath("checkpoints")))


def expected_sha256(path: Path) -> str | None:
    """The sha256 recorded for `path` in the manifest next to it, if any."""
    manifest = path.with_name(path.stem + ".manifest.json")
    if not manifest.is_file():
        return None
    return read_json(manifest, "checkpoint manifest", CheckpointError).get("checkpoint_sha256")
