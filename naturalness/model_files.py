"""The scorers' model files: packaged in naturalness/checkpoints/, each with a manifest next to it
(FILE.manifest.json: its sha256 and what it was fitted on), checked when the file is loaded.
(The judge checkpoint of turnnat-va lives with the judge: judge/checkpoints/.)"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from storage.files import sha256_file
from turntaking.jsonfiles import read_json


def packaged_path(file_name: str) -> Path:
    """A packaged model file of naturalness/checkpoints/."""
    return Path(str(resources.files("naturalness").joinpath("checkpoints"))) / file_name


def manifest_path(path: Path) -> Path:
    return path.with_suffix(".manifest.json")


def read_manifest(path: Path) -> dict:
    """The manifest of the model file at `path` ({} when it has none)."""
    manifest = manifest_path(path)
    return read_json(manifest, "model manifest") if manifest.is_file() else {}


def check_manifest_sha256(path: Path, error=ValueError) -> None:
    """Raise `error` when the file differs from the sha256 its manifest (PATH.manifest.json) records."""
    want = read_manifest(path).get("sha256")
    got = sha256_file(path)
    if want and got != want:
        raise error(f"{path}: sha256 {got[:16]}... differs from its manifest's {want[:16]}... (file changed or corrupt)")


def write_manifest(path: Path, fields: dict) -> dict:
    """Write the manifest of the model file at `path`: its name and sha256, then `fields` (the
    scorer, what it was fitted on); return it."""
    manifest = {"file": path.name, "sha256": sha256_file(path), **fields}
    manifest_path(path).write_text(json.dumps(manifest, indent=1))
    return manifest
