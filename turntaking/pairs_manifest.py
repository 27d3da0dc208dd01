"""The manifest of a perturbation benchmark: JSONL, one natural/perturbed pair a line.

    {"pair_id": ..., "type": ..., "natural": PATH, "perturbed": PATH, ...more keys}

PATHs are relative to the manifest's folder (two-channel audio or voice-activity JSON).
`annotation.benchmark` writes it; `annotation.register` (clips for people) and `judge.pairs`
(clips for the scorers) read it here, so both refuse the same files with the same message.
"""

from __future__ import annotations

import json
from pathlib import Path

REQUIRED_KEYS = ("pair_id", "type", "natural", "perturbed")


class ManifestError(ValueError):
    """A pairs manifest that cannot be read; the message names the file and line."""


def read_pairs_manifest(path, allow_empty: bool = False) -> list[dict]:
    """The manifest's entries, each checked to have the required keys and two clip paths."""
    path = Path(path)
    if not path.is_file():
        raise ManifestError(f"manifest not found: {path}")
    entries = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ManifestError(f"{path}:{n}: not valid JSON ({exc.msg})") from None
        if not isinstance(item, dict):
            raise ManifestError(f"{path}:{n}: expected a JSON object with {', '.join(REQUIRED_KEYS)}")
        missing = [k for k in REQUIRED_KEYS if k not in item]
        if missing:
            raise ManifestError(f"{path}:{n}: missing {', '.join(missing)}")
        if not all(isinstance(item[k], str) and item[k] for k in ("natural", "perturbed")):
            raise ManifestError(f"{path}:{n}: 'natural' and 'perturbed' must be file paths")
        entries.append(item)
    if not entries and not allow_empty:
        raise ManifestError(f"{path}: no pairs")
    return entries
