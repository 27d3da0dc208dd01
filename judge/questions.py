"""P(an utterance is a question | its words): a cue for the turn-end model (`judge.turn_end`).

The last two words of "What should I pack for a weekend hiking trip" say nothing about it being a
question; its first words do. A logistic regression on binary n-gram features of the utterance:
word unigrams and bigrams anywhere (with start/end markers), plus the first word, first two,
last word and last two words as features of their own (question syntax lives at the edges: "what
...", "do you ...", "... right", "... don't you").

Trained on Switchboard dialog-act units (SWBD-DAMSL tags per word, files
`swb_dialog_acts_words/swNNNN{A,B}-word-da.csv`: `utt_id,start,end,word,B|I|O,tag,unit`). A unit
is a question when its tag, without the `@ * (^q)` marks, starts with "q" (qy, qw, qo, qh, qr,
qrr, qy^d, qw^d, qy^g...) or holds "^g" (tag question); a "+" unit continues the same speaker's
previous unit and takes its tag. Words are in the turn-end model's spelling (`utterance_tokens`),
so MS-98 tokens and faster-whisper text meet. The model file holds the feature names and their
coefficients (JSON, no pickle).
"""

from __future__ import annotations

import csv
import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

DIALOG_ACTS_DIR = "swb_dialog_acts_words"
MIN_FEATURE_COUNT = 5  # features seen in fewer training units are left out (keeps the file small; not tuned)
C = 1.0  # fixed, not tuned
QUESTION_FORMAT = "question-model/1"


class QuestionModelError(ValueError):
    """Dialog-act data that is missing or cannot be fitted on."""


def question_features(tokens: Sequence[str]) -> set[str]:
    """The binary features of an utterance's tokens (already in `utterance_tokens` spelling)."""
    if not tokens:
        return set()
    padded = ["<s>", *tokens, "</s>"]
    out = {f"w:{w}" for w in tokens}
    out.update(f"b:{a} {b}" for a, b in zip(padded, padded[1:]))
    out.add(f"first:{tokens[0]}")
    out.add(f"last:{tokens[-1]}")
    out.add(f"first2:{' '.join(tokens[:2])}")
    out.add(f"last2:{' '.join(tokens[-2:])}")
    return out


@dataclass(frozen=True)
class QuestionModel:
    intercept: float
    coefficients: dict[str, float]
    provenance: dict = field(default_factory=dict, compare=False)

    def logit_tokens(self, tokens: Sequence[str]) -> float:
        return self.intercept + sum(self.coefficients.get(f, 0.0) for f in question_features(tokens))

    def p_tokens(self, tokens: Sequence[str]) -> float:
        x = self.logit_tokens(tokens)
        return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def is_question_tag(tag: str) -> bool:
    tag = tag.replace("(^q)", "").rstrip("@*").strip()
    return tag.startswith("q") or "^g" in tag


@dataclass(frozen=True)
class DialogActUnit:
    conversation: str
    speaker: str
    start: float
    end: float
    texts: tuple[str, ...]  # the unit's raw transcript tokens
    tag: str  # "+" resolved to the continued unit's tag

    @property
    def question(self) -> bool:
        return is_question_tag(self.tag)


def dialog_act_file(root, conv_id: str, side: str) -> Path:
    return Path(root) / DIALOG_ACTS_DIR / f"sw{conv_id}{side}-word-da.csv"


def has_dialog_acts(root, conv_id: str) -> bool:
    return all(dialog_act_file(root, conv_id, s).is_file() for s in "AB")


def dialog_act_conversations(root) -> list[str]:
    """Conversation numbers with dialog-act files for both sides."""
    found = {p.name[2:6] for p in (Path(root) / DIALOG_ACTS_DIR).glob("sw*-word-da.csv")}
    return sorted(c for c in found if has_dialog_acts(root, c))


