"""How well Smart Turn v3.2 tells a finished sentence from a cut one, by voice and by how much
silence follows the speech: why the `predictive` system waits long after some callers' questions.

    .venv/bin/python benchmarks/smart_turn_voices.py

The sentences of `benchmarks/predictive_turn_end_cues.py` (8 finished, 8 cut before their end),
spoken by every examiner voice (examiner.voices: Piper at three rates, three espeak-ng voices),
cut at their last audible sample, then followed by 0-500 ms of silence. Prints ROC-AUC (finished
against cut) and median P(complete) per silence, and per voice at 200 ms.

Measured on the 2-core machine (24 Nov 2026): ROC-AUC 0.82 (no silence), 0.84 (100 ms), 0.79
(200 ms), 0.75 (500 ms); by voice at 200 ms, 0.92-0.98 for the Piper rates and 0.38-0.76 for the
espeak-ng voices (finished median 0.37 for en-us+f3). The silence moves single sentences a lot: the
latency benchmark's "Where can I find good pizza in Manhattan?" in Piper's voice (rate 1) gets 0.10
with 0 or 100 ms after it and 0.91 with 200 ms; the system reads Smart Turn at its caller's first
silent frame, where it said 0.09 in a call. Reading it later would not be a cleaner cue: the cut
sentences rise with the silence too (median 0.23 at 100 ms, 0.54 at 200 ms, 0.88 at 300 ms), and
the silence already enters the turn-end posterior through the pause survival.

The system reads it after 40 ms of VAD silence (`smart_turn_after_ms`), not at
the first silent frame: the VAD's lag after a Piper voice can be as short as 37 ms, and "How do I
make a cup of green tea?" read 0.055 there in an examiner call (0.976 with 50 ms more). Over the
examiner's six questions in its six voices, the share read below 0.5 falls from 50 % with no
silence after the speech to 22 % at 60 ms and 14-19 % at 100-200 ms.
"""

from __future__ import annotations

import numpy as np
from sklearn.metrics import roc_auc_score

from examiner.voices import VOICES, speak
from predictive_turn_end_cues import CUT, FINISHED
from speech.smart_turn import SmartTurn

RATE = 16000
SILENCES_MS = (0, 60, 100, 200, 300, 500)
BY_VOICE_AT_MS = 200


def main() -> int:
    smart_turn = SmartTurn()
    labels, voices, scores = [], [], []
    for voice in VOICES:
        for finished, texts in ((True, FINISHED), (False, CUT)):
            for text in texts:
                speech = speak(text, voice)  # trimmed to its audible samples
                scores.append([smart_turn.predict([np.concatenate([speech, np.zeros(RATE * ms // 1000, np.float32)])])[0]
                               for ms in SILENCES_MS])
                labels.append(finished)
                voices.append(voice.label)
    y, p, voices = np.array(labels), np.array(scores), np.array(voices)
    print(f"{len(y)} utterances, {len(VOICES)} voices")
    print("| silence after speech | ROC-AUC | finished: median P(complete) | cut: median P(complete) |")
    print("|---|---|---|---|")
    for j, ms in enumerate(SILENCES_MS):
        print(f"| {ms} ms | {roc_auc_score(y, p[:, j]):.3f} | {np.median(p[y, j]):.2f} | {np.median(p[~y, j]):.2f} |")
    j = SILENCES_MS.index(BY_VOICE_AT_MS)
    print(f"\n| voice ({BY_VOICE_AT_MS} ms of silence) | ROC-AUC | finished: median | cut: median |")
    print("|---|---|---|---|")
    for voice in VOICES:
        m = voices == voice.label
        print(f"| {voice.label} | {roc_auc_score(y[m], p[m, j]):.3f} | {np.median(p[m & y, j]):.2f} | "
              f"{np.median(p[m & ~y, j]):.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
