"""Writing a perturbation benchmark to disk in the format `python -m naturalness pairs` reads.

    DIR/manifest.jsonl          one pair a line: pair_id, type, natural, perturbed (paths relative
                                to DIR), source, clip_start, clip_end, edits, details
    DIR/clips/ID.natural.json   voice-activity JSON of the natural clip
    DIR/clips/ID.perturbed.json the perturbed clip
    DIR/benchmark.json          how it was built: source, seed, per_type, parameters, counts

With audio sources, the clips are also rendered (annotation.render) as two-channel WAV files and
`natural` / `perturbed` name those; `natural_vad` / `perturbed_vad` keep the voice-activity JSON.
`DIR/controls.jsonl` lists the artifact-control pairs (natural clip vs the same clip with the
perturbation's splices and fades but no timing change) in the same format.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import soundfile
from tqdm import tqdm

from annotation.perturbations import PerturbationPair, PerturbationParams, params_dict
from annotation.render import RenderParams, render_pair
from turntaking.activity import conversation_to_json

MANIFEST = "manifest.jsonl"
CONTROLS = "controls.jsonl"


def _write_jsonl(path: Path, entries: list[dict]):
    path.write_text("".join(json.dumps(e, sort_keys=True) + "\n" for e in entries))


def write_benchmark(
    pairs: list[PerturbationPair],
    out_dir,
    source: str,
    seed: int,
    per_type: int,
    params: PerturbationParams,
    audio: dict | None = None,
    render_params: RenderParams = RenderParams(),
) -> Path:
    """Write clips and manifests. `audio` maps a pair's source to its (samples (2, n), rate)."""
    out = Path(out_dir)
    clips = out / "clips"
    clips.mkdir(parents=True, exist_ok=True)
    entries, controls = [], []
    for n, pair in enumerate(tqdm(pairs, desc="writing pairs", unit="pair", disable=None)):
        entry = pair.manifest_entry()
        key = "natural_vad" if audio else "natural"
        for side, conv in (("natural", pair.natural), ("perturbed", pair.perturbed)):
            rel = f"clips/{pair.pair_id}.{side}.json"
            (out / rel).write_text(json.dumps(conversation_to_json(conv)))
            entry[f"{side}_vad" if audio else side] = rel
        if audio:
            samples, rate = audio[pair.source]
            rendered = render_pair(samples, rate, pair.natural, pair.clip_start, pair.edits, render_params, seed + n)
            for side, wave in zip(("natural", "perturbed", "control"), rendered):
                rel = f"clips/{pair.pair_id}.{side}.wav"
                soundfile.write(str(out / rel), np.asarray(wave).T, rate, subtype="PCM_16")
                if side != "control":
                    entry[side] = rel
            controls.append(
                {"pair_id": f"{pair.pair_id}-control", "type": "artifact_control", "control_of": pair.type,
                 "natural": entry["natural"], "perturbed": f"clips/{pair.pair_id}.control.wav",
                 "natural_vad": entry[key], "source": pair.source, "clip_start": entry["clip_start"],
                 "clip_end": entry["clip_end"]}
            )
        entries.append(entry)
    _write_jsonl(out / MANIFEST, entries)
    if audio:
        _write_jsonl(out / CONTROLS, controls)
    info = {
        "source": source,
        "seed": seed,
        "per_type": per_type,
        "pairs": len(pairs),
        "per_type_counts": dict(Counter(p.type for p in pairs)),
        "params": params_dict(params),
        "render": vars(render_params) if audio else None,
        "artifact_controls": len(controls),
    }
    (out / "benchmark.json").write_text(json.dumps(info, indent=1, sort_keys=True) + "\n")
    return out / MANIFEST
