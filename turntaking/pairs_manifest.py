"""The manifest of a perturbation benchmark: JSONL, one natural/perturbed pair a line.

    {"pair_id": ..., "type": ..., "natural": PATH, "perturbed": PATH, ...more keys}

PATHs are relative to the manifest's folder (two-channel audio or voice-activity JSON).
`annotation.benchmark` writes it; `annotation.register` (clips for people) and `naturalness.pairs`
(clips for the scorers) read it here, so both refuse the same files with the same message.
"""

from __future__ import annotations

from pathlib import Path

from turntaking.jsonfiles import JsonFileError, numbered_jsonl

REQUIRED_KEYS = ("pair_id", "type", "natural", "perturbed")


class ManifestError(JsonFileError):
    """A pairs manifest that cannot be read; the message names the file and line."""


def read_pairs_manifest(path, allow_empty: bool = False) -> list[dict]:
    """The manifest's entries, each checked to have the required keys and two clip paths."""
    path = Path(path)
    entries = []
    for n, item in numbered_jsonl(path, "manifest", ManifestError):
        missing = [k for k in REQUIRED_KEYS if k not in item]
        if missing:
            raise ManifestError(f"{path}:{n}: missing {', '.join(missing)}")
        if not all(isinstance(item[k], str) and item[k] for k in ("natural", "perturbed")):
            raise ManifestError(f"{path}:{n}: 'natural' and 'perturbed' must be file paths")
        entries.append(item)
    if not entries and not allow_empty:
        raise ManifestError(f"{path}: no pairs")
    return entries
