"""A small benchmark directory in the layout `python -m annotation build-pairs` writes for audio
sources, made of real espeak-ng speech: each clip is "hi" on channel 0 then "yes" on channel 1,
about 1.5 s long. Natural clips answer after `natural_gap` s, perturbed ones after `late_gap` s
(a late response); artifact-control clips are the natural clip again.

One rendering of each kind is copied to every pair, so building hundreds of pairs is quick.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.rendered_speech import alternating_dialogue

TEXTS = ("hi", "yes")


def _render(path: Path, gap: float) -> dict:
    speech = alternating_dialogue(TEXTS, first_start=0.1, gap=gap, tail=0.1)
    speech.write(path)
    vad = [[[u.start, u.end] for u in speech.in_channel(c)] for c in (0, 1)]
    return {"duration": speech.duration, "vad": vad, "speakers": ["A", "B"]}


def write_small_benchmark(out, pairs: int, controls: int = 0, natural_gap: float = 0.2, late_gap: float = 0.9) -> Path:
    out = Path(out)
    clips = out / "clips"
    clips.mkdir(parents=True, exist_ok=True)
    natural_vad = _render(out / "natural.wav", natural_gap)
    perturbed_vad = _render(out / "perturbed.wav", late_gap)
    entries, control_entries = [], []
    for n in range(pairs):
        pid = f"late_response-{n:03d}"
        for side, vad in (("natural", natural_vad), ("perturbed", perturbed_vad)):
            shutil.copyfile(out / f"{side}.wav", clips / f"{pid}.{side}.wav")
            (clips / f"{pid}.{side}.json").write_text(json.dumps(vad))
        entries.append({
            "pair_id": pid, "type": "late_response", "natural": f"clips/{pid}.natural.wav",
            "perturbed": f"clips/{pid}.perturbed.wav", "natural_vad": f"clips/{pid}.natural.json",
            "perturbed_vad": f"clips/{pid}.perturbed.json", "source": "espeak", "clip_start": 0.0,
            "clip_end": natural_vad["duration"],
        })
        if n < controls:
            shutil.copyfile(out / "natural.wav", clips / f"{pid}.control.wav")
            control_entries.append({
                "pair_id": f"{pid}-control", "type": "artifact_control", "control_of": "late_response",
                "natural": f"clips/{pid}.natural.wav", "perturbed": f"clips/{pid}.control.wav",
                "natural_vad": f"clips/{pid}.natural.json", "source": "espeak", "clip_start": 0.0,
                "clip_end": natural_vad["duration"],
            })
    (out / "manifest.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))
    if control_entries:
        (out / "controls.jsonl").write_text("".join(json.dumps(e) + "\n" for e in control_entries))
    return out
