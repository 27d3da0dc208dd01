"""How small may the live recogniser's encoder window be? (`studies.systems.components.WhisperASR`)

Each smooth turn-taking question of the given task sets, cut as the predictive system hands it to
the recogniser (0.5 s before the speech to 0.15 s after it), is transcribed in a 10 s window and
in the smallest window that holds it and 1 or 2 s of silence after it; prints the time (1 core,
the second of two runs), the words that differ from the 10 s window's and the decodings of more
than 20 tokens (Whisper looping).

    PYTHONPATH=. .venv/bin/python benchmarks/whisper_window_probe.py SET [SET ...]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import soundfile

from studies.systems.components import WhisperASR

RATE = 16000


def transcribe(asr: WhisperASR, audio: np.ndarray, windows, after_s: float) -> tuple[str, float]:
    asr.WINDOWS_S, asr.WINDOW_AFTER_S = windows, after_s
    asr.transcribe(audio)
    started = time.perf_counter()
    text = asr.transcribe(audio)
    return text, time.perf_counter() - started


def main(sets: list[str]) -> None:
    asr = WhisperASR(None, threads=1)
    small = (3, 4, 5, 6, 7, 8, 10, 20, 30)
    rows = {"10 s": ((10, 20, 30), 1), "smallest, 1 s after": (small, 1), "smallest, 2 s after": (small, 2)}
    totals = {name: [0.0, 0, 0, 0] for name in rows}  # seconds, same words, long decodings, questions
    for root in sets:
        for example in sorted(Path(root).glob("smooth_turn_taking/*/example.json")):
            meta = json.loads(example.read_text())
            audio, _ = soundfile.read(example.parent / "input.wav", dtype="float32")
            start, end = meta["speech"][0][0], meta["speech"][-1][1]
            question = audio[int(max(0.0, start - 0.5) * RATE): int((end + 0.15) * RATE)]
            reference = None
            for name, (windows, after_s) in rows.items():
                text, seconds = transcribe(asr, question, windows, after_s)
                reference = reference or text
                total = totals[name]
                total[0] += seconds
                total[1] += text == reference
                total[2] += len(asr.tokenizer.encode(" " + text)) > 20
                total[3] += 1
                if text != reference:
                    print(f"  {example.parent}: {name}: {text!r} (10 s: {reference!r})")
    for name, (seconds, same, long, n) in totals.items():
        print(f"{name:22} mean {1000 * seconds / n:.0f} ms, the 10 s window's words {same} of {n}, "
              f"over 20 tokens {long}")


if __name__ == "__main__":
    main(sys.argv[1:])