def dialog_act_units(root, conv_id: str) -> list[DialogActUnit]:
    """The dialog-act units of both sides of a conversation (words outside any unit left out)."""
    units = []
    for side in "AB":
        rows: dict[str, list] = {}
        order = []
        with open(dialog_act_file(root, conv_id, side), newline="") as f:
            for row in csv.reader(f):
                if len(row) < 7:
                    raise QuestionModelError(f"{f.name}: a line without 7 fields: {','.join(row)}")
                _, start, end, word, bio, tag, unit = row[:7]
                if bio == "O" or not unit:
                    continue
                if unit not in rows:
                    rows[unit] = []
                    order.append(unit)
                rows[unit].append((float(start), float(end), word, tag))
        previous = ""
        for unit in sorted(order, key=lambda u: rows[u][0][0]):
            words = rows[unit]
            tag = next((t for *_, t in words if t), "")
            if tag.startswith("+") and previous:
                tag = previous
            previous = tag
            units.append(DialogActUnit(f"sw{conv_id}", side, words[0][0], words[-1][1],
                                       tuple(w for _, _, w, _ in words), tag))
    return sorted(units, key=lambda u: u.start)


def fit_question_model(units: Sequence[DialogActUnit], tokenize: Callable[[Iterable[str]], tuple[str, ...]],
                       provenance: dict | None = None) -> QuestionModel:
    """Logistic regression (C fixed at 1) on the units' binary features."""
    from scipy.sparse import csr_matrix
    from sklearn.linear_model import LogisticRegression

    feats = [question_features(tokenize(u.texts)) for u in units]
    keep = [(f, i) for f, i in zip(feats, range(len(units))) if f]
    y = np.array([units[i].question for _, i in keep], dtype=int)
    if len(set(y)) < 2:
        raise QuestionModelError("the question model needs both questions and other units")
    counts = Counter(f for fs, _ in keep for f in fs)
    names = sorted(f for f, n in counts.items() if n >= MIN_FEATURE_COUNT)
    index = {f: j for j, f in enumerate(names)}
    rows, cols = [], []
    for r, (fs, _) in enumerate(keep):
        for f in fs:
            if f in index:
                rows.append(r)
                cols.append(index[f])
    x = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(keep), len(names)))
    lr = LogisticRegression(C=C, max_iter=2000).fit(x, y)
    coefs = {f: round(float(c), 5) for f, c in zip(names, lr.coef_[0]) if abs(c) >= 1e-5}
    prov = dict(provenance or {})
    prov.update({"units": len(keep), "questions": int(y.sum()), "features": len(coefs),
                 "min_feature_count": MIN_FEATURE_COUNT, "C": C})
    return QuestionModel(round(float(lr.intercept_[0]), 5), coefs, prov)


def question_model_to_json(model: QuestionModel) -> dict:
    return {"format": QUESTION_FORMAT, "intercept": model.intercept, "provenance": model.provenance,
            "coefficients": dict(sorted(model.coefficients.items()))}


def question_model_from_json(data: dict) -> QuestionModel:
    if data.get("format") != QUESTION_FORMAT:
        raise QuestionModelError(f"question model format {data.get('format')!r}, expected {QUESTION_FORMAT!r}")
    return QuestionModel(float(data["intercept"]), {k: float(v) for k, v in data["coefficients"].items()},
                         data.get("provenance", {}))


def question_roc_auc(model: QuestionModel, units: Sequence[DialogActUnit],
                     tokenize: Callable[[Iterable[str]], tuple[str, ...]]) -> dict:
    """ROC-AUC of P(question) on (held-out) dialog-act units with words."""
    from sklearn.metrics import roc_auc_score

    pairs = [(model.logit_tokens(t), u.question) for u in units if (t := tokenize(u.texts))]
    y = np.array([q for _, q in pairs], dtype=int)
    if len(set(y)) < 2:
        raise QuestionModelError("the evaluation needs both questions and other units")
    return {"units": len(pairs), "questions": int(y.sum()),
            "roc_auc": float(roc_auc_score(y, [x for x, _ in pairs]))}
