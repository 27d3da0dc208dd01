"""Does the cascade's own LLM tell a turn end from a pause better than the turn-end model's words?

    PYTHONPATH=. .venv/bin/python benchmarks/turn_end_llm_cue.py [--swb /tmp/swb] [--split val]
        [--conversations 40] [--silences 1500] [--model DIR]

The cue tried: the packaged SmolLM2-135M-Instruct's log P(<|im_end|>) right after the caller's
words so far, in the chat template (the way an LLM-based end-of-utterance detector reads a chat
model), against `judge.turn_end`'s inputs: the last two words (P(shift | words)) and the question cue.
Silences: Switchboard mutual silences of at least 120 ms after a speaker's IPU
(`judge.turn_end.conversation_silences`), shift or hold, from conversations of `--split` that the
question cue was not fitted on (shuffled, seed 0), `--silences` of them at random (seed 1).
Prints ROC-AUC per cue, and of words + question + LLM in a 5-fold logistic regression.

Measured on the 2-core machine (24 Nov 2026), `--split val` (the default: 1500 silences of 40
validation conversations the question cue was not fitted on, 25.7 % shifts): LLM alone ROC-AUC
0.651, words 0.760, words + question 0.798, all three 0.802. (A first look on 40 *training*
conversations, whose silences the word tables were counted on: 0.658, 0.858, 0.869, 0.871.) The
LLM adds 0.004 to what the words and the question cue carry, at about 250 ms of one core a
silence, so the predictive system does not use it.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from judge.turn_end import conversation_silences, load_turn_end_model, logit  # noqa: E402
from turntaking.switchboard import conversation_ids, load_conversation  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--swb", default="/tmp/swb")
    parser.add_argument("--split", default="val")
    parser.add_argument("--conversations", type=int, default=40)
    parser.add_argument("--silences", type=int, default=1500)
    parser.add_argument("--model", default=None, help="the LLM's transformers directory (default: the one the "
                        "cascade converted under $TURNTAKING_MODELS or /tmp/turntaking-test-models)")
    args = parser.parse_args()

    import torch
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import cross_val_predict
    from tqdm import tqdm
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(1)
    models = Path(os.environ.get("TURNTAKING_MODELS") or "/tmp/turntaking-test-models")
    found = sorted(models.glob("smollm2-135m-instruct-*"))
    if not args.model and not found:
        parser.error(f"no converted SmolLM2 under {models}: give --model")
    model_dir = args.model or str(found[0])
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    llm = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    end_id = tokenizer.convert_tokens_to_ids("<|im_end|>")
    turn_end = load_turn_end_model()

    def log_p_end(text: str) -> float:
        ids = list(tokenizer.apply_chat_template([{"role": "user", "content": text}], tokenize=True)["input_ids"])
        ids = ids[:max(i for i, t in enumerate(ids) if t == end_id)]  # the user's turn left open
        with torch.no_grad():
            logits = llm(torch.tensor([ids])).logits[0, -1]
        return float(torch.log_softmax(logits, -1)[end_id])

    fitted_on = set(turn_end.questions.provenance.get("conversation_ids") or ()) if turn_end.questions else set()
    ids = [c for c in conversation_ids(args.swb, args.split) if c not in fitted_on]
    random.Random(0).shuffle(ids)
    silences = [s for c in ids[:args.conversations]
                for s in conversation_silences(load_conversation(args.swb, c), None) if s.utterance]
    random.Random(1).shuffle(silences)
    silences = silences[:args.silences]
    y = np.array([s.shift for s in silences], dtype=int)
    cues = {"LLM log P(end)": [], "words": [], "words + question": []}
    for s in tqdm(silences, desc="silences", unit="silence"):
        cues["LLM log P(end)"].append(log_p_end(" ".join(s.utterance[-25:])))
        cues["words"].append(turn_end.prior_from_tokens(s.words, None, None))
        cues["words + question"].append(turn_end.prior_from_tokens(s.words, None, s.utterance))
    print(f"{len(y)} silences of {args.conversations} {args.split} conversations, {y.mean():.3f} shifts")
    for name, values in cues.items():
        print(f"{name}: ROC-AUC {roc_auc_score(y, values):.3f}")
    x = np.column_stack([[logit(p) for p in cues["words + question"]], cues["LLM log P(end)"]])
    p = cross_val_predict(LogisticRegression(), x, y, cv=5, method="predict_proba")[:, 1]
    print(f"words + question + LLM (5-fold logistic): ROC-AUC {roc_auc_score(y, p):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
