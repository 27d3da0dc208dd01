"""Where the `predictive` system may backchannel: its `backchannel_max_turn_end` gate (no
backchannel where P(turn end) is at least this), on monologues of sentences written for this
probe (not the examiner's), told in two of the examiner's voices with 0.4-1.2 s between
sentences, as the examiner's backchannel task does.

    PYTHONPATH=. .venv/bin/python benchmarks/predictive_backchannel_gate.py [--gates 0.3 0.5 0.8]

Per gate: backchannels per second, the share of them in the teller's pauses, take-overs (turns
taken inside the monologue) and FDB's timing JSD against the examiner's reference (equal mass in
every pause: examiner.task_sets.backchannel_reference), computed from the system's logged
backchannel times (FDB reads Silero segments of the output instead).

Measured on the 2-core machine (25 Nov 2026), one 12-sentence monologue per voice (~45 s):
| gate | Piper joe@1: backchannels / s, in pauses, take-overs, JSD | espeak-ng f4@195: the same |
|---|---|---|
| 0.3 | 0.021, 0/1, 3, 0.833 | 0.021, 0/1, 5, 0.833 |
| 0.5 | 0.021, 1/1, 3, 0.788 | 0.021, 1/1, 5, 0.753 |
| 0.8 | 0.021, 1/1, 3, 0.784 | 0.042, 2/2, 5, 0.768 |
The gate is not what keeps the system quiet: the judge's hazard is (one or two backchannels in
45 s at any gate, where Switchboard's listeners give about 0.056 per second); the system's
default is 0.5 (docs/dialogue-systems.md#predictive). The take-overs are turns taken after a finished sentence, yielded again within 0.6 s
when the teller goes on (11 pauses per monologue).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

import numpy as np
import soundfile

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from examiner.fdb_rules import backchannel_histogram, backchannel_jsd  # noqa: E402
from examiner.task_sets import backchannel_reference  # noqa: E402
from examiner.voices import VOICES, speak  # noqa: E402
from studies.offline_call import run_offline_call  # noqa: E402
from studies.systems.cascaded import CascadedSettings, load_components  # noqa: E402
from studies.systems.kinds import system_kind  # noqa: E402

STORY = (
    "When I was twelve my family moved to a farm outside a small village.",
    "The house was old and the roof leaked every time it rained.",
    "My father spent the whole first summer fixing it with my uncle.",
    "I was supposed to help, but mostly I explored the woods behind the barn.",
    "There was a stream there with a rope swing that some older kids had built.",
    "One afternoon I fell off the swing and landed right in the water.",
    "My shoes were soaked and I had to walk home barefoot.",
    "My mother laughed so hard when she saw me that she had to sit down.",
    "After that she always called me the river explorer.",
    "We lived there for six years before moving back to the city.",
    "I still miss the quiet evenings and the sound of the frogs.",
    "Last year I drove past the farm and the rope swing was still there.",
)
RATE = 16000


def monologue(voice, seed: int) -> tuple[np.ndarray, list[list[float]]]:
    rng = random.Random(seed)
    parts, pauses, n = [np.zeros(RATE, dtype=np.float32)], [], RATE
    for k, sentence in enumerate(STORY):
        if k:
            gap = int(rng.uniform(0.4, 1.2) * RATE)
            pauses.append([n / RATE, (n + gap) / RATE])
            parts.append(np.zeros(gap, dtype=np.float32))
            n += gap
        audio = speak(sentence, voice)
        parts.append(audio)
        n += len(audio)
    parts.append(np.zeros(RATE, dtype=np.float32))
    return np.concatenate(parts), pauses


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gates", type=float, nargs="+", default=[0.3, 0.5, 0.8])
    parser.add_argument("--voices", nargs="+", default=["piper:en_US-joe-medium@1", "espeak-ng:en-us+f4@195"])
    args = parser.parse_args()
    components = load_components(CascadedSettings())
    kind = system_kind("predictive")
    voices = {v.label: v for v in VOICES}
    print("| gate | voice | backchannels / s | in the pauses | take-overs | JSD |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for gate in args.gates:
            for label in args.voices:
                audio, pauses = monologue(voices[label], seed=0)
                work = Path(tmp) / f"{gate}-{label.replace(':', '_')}"
                work.mkdir()
                soundfile.write(str(work / "user.wav"), audio, RATE)
                system = kind.build({"backchannel_max_turn_end": gate, "seed": 0}, components=components)
                result = run_offline_call(work / "user.wav", work / "call.wav", system=system, tail_s=0.0)
                events = [json.loads(line) for line in result.log_path.read_text().splitlines()]
                times = [e["mic_s"] for e in events if e["event"] == "backchannel"]
                takes = sum(e["event"] == "turn_end" for e in events)
                duration = len(audio) / RATE
                inside = sum(any(s <= t <= e + 0.2 for s, e in pauses) for t in times)
                jsd = backchannel_jsd(backchannel_histogram([(t, t + 0.3) for t in times], duration),
                                      backchannel_reference(pauses, duration)) if times else 1.0
                print(f"| {gate:g} | {label} | {len(times) / duration:.3f} | {inside}/{len(times)} | {takes} | {jsd:.3f} |",
                      flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
