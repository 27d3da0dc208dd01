"""Fits the `predictive` system's lexical completion cue (studies.systems.lexical_completion) and
compares the turn-end priors it could feed, on utterances written for the fit.

    PYTHONPATH=. .venv/bin/python benchmarks/lexical_completion_fit.py [--out /tmp/lexical_fit.json]

SENTENCES (requests and questions to an assistant, not those of `predictive_turn_end_cues.py`
nor the examiner's) are spoken whole and cut at two random word positions (seed 0), in each of
the examiner's six voices (examiner.voices), and transcribed by the packaged Whisper tiny.en, as
the system hears them; 100 ms of silence follows each. Per utterance: the cue's P(sentence end),
Smart Turn v3.2's P(complete), and the turn-end model's priors with the judge's P(T) fixed at 0.3
(its median at Switchboard shifts): from the last two words and the question cue (the system's
prior until now) and from the judge alone.

Prints the logistic fit of finished ~ log P(sentence end) (the module's INTERCEPT and SLOPE),
ROC-AUC per cue and per voice, and for each way of combining them the silence after which
P(turn end) reaches the system's threshold (0.8): the share of finished utterances taken within
0.2 s and of cut ones taken within 1.5 s (the examiner's pauses last 1-2 s). A random cut may
leave a complete sentence ("I need to cancel"), so some "cut" utterances are finished ones.

Measured on the 2-core machine (25 Nov 2026; 720 utterances, 240 finished): fit 2.118 + 1.229 *
log P(sentence end) (int8 weights); ROC-AUC completion 0.927 (Piper voices 0.970-0.971, espeak-ng
0.853-0.909), Smart Turn 0.608, words + question prior 0.563. Taken within 0.2 s / cut taken
within 1.5 s: the system until now 48 % / 73 %; the default (the completion only as evidence
against a turn end) 48 % / 39 %; the completion's full ratio on the judge's prior with Smart Turn
63 % / 38 %. The full ratio is not the default: a finished sentence is not a turn end when the
caller goes on (a story told sentence by sentence), and these utterances have no such case.

`--cues FILE --reread-words` reads the word cues again from the transcripts of a run kept with
`--out` (the audio's cues kept): how a change to the language model's reading was measured
(studies.systems.lexical_completion, "tried and not kept").
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from examiner.voices import VOICES, speak  # noqa: E402
from judge.turn_end import load_turn_end_model, logit, sigmoid  # noqa: E402
from speech.smart_turn import SmartTurn  # noqa: E402
from studies.systems.cascaded import CascadedSettings, load_components  # noqa: E402
from studies.systems.lexical_completion import (  # noqa: E402
    load_lexical_completion, log_likelihood_ratio, log_ratio_against_turn_end)

# the system's decision rule, as the check on other sentences applies it (this script's directory is on sys.path)
from predictive_turn_end_cues import JUDGE_P_T, take_time  # noqa: E402

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


def utterances(seed: int = 0) -> list[tuple[str, bool]]:
    rng = random.Random(seed)
    rows = []
    for sentence in SENTENCES:
        words = sentence.split()
        rows.append((sentence, True))
        rows += [(" ".join(words[:k]), False) for k in rng.sample(range(2, len(words)), 2)]
    return rows


def measure(texts: list[tuple[str, bool]] | None = None) -> list[dict]:
    """Per (text, finished) in every voice (default: `utterances()`): what the system would read."""
    from tqdm import tqdm

    texts = utterances() if texts is None else texts
    model = load_turn_end_model()
    completion = load_lexical_completion()
    smart_turn = SmartTurn()
    _, asr, _, _ = load_components(CascadedSettings())
    rows = []
    for voice in tqdm(VOICES, desc="voices"):
        for text, finished in texts:
            audio = np.concatenate([speak(text, voice), np.zeros(1600, dtype=np.float32)])
            heard = asr.transcribe(audio)
            ends = completion.sentence_ends(heard)
            rows.append({"voice": voice.label, "text": text, "finished": finished, "heard": heard,
                         "p_end": sum(ends.values()), "p_question": ends["?"],
                         "smart_turn": float(smart_turn.predict([audio])[0]),
                         "prior_words": model.prior_shift(model.last_words(heard), JUDGE_P_T, utterance=heard),
                         "prior_judge": model.prior_shift(None, JUDGE_P_T)})
    return rows


def reread_words(rows: list[dict]) -> list[dict]:
    """The rows with their word cues read again from the stored transcripts (the audio's cues, Smart
    Turn's and the recogniser's, kept): for a change to the language model's reading alone."""
    model = load_turn_end_model()
    completion = load_lexical_completion()
    out = []
    for row in rows:
        ends = completion.sentence_ends(row["heard"])
        out.append({**row, "p_end": sum(ends.values()), "p_question": ends["?"],
                    "prior_words": model.prior_shift(model.last_words(row["heard"]), JUDGE_P_T, utterance=row["heard"])})
    return out


