"""How the question cue (`judge.questions`) should enter the turn-end model's regression, chosen on
TRAINING conversations only: logit P(question), P(question), or both, next to the words and the
judge's P(T). Measures the 5-fold (by conversation) cross-validated log loss and ROC-AUC on the
silences of the first 300 training conversations; the question model is the one `fit-turn-end`
fits (dialog acts of every second validation conversation with dialog-act files).

    PYTHONPATH=. .venv/bin/python benchmarks/turn_end_question_input.py /tmp/swb   # ~3 min, 1 CPU
"""

from __future__ import annotations

import sys

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss, roc_auc_score

from judge.model import load_checkpoint
from judge.turn_end import (
    N_FOLDS,
    cross_fitted_p_words,
    fit_question_cue,
    logit,
    question_training_conversations,
)
from judge.turn_end_fitting import switchboard_silences
from turntaking.switchboard import conversation_ids

CONVERSATIONS = 300
SHRINKAGE = 10.0  # the packaged model's choice (fit-turn-end)


def main(root: str) -> None:
    ids = conversation_ids(root, "train")[:CONVERSATIONS]
    questions = fit_question_cue(root, question_training_conversations(root, ids))
    pairs = switchboard_silences(root, ids, load_checkpoint())
    silences = [s for _, s in pairs]
    fold = np.array([i % N_FOLDS for i, _ in pairs])
    y = np.array([s.shift for s in silences], dtype=int)
    words = np.array([logit(p) for p in cross_fitted_p_words(silences, fold, SHRINKAGE)])
    judge = np.array([logit(s.judge_p_t) for s in silences])
    q_logit = np.array([questions.logit_tokens(s.utterance) for s in silences])
    q_p = 1.0 / (1.0 + np.exp(-q_logit))
    print(f"{len(silences)} silences; mean P(question) at shifts {q_p[y == 1].mean():.3f}, at holds "
          f"{q_p[y == 0].mean():.3f}")
    variants = {"no question cue": [words, judge], "logit": [words, judge, q_logit],
                "P": [words, judge, q_p], "logit + P": [words, judge, q_logit, q_p]}
    for name, cols in variants.items():
        x = np.stack(cols, axis=1)
        p = np.zeros(len(y))
        for f in range(N_FOLDS):
            lr = LogisticRegression(C=1.0, max_iter=1000).fit(x[fold != f], y[fold != f])
            p[fold == f] = lr.predict_proba(x[fold == f])[:, 1]
        print(f"{name:16s} cross-validated log loss {log_loss(y, p):.5f}, ROC-AUC {roc_auc_score(y, p):.4f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/swb")
