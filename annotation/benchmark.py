"""Writing a perturbation benchmark to disk in the format `python -m judge pairs` reads.

    DIR/manifest.jsonl          one pair a line: pair_id, type, natural, perturbed (paths relative
                                to DIR), source, clip_start, clip_end, edits, details
    DIR/clips/ID.natural.json   voice-activity JSON of the natural clip
    DIR/clips/ID.perturbed.json the perturbed clip
    DIR/benchmark.json          how it was built: source, seed, per_type, parameters, counts
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from analysis.activity import conversation_to_json
from annotation.perturbations import PerturbationPair, PerturbationParams, params_dict

MANIFEST = "manifest.jsonl"


def write_benchmark(
    pairs: list[PerturbationPair], out_dir, source: str, seed: int, per_type: int, params: PerturbationParams
) -> Path:
    out = Path(out_dir)
    clips = out / "clips"
    clips.mkdir(parents=True, exist_ok=True)
    lines = []
    for pair in pairs:
        entry = pair.manifest_entry()
        for side, conv in (("natural", pair.natural), ("perturbed", pair.perturbed)):
            rel = f"clips/{pair.pair_id}.{side}.json"
            (out / rel).write_text(json.dumps(conversation_to_json(conv)))
            entry[side] = rel
        lines.append(json.dumps(entry, sort_keys=True))
    (out / MANIFEST).write_text("\n".join(lines) + ("\n" if lines else ""))
    info = {
        "source": source,
        "seed": seed,
        "per_type": per_type,
        "pairs": len(pairs),
        "per_type_counts": dict(Counter(p.type for p in pairs)),
        "params": params_dict(params),
    }
    (out / "benchmark.json").write_text(json.dumps(info, indent=1, sort_keys=True) + "\n")
    return out / MANIFEST


def read_manifest(path) -> list[dict]:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"manifest not found: {path}")
    entries = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            raise ValueError(f"{path}:{n}: not a JSON object") from None
        missing = {"pair_id", "type", "natural", "perturbed"} - set(entry)
        if missing:
            raise ValueError(f"{path}:{n}: missing {', '.join(sorted(missing))}")
        entries.append(entry)
    return entries
