"""When does the caller's speech end, by the predictive system's rule, after the last word?

For each speech segment of the examiner's smooth turn-taking and pause-handling examples
(`make-tasks SET --tasks smooth_turn_taking,pause_handling --per-task 12 --seed 1 --voices V`),
replays the system's view of the caller block by block (Silero with the cascade's hysteresis, 0.3
on, 0.15 off) with and without a quiet end (P(speech) under 0.7 or 0.5, after frames under 0.7,
0.9 or 0.95 in a row, and the last 40 ms 10 dB under the caller's speech level), and prints the
end's lag after each segment's last word and the ends inside the speech (more than 0.3 s after
its start and 40 ms before its end). A set is a folder of `TASK/N/` examples, each an
`input.wav` and an `example.json` with its `speech` segments (make-tasks writes them).

    PYTHONPATH=. .venv/bin/python benchmarks/quiet_end_fit.py SET [SET ...]
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import soundfile

from studies.systems.components import StreamingVAD, load_vad_session

RATE, BLOCK = 16000, 320
# (P(speech) under which, VAD frames in a row under `falling`, dB under the caller's speech level, falling)
RULES = {"VAD alone": None, "P<0.7 10 dB": (0.7, 1, 10.0, 0.7), "P<0.7 2 frames 10 dB": (0.7, 2, 10.0, 0.7),
         "P<0.7 after <0.9": (0.7, 2, 10.0, 0.9), "P<0.7 after <0.95": (0.7, 2, 10.0, 0.95),
         "P<0.7 after 2 <0.95": (0.7, 3, 10.0, 0.95)}


def mean_db(levels) -> float:
    return 10 * math.log10(float(np.mean(np.power(10.0, np.asarray(levels) / 10))) + 1e-12)


def activity(session, audio: np.ndarray, rule) -> np.ndarray:
    vad, active, ended, p, fading = StreamingVAD(session), False, False, 0.0, 0
    speech_levels, last = [], []
    out = []
    for i in range(len(audio) // BLOCK):
        block = audio[i * BLOCK:(i + 1) * BLOCK]
        for p in vad.push(block):
            onset = rule[0] if ended else 0.3
            active = p >= onset or (active and p >= 0.15)
            ended = ended and p >= 0.15
            fading = fading + 1 if rule is not None and p < rule[3] else 0
        level = 10 * math.log10(float(np.mean(block.astype(np.float64) ** 2)) + 1e-12)
        last = (last + [level])[-2:]
        if active:
            speech_levels = (speech_levels + [level])[-250:]
        if (rule is not None and active and p < rule[0] and fading >= rule[1] and len(speech_levels) >= 10
                and mean_db(last) <= mean_db(speech_levels) - rule[2]):
            active, ended = False, True
        out.append(active)
    return np.array(out)


def main(sets: list[str]) -> None:
    session = load_vad_session()
    for root in sets:
        print(root)
        for name, rule in RULES.items():
            inside, lags = 0, []
            for example in sorted(Path(root).glob("*/*/example.json")):
                meta = json.loads(example.read_text())
                audio, _ = soundfile.read(example.parent / "input.wav", dtype="float32")
                speech = meta["speech"]
                active = activity(session, audio[: int((speech[-1][1] + 1.0) * RATE)], rule)
                t = np.arange(len(active)) * BLOCK / RATE
                ends = t[1:][active[:-1] & ~active[1:]]
                for start, end in speech:
                    inside += int(np.sum((ends > start + 0.3) & (ends < end - 0.04)))
                    after = ends[ends >= end - 0.04]
                    if len(after):
                        lags.append(after[0] - end)
            print(f"  {name:14} lag p50 {np.median(lags):.3f} s, p90 {np.percentile(lags, 90):.3f} s; "
                  f"ends inside speech {inside} ({len(lags)} segments)")


if __name__ == "__main__":
    main(sys.argv[1:])
