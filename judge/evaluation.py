"""Evaluate a judge on Switchboard conversations: per-label ROC-AUC and F1, future-activity NLL.

ROC-AUC is one-vs-rest over all 40 ms chunks of all conversations (the label probabilities of
chunk i given chunks < i). F1 uses the single-label decision of the reference (section 4.9 / A.4):
the labels' thresholds are checked in priority order C 0.2 > NA 0.45 > I 0.4 > BC 0.4 > T 0.4 and
the first label whose probability exceeds its threshold is chosen; argmax when none does.
`overall` is the macro average over the five labels. The future-activity NLL is the mean, over
frames with a whole 2 s horizon, of -log p(observed class) in nats.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from judge.labels import LABELS, chunk_states
from judge.model import load_checkpoint, predict_many
from judge.targets import (
    FRAME_RATE,
    future_activity_classes,
    tbu_frame_mask,
    turn_boundary_units,
)
from turntaking import switchboard

# sklearn.metrics is imported where it is used: it takes about half a second, which most commands never need.

DECISION_THRESHOLDS = (("C", 0.2), ("NA", 0.45), ("I", 0.4), ("BC", 0.4), ("T", 0.4))


class EvaluationError(ValueError):
    """Bad evaluation input."""


def roc_auc(scores: np.ndarray, positive: np.ndarray) -> float:
    """Area under the ROC curve (scikit-learn: ties count half); NaN without both classes, where it
    is undefined (a label absent from a small validation set must not stop the report)."""
    from sklearn.metrics import roc_auc_score
    positive = np.asarray(positive, dtype=bool)
    if positive.all() or not positive.any():
        return float("nan")
    return float(roc_auc_score(positive, scores))


def single_label_decisions(probs: np.ndarray, thresholds=DECISION_THRESHOLDS) -> np.ndarray:
    """(N,) label index per row of (N, 5) probabilities: first label over its threshold, in order."""
    probs = np.asarray(probs)
    decided = np.argmax(probs, axis=1)
    chosen = np.zeros(len(probs), dtype=bool)
    for name, threshold in thresholds:
        k = LABELS.index(name)
        hit = ~chosen & (probs[:, k] > threshold)
        decided[hit] = k
        chosen |= hit
    return decided


def label_metrics(probs: np.ndarray, labels: np.ndarray, thresholds=DECISION_THRESHOLDS) -> dict:
    from sklearn.metrics import f1_score
    decided = single_label_decisions(probs, thresholds)
    auc = {name: roc_auc(probs[:, k], labels == k) for k, name in enumerate(LABELS)}
    f1 = {name: float(f1_score(labels == k, decided == k, zero_division=0.0)) for k, name in enumerate(LABELS)}
    auc["overall"] = float(np.nanmean([auc[n] for n in LABELS]))
    f1["overall"] = float(np.mean([f1[n] for n in LABELS]))
    return {"roc_auc": auc, "f1": f1}


def evaluate(
    checkpoint=None,
    corpus_dir=None,
    split_list=None,
    corpus: str = "switchboard",
    max_conversations: int = 0,
    thresholds=DECISION_THRESHOLDS,
) -> dict:
    """Metrics of a judge checkpoint (None = packaged default) on a list of conversations
    (default: the corpus' val split)."""
    if corpus != "switchboard":
        raise EvaluationError(f"unknown corpus {corpus!r}: supported switchboard")
    if corpus_dir is None or not Path(corpus_dir).is_dir():
        raise EvaluationError(f"corpus directory not found: {corpus_dir}")
    try:
        ids = switchboard.conversation_ids(corpus_dir, split=None if split_list else "val", split_list=split_list)
        if max_conversations:
            ids = ids[:max_conversations]
        convs = [switchboard.load_conversation(corpus_dir, i) for i in ids]
    except switchboard.CorpusError as exc:
        raise EvaluationError(str(exc)) from None
    if not convs:
        raise EvaluationError("no conversations to evaluate")
    model = load_checkpoint(checkpoint)
    predictions = predict_many(model, convs)

    probs, labels, nll, nll_tbu = [], [], [], []
    for conv, pred in zip(convs, predictions):
        labels.append(chunk_states(conv).labels)
        probs.append(pred.label_probs)
        va = conv.frames(FRAME_RATE)
        frame_nll = pred.frame_nll(future_activity_classes(va))
        tbu = tbu_frame_mask(turn_boundary_units(conv), va.shape[1])
        nll.append(frame_nll[~np.isnan(frame_nll)])
        nll_tbu.append(frame_nll[tbu & ~np.isnan(frame_nll)])
    labels_all = np.concatenate(labels)
    result = label_metrics(np.concatenate(probs), labels_all, thresholds)
    result["future_activity_nll"] = float(np.mean(np.concatenate(nll)))
    result["future_activity_nll_tbu"] = float(np.mean(np.concatenate(nll_tbu)))
    result["n_conversations"] = len(convs)
    result["n_chunks"] = int(len(labels_all))
    result["label_counts"] = dict(zip(LABELS, np.bincount(labels_all, minlength=len(LABELS)).tolist()))
    result["thresholds"] = dict(thresholds)
    result["checkpoint"] = str(checkpoint) if checkpoint else "packaged default"
    return result
