"""Probe (one-off): how much sooner would the cascade speculate at the fading of the speech,
P(speech) < 0.7 as the predictive system reads it, than at its first frame under `vad_threshold`
(0.3)? And how many more false starts inside the turn would that make?

    python -m examiner make-tasks /tmp/choose24 --tasks smooth_turn_taking --per-task 24 --seed 7 \
        --voices choosing --questions choosing
    PYTHONPATH=. python benchmarks/speculation_fade_probe.py /tmp/choose24
"""

import glob
import json
import sys

import numpy as np
import soundfile as sf

from systems.speech_detection import VAD_FRAME, StreamingVAD, load_vad_session


def probabilities(audio: np.ndarray, session) -> list[float]:
    vad = StreamingVAD(session)
    out = []
    for k in range(0, len(audio), 320):  # the call's 20 ms blocks
        out += vad.push(audio[k:k + 320])
    return out


def fade_s(probs, end_s: float, threshold: float, rate: int) -> float:
    """Seconds after the end of speech at which P is known to be under `threshold` for good
    (the frame after the last one at or above it, within 1 s after the end)."""
    last = max(i for i in range(min(int((end_s + 1.0) * rate / VAD_FRAME), len(probs))) if probs[i] >= threshold)
    return (last + 2) * VAD_FRAME / rate - end_s


def dips(probs, end_s: float, threshold: float, rate: int) -> int:
    """Falls under `threshold` inside the turn that come back above it: speculations dropped."""
    n, inside = 0, int(end_s * rate / VAD_FRAME)
    for i in range(1, inside):
        if probs[i] < threshold <= probs[i - 1]:
            j = i
            while j < len(probs) and probs[j] < threshold:
                j += 1
            n += j < inside
    return n


def main(folder: str) -> None:
    session = load_vad_session()
    rows = []
    for example in sorted(glob.glob(f"{folder}/smooth_turn_taking/*")):
        end_s = json.load(open(f"{example}/turn_taking.json"))[0]["timestamp"][0]
        audio, rate = sf.read(f"{example}/input.wav", dtype="float32")
        probs = probabilities(audio if audio.ndim == 1 else audio[:, 0], session)
        rows.append((fade_s(probs, end_s, 0.7, rate), fade_s(probs, end_s, 0.3, rate),
                     dips(probs, end_s, 0.7, rate), dips(probs, end_s, 0.3, rate)))
    a = np.array(rows)
    print(f"{len(a)} turns: P under 0.7 for good {a[:, 0].mean():.3f} s after the end (mean), under 0.3 "
          f"{a[:, 1].mean():.3f} s; sooner by {np.mean(a[:, 1] - a[:, 0]):.3f} s (median "
          f"{np.median(a[:, 1] - a[:, 0]):.3f}); falls inside the turns: {int(a[:, 2].sum())} under 0.7, "
          f"{int(a[:, 3].sum())} under 0.3")


if __name__ == "__main__":
    main(sys.argv[1])
