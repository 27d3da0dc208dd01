"""Lexical completion: does what the caller said so far end a sentence? The `predictive` system's
turn-end cue from the words, read from the packaged language model.

The cue is the model's probability that the next token after the caller's words (punctuation
stripped, as Whisper's own final "." or "?" is a guess, not evidence) is a sentence end: ".", "?"
or "!". "Could you find me a cheap hotel near the train station" gets about 0.24, "Could you find
me a cheap hotel near the" about 0.001. It is read as a likelihood ratio, P(p | finished) /
P(p | cut), by a logistic fit of log p (INTERCEPT, SLOPE).

Where the numbers come from (docs/dialogue-systems.md, "What was tried": `lexical_completion_fit.py`
@ e518010): 40 requests and questions written for the fit, each whole and cut at two random
word positions, spoken in the examiner's six voices and transcribed by the packaged Whisper tiny.en (720
utterances, a third of them finished). ROC-AUC of finished against cut there: this cue 0.93; the
turn-end model's last two words and question cue (fitted on Switchboard's conversations, where a
caller's complete sentence is often not the end of their turn) 0.56; Smart Turn 0.61. Checked on
the other sentences of `predictive_turn_end_cues.py` @ f2d7999 (the same table).

Below P = 0.01 the linear fit claims more than the fit's utterances show (log ratio -7 at
P = 1e-4..1e-3, where 2 of 89 were finished sentences the recogniser garbled: empirically -2.9).
Capping it there was measured on the same utterances and not kept: it saves 0.4 % of finished
utterances from the 4 s fallback and lets Smart Turn's odds take 12 points more of the cut ones
within 1.5 s.

Tried and not kept: the words read as a user's chat message (after the model's
"<|im_start|>user" line). It tells finished from cut better on the fit's utterances (ROC-AUC 0.943
against 0.928; the system's whole prior 0.840 against 0.809, with the question cue refitted on
Switchboard's training silences: A = 0.856, B = 0.124, validation log loss 0.4160 against
0.4185), but chat users write fragments, and it reads cut speech as finished: "Can you remind me
what the weather" gets P(end) 0.0055 against 0.0001. In real calls (the predictive system alone,
the idle machine) the pause TOR of 12 examples (seed 13) rose from 0.083 to 0.333, and on the
twelve questions written after the system (20 examples, seed 21) FDB latency went from p50 0.29 /
p90 0.58 s to 0.24 / 1.07 s: garbled questions ("What?", "a recipe for the hand and red") were
held longer. Two more readings, measured on the same utterances and not kept: the recogniser's
own confidence (Whisper's mean token log-probability) beside log p (cross-validated over
sentences, log loss 0.350 -> 0.334, ROC-AUC 0.924 -> 0.928; it softens the evidence of a garbled
transcript by under 1 nat, too little to let one through sooner), and "'s" read as "s" (the
recogniser's spelling of "rainbows" as "rainbow's" costs one of the questions written after the
system P(end) 0.001; read so in the fit's 30 utterances with "'s", the ROC-AUC over all 720
falls, 0.928 -> 0.926).

The runtime: the packaged SmolLM2-135M-Instruct's CTranslate2 copy (the one the cascade converts
once), weights quantised to int8 at load on one thread: about 24 ms for a short utterance here
(65 ms in float32, whose AUC on the fit's utterances is the same to 0.002).
"""

from __future__ import annotations

import math
import re
import threading
from functools import lru_cache

import numpy as np

from systems.models import ctranslate2_llm_dir, llm_location

