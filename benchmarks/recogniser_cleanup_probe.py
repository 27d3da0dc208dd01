"""Probe: in the noisy room (sox's reverb, steady pink noise 15 dB below the speech), does cleaning
the caller's audio before the recogniser help it hear? Spectral subtraction (the room's noise taken
as each frequency's 10th percentile of power over the clip) and single-channel dereverberation
(WPE, the `nara_wpe` package: not a dependency of the project, `pip install nara_wpe`).

For each example of a task set (`python -m examiner make-tasks SET --tasks
smooth_turn_taking,pause_handling`), the caller's audio to 0.25 s after the pause's start or the
question's end is recognised as the predictive system does (`WhisperASR.transcribe`), plain and
cleaned; printed: how many transcripts get a word wrong (a pause's words must be the start of the
spoken sentence, a question's all of it).

    python benchmarks/recogniser_cleanup_probe.py SET [SET ...]
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np
import soundfile
from scipy.signal import istft, stft

from studies.systems.components import WhisperASR

AFTER_S = 0.25  # the audio the decision's transcript holds past the speech's end


def spectral_subtraction(audio: np.ndarray, rate: int, over: float = 1.5, floor: float = 0.1) -> np.ndarray:
    _, _, spectrum = stft(audio, rate, nperseg=512, noverlap=512 - 160)
    power = np.abs(spectrum) ** 2
    noise = np.percentile(power, 10, axis=1, keepdims=True)  # steady noise: the quiet frames' level
    gain = np.sqrt(np.maximum(1 - over * noise / np.maximum(power, 1e-12), floor ** 2))
    _, cleaned = istft(spectrum * gain, rate, nperseg=512, noverlap=512 - 160)
    return cleaned[: len(audio)].astype(np.float32)


def dereverberation(audio: np.ndarray, rate: int) -> np.ndarray:
    from nara_wpe.utils import istft as wpe_istft, stft as wpe_stft
    from nara_wpe.wpe import wpe

    frames = wpe_stft(audio[None], size=512, shift=128).transpose(2, 0, 1)
    cleaned = wpe(frames, taps=10, delay=3, iterations=3, statistics_mode="full").transpose(1, 2, 0)
    return wpe_istft(cleaned, size=512, shift=128)[0][: len(audio)].astype(np.float32)


CLEANERS = {"plain": lambda audio, rate: audio, "spectral subtraction": spectral_subtraction,
            "dereverberation (WPE)": dereverberation}


def words(text: str) -> list[str]:
    return re.sub(r"[^a-z' ]", " ", text.lower()).split()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sets", nargs="+", type=Path)
    args = parser.parse_args()
    asr = WhisperASR(None, threads=2)
    for folder in args.sets:
        misheard, count = dict.fromkeys(CLEANERS, 0), 0
        for task in ("pause_handling", "smooth_turn_taking"):
            for example in sorted((folder / task).iterdir(), key=lambda p: int(p.name)):
                facts = json.loads((example / "example.json").read_text())
                audio, rate = soundfile.read(str(example / "input.wav"), dtype="float32")
                end = facts["pause"][0] if task == "pause_handling" else facts["turn_end"]
                clip, spoken, count = audio[: int((end + AFTER_S) * rate)], words(facts["text"]), count + 1
                for name, clean in CLEANERS.items():
                    heard = words(asr.transcribe(clean(clip, rate)))
                    right = spoken[:len(heard)] == heard if task == "pause_handling" else heard == spoken
                    misheard[name] += not right
        print(f"{folder.name}: " + ", ".join(f"{name} {n} of {count} misheard" for name, n in misheard.items()))


if __name__ == "__main__":
    main()
