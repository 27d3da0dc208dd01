"""Does Smart Turn help the `predictive` system's turn-end decision? Measured on utterances written
for this probe (not the examiner's sentences), spoken by every packaged voice (examiner.voices).

    .venv/bin/python benchmarks/predictive_turn_end_cues.py

Each utterance is either finished (a question or a request) or cut before its end ("... going to
the"). For each: faster-whisper's transcript (the packaged tiny.en, as the system hears it), the
turn-end model's prior from its last words with the judge's P(T) fixed at 0.3 (its median at
shifts on Switchboard) and the question cue of the whole transcript, Smart Turn v3.2's P(complete) on the audio, and the silence after which
P(turn end) reaches the system's threshold (0.8; 0.12 s at the earliest, 4 s at the latest), for
Smart Turn weights 0 (not used), 0.5 and 1 (its log-odds added to the prior's), with the words
read three ways: the turn-end model's last words and question cue alone (`last-words`, the
system without `lexical_completion`); the same with the lexical completion cue's likelihood
ratio as evidence against a turn end only (`last-words, completion veto`, the default;
`studies.systems.lexical_completion`, fitted on other sentences by
`benchmarks/lexical_completion_fit.py`); and the completion cue's full ratio on the judge's
prior without the words (`judge, completion`).
Finished: the take-over time should be short. Cut: it should be longer than a pause (the
examiner's pauses are 1-2 s), so the share taken within 1.5 s should be low.
"""

from __future__ import annotations

import numpy as np

from examiner.voices import VOICES, speak
from judge.turn_end import load_turn_end_model, logit, posterior, sigmoid
from speech.smart_turn import SmartTurn
from studies.systems.cascaded import CascadedSettings, load_components
from studies.systems.lexical_completion import (load_lexical_completion, log_likelihood_ratio,
                                                log_ratio_against_turn_end)
from studies.systems.predictive import PredictiveSettings

CUT = ["I would like to order a pizza with", "Yesterday my brother and I went to the", "Can you help me find a",
       "The thing I like most about summer is", "We should probably leave before the", "How much does it cost to",
       "My favourite book when I was a child was", "Is there a good place near here for"]
FINISHED = ["Can you help me find a good restaurant?", "What time does the museum open tomorrow?",
            "I would like to order a pizza with mushrooms.", "Could you recommend a podcast about history?",
            "How much does it cost to fly to Paris?", "Tell me a fun fact about octopuses.",
            "Is there a good place near here for coffee?", "Why do cats like boxes so much?"]
THRESHOLD = PredictiveSettings().shift_threshold
# the earliest decision of the figures in studies/README.md (measured with min_gap_ms 120; the default is 60)
EARLIEST, LATEST, JUDGE_P_T = 0.12, PredictiveSettings().max_silence_ms / 1000, 0.3


def take_time(model, prior: float) -> float:
    """Seconds of silence until P(turn end) >= THRESHOLD (LATEST if never)."""
    for s in np.arange(EARLIEST, LATEST, 0.04):
        if posterior(prior, model.pause_survival(float(s))) >= THRESHOLD:
            return float(s)
    return LATEST


def main() -> int:
    model = load_turn_end_model()
    completion = load_lexical_completion()
    smart_turn = SmartTurn()
    _, asr, _, _ = load_components(CascadedSettings())
    rows = []
    for voice in VOICES:
        for finished, texts in ((True, FINISHED), (False, CUT)):
            for text in texts:
                audio = np.concatenate([speak(text, voice), np.zeros(1600, dtype=np.float32)])
                heard = asr.transcribe(audio)
                words = model.prior_shift(model.last_words(heard), JUDGE_P_T, utterance=heard)
                p_end = completion.p_end(heard)
                priors = {"last-words": words,
                          "last-words, completion veto": sigmoid(logit(words) + log_ratio_against_turn_end(p_end)),
                          "judge, completion": sigmoid(logit(model.prior_shift(None, JUDGE_P_T))
                                                       + log_likelihood_ratio(p_end))}
                rows.append((voice.label, finished, priors, smart_turn.predict([audio])[0]))
    print(f"{len(rows)} utterances ({len(VOICES)} voices); take-over time = silence until P(turn end) >= {THRESHOLD}")
    print("| words | Smart Turn weight | finished: median take-over s | finished: within 0.2 s | within 0.5 s "
          "| cut: taken within 1.5 s |")
    print("|---|---|---|---|---|---|")
    for words in rows[0][2]:
        for weight in (0.0, 0.5, 1.0):
            times = {True: [], False: []}
            for _, finished, priors, p in rows:
                p = min(max(p, 1e-3), 1 - 1e-3)
                times[finished].append(take_time(model, sigmoid(logit(priors[words]) + weight * logit(p))))
            done, cut = np.array(times[True]), np.array(times[False])
            print(f"| {words} | {weight:g} | {np.median(done):.2f} | {np.mean(done <= 0.2):.0%} | {np.mean(done <= 0.5):.0%} "
                  f"| {np.mean(cut <= 1.5):.0%} |")
    st = np.array([p for _, _, _, p in rows])
    fin = np.array([f for _, f, _, _ in rows])
    print(f"Smart Turn P(complete): finished median {np.median(st[fin]):.2f}, cut median {np.median(st[~fin]):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