SENTENCE_ENDS = (".", "?", "!")
# logit P(finished | p) = INTERCEPT + SLOPE * log p on the fit's utterances, of which FIT_FINISHED_SHARE were finished
INTERCEPT, SLOPE, FIT_FINISHED_SHARE = 2.118, 1.229, 1 / 3
P_FLOOR = 1e-6
# log P(shift) ratio of the question cue: QUESTION_INTERCEPT + QUESTION_SLOPE * log P("?"), fitted on
# Switchboard training silences with the turn-end model's prior as an offset (docs/dialogue-systems.md,
# "What was tried": question_end_fit.py @ d319d01)
QUESTION_INTERCEPT, QUESTION_SLOPE = 0.794, 0.113


def spoken_words(text: str) -> str:
    """The words of an ASR text without punctuation, the first capitalised (as a sentence starts)."""
    words = " ".join(re.sub(r"[^A-Za-z0-9' ]", " ", text.replace("-", " ")).split())
    return words[:1].upper() + words[1:]


def log_likelihood_ratio(p_end: float) -> float:
    """log P(p_end | finished) - log P(p_end | cut): the fit's log-odds less its base rate's."""
    base = math.log(FIT_FINISHED_SHARE / (1 - FIT_FINISHED_SHARE))
    return INTERCEPT + SLOPE * math.log(max(p_end, P_FLOOR)) - base


def log_ratio_against_turn_end(p_end: float) -> float:
    """The cue as the `predictive` system reads it: evidence against a turn end only (an
    unfinished sentence holds the floor; a finished one is left to the other cues), <= 0."""
    return min(log_likelihood_ratio(p_end), 0.0)


def question_log_ratio(p_question: float) -> float:
    """The question cue's log likelihood ratio of a turn end, QUESTION_INTERCEPT + QUESTION_SLOPE *
    log P("?"): up to +0.78 after a finished question (P("?") 0.9), 0 at P("?") 0.001, down to -0.77
    where a question mark is all but impossible (a statement, a cut sentence). On Switchboard's
    validation silences it lifts the turn-end prior's ROC-AUC from 0.826 to 0.829; where P("?") >
    0.3, 70 % of silences are turn ends, the prior says 63 %, prior and cue 74 %."""
    return QUESTION_INTERCEPT + QUESTION_SLOPE * math.log(max(p_question, P_FLOOR))


class LexicalCompletion:
    """P(sentence end next | the words so far) from a causal language model (CTranslate2)."""

    def __init__(self, model: str | None = None, data_root=None):
        import ctranslate2
        from transformers import AutoTokenizer

        location = llm_location(model, data_root)
        self.tokenizer = AutoTokenizer.from_pretrained(location)
        self.generator = ctranslate2.Generator(str(ctranslate2_llm_dir(location, data_root)), device="cpu",
                                               compute_type="int8", intra_threads=1)
        self.end_ids = {end: self.tokenizer.encode(end, add_special_tokens=False)[0] for end in SENTENCE_ENDS}
        self._lock = threading.Lock()  # one forward at a time (calls share the model)

    def sentence_ends(self, text: str) -> dict[str, float]:
        """P(the next token is each of ".", "?", "!") after `text`'s words; all 0.0 when it has none."""
        words = spoken_words(text)
        if not words:
            return dict.fromkeys(SENTENCE_ENDS, 0.0)
        tokens = self.tokenizer.convert_ids_to_tokens(self.tokenizer.encode(words, add_special_tokens=False))
        with self._lock:
            logits = np.asarray(self.generator.forward_batch([tokens]))[0, -1].astype(np.float64)
        p = np.exp(logits - logits.max())
        p /= p.sum()
        return {end: float(p[i]) for end, i in self.end_ids.items()}

    def p_end(self, text: str) -> float:
        """P(the next token is ".", "?" or "!") after `text`'s words; 0.0 when it has none."""
        return sum(self.sentence_ends(text).values())

    def p_question(self, text: str) -> float:
        """P(the next token is "?"): the words end a question here."""
        return self.sentence_ends(text)["?"]


@lru_cache(maxsize=2)
def load_lexical_completion(model: str | None = None, data_root=None) -> LexicalCompletion:
    return LexicalCompletion(model, data_root)
