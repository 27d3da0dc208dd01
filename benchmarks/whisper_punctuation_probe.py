"""Is the recogniser's own final punctuation evidence of a finished turn? (issue 75: the predictive
kind's late answers are misheard questions the completion cue reads as cut.)

    PYTHONPATH=. HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/whisper_punctuation_probe.py --out F.json

The fitting utterances of `lexical_completion_fit.py` (@ e518010): 40 requests and questions, each
whole and cut at two random word positions (seed 0), in the examiner's six fitting voices, 100 ms of
silence after each, heard by the packaged Whisper tiny.en as the systems hear a turn. Per
utterance: the transcript, its last mark ("?", ".", "!", "," or none) and the completion cue's
P(sentence end) of its words. Prints the share of finished and of cut utterances by last mark,
and a logistic fit of finished ~ log P(sentence end) + [ends "?"] + [ends "."], cross-validated
by sentence (log loss, ROC-AUC), against log P alone.
"""

from __future__ import annotations

import argparse
import json
import math
import random
from collections import Counter

import numpy as np
from tqdm import tqdm

from examiner.voices import VOICES, speak
from systems.lexical_completion import load_lexical_completion, spoken_words
from systems.recognition import WhisperASR

SENTENCES = (
    'Could you find me a cheap hotel near the train station?',
    'I need to cancel my dentist appointment on Thursday.',
    'What is the fastest way to get to the airport from here?',
    'Please set an alarm for six thirty tomorrow morning.',
    'How do you say thank you in Japanese?',
    'I am looking for a birthday present for my father.',
    'Which of these two laptops has the better battery?',
    'Remind me to call the plumber after lunch.',
    'Do you know any good vegetarian recipes with lentils?',
    'My flight was delayed and I missed the connection in Chicago.',
    'Can I bring my dog on the bus?',
    'What would you recommend for a headache that will not go away?',
    "Tell me the score of last night's basketball game.",
    'I think the printer in the office is broken again.',
    'Where is the nearest pharmacy that is open on Sunday?',
    'We are planning a picnic for about twenty people.',
    'How long should I let the bread dough rise?',
    'Is it going to snow in Denver this week?',
    'I would love to learn how to play the guitar.',
    'Could you explain the difference between a virus and a bacterium?',
    'The kids want to watch a movie about dinosaurs tonight.',
    'Send a message to Anna saying I will be ten minutes late.',
    'What are the opening hours of the public library?',
    'I lost my wallet somewhere between the gym and my car.',
    'How many calories are in a banana?',
    'Please add milk and eggs to my shopping list.',
    'Why does my phone battery drain so quickly?',
    "We need a table for four at eight o'clock.",
    'Can you translate this sentence into Spanish for me?',
    'I have been feeling tired every afternoon for a week.',
    'What is a good name for a small grey kitten?',
    'Book me a taxi to the conference center.',
    'How far is the moon from the earth?',
    'My neighbour keeps parking his truck in front of our garage.',
    'Do I need a visa to travel to Canada?',
    'Play some relaxing music while I cook dinner.',
    'What time does the last train to Boston leave?',
    'I am trying to decide between studying biology and chemistry.',
    'Which vegetables grow well in a shady garden?',
    'Could you check whether my package has been delivered?',
)
RATE = 16000


def utterances(seed: int = 0) -> list[tuple[int, str, bool]]:
    rng = random.Random(seed)
    rows = []
    for k, sentence in enumerate(SENTENCES):
        words = sentence.split()
        rows.append((k, sentence, True))
        rows += [(k, " ".join(words[:n]), False) for n in rng.sample(range(2, len(words)), 2)]
    return rows


def last_mark(text: str) -> str:
    text = text.strip()
    return text[-1] if text and text[-1] in "?.!," else ""


def logistic_cv(x: np.ndarray, y: np.ndarray, groups: np.ndarray, folds: int = 10) -> tuple[float, float]:
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import log_loss, roc_auc_score

    predicted = np.zeros(len(y))
    for fold in range(folds):
        test = groups % folds == fold
        model = LogisticRegression(C=1e4).fit(x[~test], y[~test])
        predicted[test] = model.predict_proba(x[test])[:, 1]
    return log_loss(y, predicted), roc_auc_score(y, predicted)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out")
    args = parser.parse_args()
    asr, completion = WhisperASR(), load_lexical_completion()
    rows = []
    todo = [(voice, u) for voice in VOICES for u in utterances()]
    for voice, (k, text, finished) in tqdm(todo, desc="utterances"):
        audio = np.concatenate([speak(text, voice), np.zeros(RATE // 10, np.float32)])
        heard = asr.transcribe(audio)
        words = spoken_words(heard)
        p_end = sum(completion.sentence_ends(words).values()) if words else 0.0
        rows.append({"voice": voice.label, "sentence": k, "text": text, "finished": finished,
                     "question": SENTENCES[k].endswith("?"), "heard": heard, "mark": last_mark(heard), "p_end": p_end})
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    for question in (True, False):
        for finished in (True, False):
            chosen = [r for r in rows if r["question"] == question and r["finished"] == finished]
            marks = Counter(r["mark"] or "none" for r in chosen)
            print(f"{'questions' if question else 'statements'} {'finished' if finished else 'cut'} ({len(chosen)}):",
                  ", ".join(f"{m} {n}" for m, n in marks.most_common()))
    low = [r for r in rows if r["p_end"] < 0.05]
    for finished in (True, False):
        chosen = [r for r in low if r["finished"] == finished]
        marks = Counter(r["mark"] or "none" for r in chosen)
        print(f"P(end) < 0.05, {'finished' if finished else 'cut'} ({len(chosen)}):",
              ", ".join(f"{m} {n}" for m, n in marks.most_common()))
    y = np.array([r["finished"] for r in rows], dtype=int)
    groups = np.array([r["sentence"] for r in rows])
    log_p = np.array([[math.log(max(r["p_end"], 1e-6))] for r in rows])
    marks = np.array([[r["mark"] == "?", r["mark"] in ".!"] for r in rows], dtype=float)
    for name, x in (("log P", log_p), ("log P + marks", np.hstack([log_p, marks])), ("marks", marks)):
        loss, auc = logistic_cv(x, y, groups)
        print(f"{name}: cross-validated log loss {loss:.4f}, ROC-AUC {auc:.3f}")
    from sklearn.linear_model import LogisticRegression
    model = LogisticRegression(C=1e4).fit(np.hstack([log_p, marks]), y)
    print("fit on all: intercept %.3f, log P %.3f, '?' %.3f, '.' %.3f" % (model.intercept_[0], *model.coef_[0]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