def clipped_logit(p: float) -> float:
    return logit(min(max(p, 1e-3), 1 - 1e-3))


COMBINATIONS = {
    "words + question prior, Smart Turn (the system until now)":
        lambda r: logit(r["prior_words"]) + clipped_logit(r["smart_turn"]),
    "words + question prior, completion against a turn end only, Smart Turn (the default)":
        lambda r: logit(r["prior_words"]) + log_ratio_against_turn_end(r["p_end"]) + clipped_logit(r["smart_turn"]),
    "judge prior + completion": lambda r: logit(r["prior_judge"]) + log_likelihood_ratio(r["p_end"]),
    "judge prior + completion + Smart Turn x 0.5":
        lambda r: logit(r["prior_judge"]) + log_likelihood_ratio(r["p_end"]) + 0.5 * clipped_logit(r["smart_turn"]),
    "judge prior + completion + Smart Turn":
        lambda r: logit(r["prior_judge"]) + log_likelihood_ratio(r["p_end"]) + clipped_logit(r["smart_turn"]),
    "words + question prior + completion + Smart Turn":
        lambda r: logit(r["prior_words"]) + log_likelihood_ratio(r["p_end"]) + clipped_logit(r["smart_turn"]),
}


def report(rows: list[dict]) -> None:
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    y = np.array([r["finished"] for r in rows])
    log_p = np.log(np.maximum([r["p_end"] for r in rows], 1e-6))[:, None]
    fit = LogisticRegression().fit(log_p, y)
    print(f"{len(rows)} utterances, {y.mean():.3f} finished")
    print(f"fit: logit P(finished) = {fit.intercept_[0]:.3f} + {fit.coef_[0][0]:.3f} * log P(sentence end)")
    cues = {"completion": "p_end", "Smart Turn": "smart_turn", "words + question prior": "prior_words"}
    print("ROC-AUC, finished against cut: " + ", ".join(
        f"{name} {roc_auc_score(y, [r[key] for r in rows]):.3f}" for name, key in cues.items()))
    for voice in dict.fromkeys(r["voice"] for r in rows):
        mine = [r for r in rows if r["voice"] == voice]
        yv = [r["finished"] for r in mine]
        print(f"  {voice}: " + ", ".join(f"{name} {roc_auc_score(yv, [r[key] for r in mine]):.3f}"
                                        for name, key in cues.items()))
    model = load_turn_end_model()
    print("| prior of P(turn end) | ROC-AUC | finished: median take-over s | finished: within 0.2 s | cut: within 1.5 s |")
    print("|---|---|---|---|---|")
    for name, combine in COMBINATIONS.items():
        score = np.array([combine(r) for r in rows])
        times = np.array([take_time(model, sigmoid(v)) for v in score])
        print(f"| {name} | {roc_auc_score(y, score):.3f} | {np.median(times[y]):.2f} | {np.mean(times[y] <= 0.2):.0%} "
              f"| {np.mean(times[~y] <= 1.5):.0%} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="also write the per-utterance cues (JSON)")
    parser.add_argument("--cues", type=Path, default=None, help="report from cues written before by --out")
    parser.add_argument("--reread-words", action="store_true",
                        help="with --cues: read the word cues again from the stored transcripts")
    args = parser.parse_args()
    rows = json.loads(args.cues.read_text()) if args.cues else measure()
    if args.reread_words:
        rows = reread_words(rows)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))
    report(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
