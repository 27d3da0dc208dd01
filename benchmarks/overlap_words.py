"""How the `predictive` system hears speech over its own: whether the packaged Whisper (tiny.en)
turns backchannels into a backchannel and floor-taking words into words, with and without the
prompt of `PredictiveSettings.overlap_prompt`.

    PYTHONPATH=. .venv/bin/python benchmarks/overlap_words.py [--prompt TEXT]

Every phrase is rendered by the examiner's six voices (Piper and espeak-ng, `examiner.voices`),
with 0.1 s of silence around it, and read as the system reads an overlap (`_not_taking_the_floor`).
The phrases the prompt was written for ("mm-hmm", "uh-huh", "yeah", "right", "okay") are reported
apart from others it was not ("mhm", "yep", "uh huh, yeah", "oh okay", "sure", "I see"), and from
floor-taking words: short ones a backchannel could be confused with, and the first 0.6 s (or
`--first-s`) of the examiner's interruptions and background asides (about what is heard at
`overlap_yield_ms`, 0.48 s of overlap counted from the VAD's onset, the audio from 0.1 s before
it), and from the examiner's coughs.

Measured on the 2-core machine (25 Nov 2026), share heard as "not taking the floor" (`--show`
lists the misjudged, with their words):

| sounds (phrases x 6 voices) | no prompt | prompt |
|---|---|---|
| backchannels the prompt spells (5) | 24 / 30 | 29 / 30 |
| other backchannels (6) | 29 / 36 | 32 / 36 |
| short floor-taking words (12) | 0 / 72 | 0 / 72 |
| interruptions and asides, first 0.6 s (8) | 0 / 48 | 1 / 48 |
| the same, first 0.5 s (`--first-s 0.5`, 26 Nov 2026) | 0 / 48 | 1 / 48 |
| coughs (the examiner's generator, 6 draws) | 0 / 6 | 6 / 6 |

Unprompted, "mm-hmm" was "Mm-ma.", "and then", "And then them." (1 of 6 voices right); prompted,
one Piper rate still gives "And memo.". The aside heard as a backchannel is espeak-ng's "Honey,
did you" ("Uh-huh."; unprompted "I'll get it."), at 0.5 s as at 0.6 s: the system would then talk
over it and yield at `overlap_yield_max_ms`, not at once. A cough, were the VAD to take it for speech, is "You"
unprompted (the system would yield) and "Mm-hmm." prompted (it goes on). Mean recognition time
per phrase: 0.06 s either way.
"""

from __future__ import annotations

import argparse
import random
import time

import numpy as np
from tqdm import tqdm

from examiner.task_sets import ASIDES, INTERRUPTIONS, cough
from examiner.voices import VOICES, speak
from studies.systems.components import WhisperASR
from studies.systems.predictive import PredictiveSettings, _not_taking_the_floor

SAMPLE_RATE = 16000
PROMPTED_BACKCHANNELS = ("mm-hmm", "uh-huh", "yeah", "right", "okay")
OTHER_BACKCHANNELS = ("mhm", "yep", "uh huh, yeah", "oh okay", "sure", "I see")
SHORT_FLOOR_TAKING = ("wait", "stop", "no", "hold on", "sorry?", "what?", "excuse me", "honey",
                      "wait, sorry", "no, no", "uh, wait", "hang on")
FIRST_S = 0.6  # what is heard of a longer overlap at `overlap_yield_ms`
FLOOR_TAKING = "short floor-taking words (12)"
COUGHS = "coughs (the examiner's generator, 6 draws)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompt", default=PredictiveSettings().overlap_prompt,
                        help="Whisper's prompt for overlaps (default: the system's)")
    parser.add_argument("--show", action="store_true", help="print every phrase misjudged, with its words")
    parser.add_argument("--first-s", type=float, default=FIRST_S,
                        help=f"how much of the interruptions and asides is heard (default {FIRST_S} s: at "
                             "`overlap_yield_ms`; 0.5: at `overlap_short_ms`, where a backchannel is talked over)")
    args = parser.parse_args()
    first_group = f"interruptions and asides, first {args.first_s:g} s (8)"
    asr = WhisperASR()
    pad = np.zeros(int(0.1 * SAMPLE_RATE), dtype=np.float32)
    groups = {
        "backchannels the prompt spells (5)": (PROMPTED_BACKCHANNELS, None),
        "other backchannels (6)": (OTHER_BACKCHANNELS, None),
        FLOOR_TAKING: (SHORT_FLOOR_TAKING, None),
        first_group: (INTERRUPTIONS + ASIDES, args.first_s),
    }
    jobs = [(group, text, voice, cut) for group, (texts, cut) in groups.items() for text in texts for voice in VOICES]
    groups[COUGHS] = ((), None)
    jobs += [(COUGHS, f"cough {k}", None, None) for k in range(len(VOICES))]
    kept = {group: [0, 0, 0] for group in groups}  # unprompted, prompted, count
    seconds = [0.0, 0.0]
    for group, text, voice, cut in tqdm(jobs, desc="phrases", unit="phrase"):
        audio = cough(random.Random(int(text.split()[1]))) if voice is None else speak(text, voice)
        if cut is not None:
            audio = audio[: int(cut * SAMPLE_RATE)]
        audio = np.concatenate([pad, audio, pad])
        for i, prompt in enumerate((None, args.prompt)):
            start = time.perf_counter()
            heard = asr.transcribe(audio, prompt)
            seconds[i] += time.perf_counter() - start
            judged = _not_taking_the_floor(heard)
            kept[group][i] += judged
            if args.show and judged != (group not in (FLOOR_TAKING, first_group)):
                tqdm.write(f"{'prompted' if prompt else 'plain':8s} {voice.label if voice else '':28s} {text!r} "
                           f"heard {heard!r}")
        kept[group][2] += 1
    print("| sounds (phrases x 6 voices) | no prompt | prompt |\n|---|---|---|")
    for group, (plain, prompted, n) in kept.items():
        print(f"| {group} | {plain} / {n} | {prompted} / {n} |")
    print(f"mean recognition time per phrase: {seconds[0] / len(jobs):.3f} s unprompted, "
          f"{seconds[1] / len(jobs):.3f} s prompted")


if __name__ == "__main__":
    main()
