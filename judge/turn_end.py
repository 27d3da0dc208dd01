"""P(the speaker's turn has ended), during the speaker's silence: the turn-end model of a
predictive dialogue system.

A dialogue system watching its caller's silence asks, every 40 ms: has the turn ended (take it)
or is this a pause within the turn (hold)? Two cues read early in the silence give a prior:
- the last (up to) two words of the caller's utterance, P(shift | words) counted on Switchboard
  silences, the two-word estimate shrunk toward the one-word one and that toward the base rate;
- the voice-activity judge's P(T) read JUDGE_AT_S into the silence (`judge.streaming`);
- P(the utterance is a question | its words) (`judge.questions`), from the caller's words since
  their turn began (its last QUESTION_MAX_WORDS): "what should i pack for a weekend hiking trip"
  is a question by its first words, which the last two cannot see;
combined by a logistic regression on their logits (and P(question)), one fitted per available
subset of the cues.
As the silence goes on, the prior is updated by how long within-turn pauses last: a hold is a
pause the speaker has not ended yet, a turn end is never ended by the speaker resuming, so
    odds(turn ended | silence_s) = prior odds / P(a within-turn pause lasts longer than silence_s).

Silences (Switchboard, `turntaking.events` with its default parameters): every mutual silence
after an IPU of speaker k, until the next IPU of anyone. A *hold* when k speaks next or when the
other's next IPU is a backchannel inside k's turn (`Events.backchannels`); its pause length runs
until k resumes. A *shift* when the other speaker's next IPU is not a backchannel. Silences shorter
than JUDGE_AT_S are no decision the system makes and are left out. IPUs join speech closer than
0.2 s, so every hold in the data lasts at least 0.2 s.

Words meet in one spelling whether they come from MS-98 transcripts or from faster-whisper's text
(`utterance_tokens`): non-speech tokens dropped and partial words completed as the transcript
loader does (`turntaking.switchboard.clean_token`), `judge.words.normalize_word`, and words of the
backchannel list (`turntaking.events`) in `backchannel_form`, two adjacent words joined when
together they are a listed phrase: "Uh huh." = "uh-huh" = "uhuh", "Mm-hmm." = "mhm"; MS-98's
"um-hum" is the same sound as faster-whisper's "Mm-hmm" and meets it (`SAME_BACKCHANNEL`).
"""

from __future__ import annotations

import bisect
import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from judge.checkpoint_files import expected_sha256, packaged_checkpoint_dir
from judge.features import FRAME_RATE
from judge.questions import (
    QuestionModel,
    dialog_act_conversations,
    dialog_act_units,
    fit_question_model,
    question_model_from_json,
    question_model_to_json,
)
from judge.words import normalize_word
from storage.files import sha256_file
from turntaking.activity import Conversation
from turntaking.backchannel_words import backchannel_form, load_backchannel_list
from turntaking.events import EventParams, classify_silences, detect_events
from turntaking.jsonfiles import read_json
from turntaking.switchboard import clean_token

JUDGE_AT_S = 0.12  # the judge's P(T) is read this far into the silence (6 frames of 20 ms)
JUDGE_FRAMES = round(JUDGE_AT_S * FRAME_RATE)
SURVIVAL_STEP_S = 0.02
SURVIVAL_MAX_S = 5.0
SURVIVAL_FLOOR = 1e-3
# A word of the utterance counts when it has ended by this long after the silence starts
# (word and voice-activity boundaries of MS-98 agree to rounding).
WORD_END_TOLERANCE_S = 0.02
SHRINKAGE_CHOICES = (2.0, 5.0, 10.0, 20.0, 50.0)
N_FOLDS = 5
DEFAULT_MODEL = "turn_end.json"
FORMAT = "turn-end-model/2"  # /2: with the question cue; /1 files (without it) still load
READABLE_FORMATS = ("turn-end-model/1", FORMAT)
# Inputs of each fitted logistic regression, by which cues are present.
# The question cue enters as two inputs, logit P(question) and P(question): on training silences
# (300 conversations, 5-fold cross-validated log loss of words + judge + the cue) the pair fitted
# better (0.4074) than the logit alone (0.4088) or P alone (0.4096); without the cue 0.4182
# (judge/checkpoints/MODEL_CARD.md, "What was tried").
CUE_INPUTS = {"words": ("words",), "judge": ("judge",), "question": ("question_logit", "question_p")}
CUES = tuple(CUE_INPUTS)
INPUT_SETS = {"+".join(cues): tuple(c for cue in cues for c in CUE_INPUTS[cue]) for cues in (
    ("words", "judge"), ("words",), ("judge",),
    ("words", "judge", "question"), ("words", "question"), ("judge", "question"), ("question",))}
# The question cue reads at most this many of the utterance's last words: a live transcript since
# the caller's turn began can run long, and the training utterances are cut the same way.
QUESTION_MAX_WORDS = 40
_P_T_CLIP = 1e-6


class TurnEndError(ValueError):
    """A turn-end model file that is missing, corrupt or changed, or data it cannot be fitted on."""


def logit(p: float, clip: float = _P_T_CLIP) -> float:
    p = min(max(p, clip), 1.0 - clip)
    return math.log(p / (1.0 - p))


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


# One sound, several spellings the backchannel list keeps apart: MS-98 writes the nasal "mm-hmm" as
# "um-hum" (12k tokens, no "mm-hmm"); faster-whisper writes "Mm-hmm", "Mhm" or "Mm-hm".
SAME_BACKCHANNEL = {"umhum": "mhm", "mhum": "mhm"}


# Both are pure and words repeat: cached, they make scoring an hour with words ~3x faster.
@lru_cache(maxsize=65536)
def _backchannel_token(word: str, phrases: frozenset[str]) -> str | None:
    """The word's backchannel spelling when it is a listed backchannel (or an alias of one)."""
    form = backchannel_form(word)
    if form in SAME_BACKCHANNEL:
        return SAME_BACKCHANNEL[form]
    return form if form in phrases else None


@lru_cache(maxsize=65536)
def _word_token(raw: str) -> str:
    """One transcript or ASR word in the model's spelling, or "" for no word."""
    if raw.startswith("(") and raw.endswith(")"):  # ASR sound descriptions: "(laughs)"
        return ""
    cleaned = clean_token(raw)
    return normalize_word(cleaned) if cleaned else ""


def utterance_tokens(texts: Iterable[str]) -> tuple[str, ...]:
    """The words of an utterance (transcript tokens or ASR texts, each may hold several words) in
    the model's spelling; see the module docstring."""
    phrases = load_backchannel_list()
    out: list[str] = []
    for text in texts:
        for raw in text.split():
            word = _word_token(raw)
            if not word:
                continue
            joined = _backchannel_token(out[-1] + word, phrases) if out else None
            if joined:
                out[-1] = joined
            else:
                out.append(_backchannel_token(word, phrases) or word)
    return tuple(out)


def last_two(tokens: Sequence[str]) -> tuple[str, ...]:
    return tuple(tokens[-2:])


@dataclass(frozen=True)
class TurnEndModel:
    base_rate: float  # share of shifts among the training silences
    shrinkage: float  # pseudo-count of each level toward the coarser one
    last_word: dict[str, tuple[int, int]]  # word -> (silences, shifts)
    last_two_words: dict[str, tuple[int, int]]  # "w1 w2" -> (silences, shifts)
    weights: dict[str, tuple[float, ...]]  # INPUT_SETS name -> (intercept, coefficient per input)
    survival: tuple[float, ...]  # P(hold pause > i * SURVIVAL_STEP_S), i = 0..SURVIVAL_MAX_S / step
    provenance: dict = field(default_factory=dict, compare=False)
    questions: QuestionModel | None = None  # the question cue (`judge.questions`); None: no such cue

    def question_logit(self, tokens: Sequence[str]) -> float | None:
        """logit P(question) of an utterance's tokens (its last QUESTION_MAX_WORDS), None without a
        question model or words."""
        if self.questions is None or not tokens:
            return None
        return self.questions.logit_tokens(tuple(tokens)[-QUESTION_MAX_WORDS:])

    def last_words(self, text: str) -> tuple[str, ...]:
        """The normalised last (up to) two words of an ASR text or transcript."""
        return last_two(utterance_tokens([text]))

    def p_words(self, words: Sequence[str]) -> float:
        """P(shift | the last (up to) two words), each level shrunk toward the coarser one."""
        words = tuple(words)[-2:]
        p = self.base_rate
        levels = [(self.last_word, words[-1:])] + ([(self.last_two_words, words)] if len(words) == 2 else [])
        for table, key in levels:
            if not key:
                continue
            n, shifts = table.get(" ".join(key), (0, 0))
            p = (shifts + self.shrinkage * p) / (n + self.shrinkage)
        return p

    def prior_shift(self, words: Sequence[str] | None, judge_p_t: float | None,
                    utterance: str | None = None) -> float:
        """P(shift | last words, judge P(T) at JUDGE_AT_S, P(question | utterance)); `utterance` is
        the caller's text since their turn began (ASR text or transcript). A missing input (None, no
        words, no question model) uses the regression fitted without it; all missing gives the base
        rate."""
        return self.prior_from_tokens(words, judge_p_t, None if utterance is None else utterance_tokens([utterance]))

    def prior_from_tokens(self, words: Sequence[str] | None, judge_p_t: float | None,
                          utterance_tokens_: Sequence[str] | None) -> float:
        """`prior_shift` with the utterance already in tokens (`utterance_tokens`)."""
        inputs = {}
        if words:
            inputs["words"] = logit(self.p_words(words))
        if judge_p_t is not None:
            inputs["judge"] = logit(judge_p_t)
        q = self.question_logit(utterance_tokens_) if utterance_tokens_ else None
        if q is not None:
            inputs["question_logit"], inputs["question_p"] = q, sigmoid(q)
        if not inputs:
            return self.base_rate
        name = "+".join(cue for cue in CUES if CUE_INPUTS[cue][0] in inputs)
        intercept, *coefs = self.weights[name]
        return sigmoid(intercept + sum(c * inputs[k] for c, k in zip(coefs, INPUT_SETS[name])))

    def pause_survival(self, silence_s: float) -> float:
        """P(a within-turn pause lasts longer than silence_s), from the training holds (step
        function on a 20 ms grid, floored at SURVIVAL_FLOOR; past the grid its last value)."""
        i = int(math.floor(max(silence_s, 0.0) / SURVIVAL_STEP_S + 1e-9))
        return self.survival[min(i, len(self.survival) - 1)]

    def p_turn_end(self, words: Sequence[str] | None, judge_p_t: float | None, silence_s: float,
                   utterance: str | None = None) -> float:
        """P(the turn has ended | the cues, silence_s of silence so far)."""
        return posterior(self.prior_shift(words, judge_p_t, utterance), self.pause_survival(silence_s))


def posterior(prior: float, survival: float) -> float:
    odds = prior / max(1.0 - prior, 1e-12) / survival
    return odds / (1.0 + odds)


# -- silences of a conversation --------------------------------------------------------------------


@dataclass(frozen=True)
class Silence:
    """A mutual silence after an IPU of `speaker`, at least JUDGE_AT_S long."""

    conversation: str
    speaker: int
    start: float
    gap_s: float  # until anyone speaks
    shift: bool
    hold_s: float | None  # a hold: until the speaker resumes
    words: tuple[str, ...]  # last (up to) two words of the speaker's utterance
    judge_p_t: float | None
    utterance: tuple[str, ...] = ()  # the utterance's last QUESTION_MAX_WORDS tokens (the question cue)


def judge_frame(silence_start: float) -> int:
    """The frame after which the judge is read: the JUDGE_FRAMES-th frame whose centre lies in the
    silence (frames are active when their centre is in speech)."""
    first_silent = math.ceil(silence_start * FRAME_RATE - 0.5 - 1e-9)
    return first_silent + JUDGE_FRAMES - 1


def conversation_silences(conv: Conversation, p_t: np.ndarray | None = None,
                          params: EventParams = EventParams()) -> list[Silence]:
    """The silences of a conversation with words (see the module docstring); `p_t` is
    `judge.turn_end_fitting.judge_p_t_after_frames`, or None to leave the judge out."""
    if conv.words is None:
        raise TurnEndError(f"{conv.source or 'conversation'}: the turn-end model needs words")
    events = detect_events(conv, params)
    ipu_starts = [[s for s, _ in side] for side in events.ipus]
    bc_starts = [{s for s, _ in side} for side in events.backchannels]
    bc_spans = [set(side) for side in events.backchannels]
    pauses, gaps = classify_silences(events.ipus, conv.duration)
    out = []
    for event, same in [(e, True) for e in pauses] + [(e, False) for e in gaps]:
        gap = event.end - event.start
        if gap < JUDGE_AT_S:
            continue
        k = event.speaker if same else 1 - event.speaker
        other = 1 - k
        if same or event.end in bc_starts[other]:
            i = bisect.bisect_left(ipu_starts[k], event.end - 1e-9)
            if i >= len(ipu_starts[k]):
                continue  # the speaker never resumes: no pause length
            shift, hold_s = False, ipu_starts[k][i] - event.start
        else:
            shift, hold_s = True, None
        # The utterance: the speaker's words ending since the other's last non-backchannel speech.
        since = max((e for s, e in events.ipus[other] if e <= event.start and (s, e) not in bc_spans[other]),
                    default=0.0)
        raw = [w.text for w in conv.words[k] if since < w.end <= event.start + WORD_END_TOLERANCE_S]
        words = last_two(utterance_tokens(raw[-6:]))
        utterance = utterance_tokens(raw[-2 * QUESTION_MAX_WORDS:])[-QUESTION_MAX_WORDS:]
        judge = None
        if p_t is not None:
            f = judge_frame(event.start)
            if f >= len(p_t):
                continue
            judge = float(p_t[f])
        out.append(Silence(conv.source, k, event.start, gap, shift, hold_s, words, judge, utterance))
    return sorted(out, key=lambda s: s.start)


# -- fitting -----------------------------------------------------------------------------------------


def count_words(silences: Iterable[Silence]) -> tuple[dict, dict]:
    one, two = Counter(), Counter()
    for s in silences:
        if not s.words:
            continue
        one[s.words[-1], "n"] += 1
        one[s.words[-1], "shift"] += s.shift
        if len(s.words) == 2:
            key = " ".join(s.words)
            two[key, "n"] += 1
            two[key, "shift"] += s.shift
    as_table = lambda c: {w: (c[w, "n"], c[w, "shift"]) for w, kind in c if kind == "n"}  # noqa: E731
    return as_table(one), as_table(two)


def survival_table(hold_s: Sequence[float]) -> tuple[float, ...]:
    d = np.sort(np.asarray(hold_s, dtype=float))
    if len(d) == 0:
        raise TurnEndError("no within-turn pauses to fit the pause survival on")
    grid = np.arange(round(SURVIVAL_MAX_S / SURVIVAL_STEP_S) + 1) * SURVIVAL_STEP_S
    surv = 1.0 - np.searchsorted(d, grid + 1e-9, side="right") / len(d)
    return tuple(float(round(v, 6)) for v in np.maximum(surv, SURVIVAL_FLOOR))


def _words_model(silences, shrinkage: float, base_rate: float) -> TurnEndModel:
    one, two = count_words(silences)
    return TurnEndModel(base_rate, shrinkage, one, two, {}, (1.0,))


def cross_fitted_p_words(silences: Sequence[Silence], fold_of: Sequence[int], shrinkage: float) -> np.ndarray:
    """P(shift | words) of every silence from the counts of the other folds' conversations."""
    out = np.zeros(len(silences))
    fold_of = np.asarray(fold_of)
    for f in range(N_FOLDS):
        rest = [s for s, g in zip(silences, fold_of) if g != f]
        rate = float(np.mean([s.shift for s in rest]))
        model = _words_model(rest, shrinkage, rate)
        for i in np.flatnonzero(fold_of == f):
            out[i] = model.p_words(silences[i].words)
    return out


def fit_from_silences(silences: Sequence[Silence], fold_of: Sequence[int],
                      provenance: dict | None = None, questions: QuestionModel | None = None) -> TurnEndModel:
    """The model from training silences (with the judge's P(T)) and each one's conversation fold;
    with a question model (fitted on other conversations, so its outputs on these silences are
    out of sample) also the regressions with its logit as an input."""
    from sklearn.linear_model import LogisticRegression

    if len(silences) < 2 * N_FOLDS or len({s.shift for s in silences}) < 2:
        raise TurnEndError(f"too few silences to fit on ({len(silences)}; both shifts and holds are needed)")
    y = np.array([s.shift for s in silences], dtype=int)
    # Shrinkage: the choice with the lowest cross-fitted log loss (training conversations only).
    losses = {}
    for w in SHRINKAGE_CHOICES:
        p = np.clip(cross_fitted_p_words(silences, fold_of, w), 1e-6, 1 - 1e-6)
        losses[w] = float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))
    shrinkage = min(losses, key=losses.get)
    x_words = np.array([logit(p) for p in cross_fitted_p_words(silences, fold_of, shrinkage)])
    x_judge = np.array([logit(s.judge_p_t) for s in silences])
    columns = {"words": x_words, "judge": x_judge}
    if questions is not None:
        columns["question_logit"] = np.array([questions.logit_tokens(s.utterance) for s in silences])
        columns["question_p"] = 1.0 / (1.0 + np.exp(-columns["question_logit"]))
    weights = {}
    for name, inputs in INPUT_SETS.items():
        if not set(inputs) <= set(columns):
            continue
        x = np.stack([columns[k] for k in inputs], axis=1)
        lr = LogisticRegression(C=1.0, max_iter=1000).fit(x, y)
        weights[name] = (float(lr.intercept_[0]), *(float(c) for c in lr.coef_[0]))
    one, two = count_words(silences)
    holds = [s.hold_s for s in silences if not s.shift]
    prov = dict(provenance or {})
    prov.update({
        "silences": len(silences), "shifts": int(y.sum()), "holds": len(holds),
        "shrinkage_log_loss": {f"{w:g}": round(v, 5) for w, v in losses.items()},
        "folds": N_FOLDS, "judge_at_s": JUDGE_AT_S,
    })
    return TurnEndModel(float(y.mean()), shrinkage, one, two, weights, survival_table(holds), prov, questions)


def question_training_conversations(swb_dir, exclude: Iterable[str] = ()) -> list[str]:
    """The conversations whose dialog acts train the question cue: every second one (by number) of
    those with dialog-act files and not in `exclude`. Switchboard's dialog-act files cover only
    conversations of the validation split here, so the other half stays held out for validation."""
    exclude = set(exclude)
    return [c for c in dialog_act_conversations(swb_dir) if c not in exclude][::2]


def fit_question_cue(swb_dir, conversation_ids: Sequence[str]) -> QuestionModel:
    units = [u for c in conversation_ids for u in dialog_act_units(swb_dir, c)]
    if not units:
        raise TurnEndError(f"{swb_dir}: no dialog-act units to fit the question cue on")
    return fit_question_model(units, utterance_tokens, {
        "corpus": "switchboard dialog acts", "conversations": len(conversation_ids),
        "conversation_ids": list(conversation_ids)})


# -- the model file ------------------------------------------------------------------------------------


def model_to_json(model: TurnEndModel) -> dict:
    return {
        "format": FORMAT, "judge_at_s": JUDGE_AT_S, "base_rate": model.base_rate, "shrinkage": model.shrinkage,
        "weights": {k: list(v) for k, v in model.weights.items()},
        "survival": {"step_s": SURVIVAL_STEP_S, "floor": SURVIVAL_FLOOR, "values": list(model.survival)},
        "provenance": model.provenance,
        "last_word": {k: list(v) for k, v in sorted(model.last_word.items())},
        "last_two_words": {k: list(v) for k, v in sorted(model.last_two_words.items())},
        "questions": None if model.questions is None else question_model_to_json(model.questions),
    }


def save_turn_end_model(model: TurnEndModel, path) -> str:
    """Write the model and its manifest (NAME.manifest.json with the sha256); returns the sha256."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(model_to_json(model), separators=(",", ":")) + "\n")
    digest = sha256_file(path)
    manifest = {"checkpoint": path.name, "checkpoint_sha256": digest, "format": FORMAT,
                "provenance": {k: v for k, v in model.provenance.items() if k != "conversation_ids"}}
    path.with_name(path.stem + ".manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return digest


def load_turn_end_model(path=None) -> TurnEndModel:
    """The turn-end model; None = the packaged one. Its sha256 is checked against the manifest
    next to it (required for the packaged file)."""
    packaged = path is None
    path = packaged_checkpoint_dir() / DEFAULT_MODEL if packaged else Path(path)
    if not path.is_file():
        raise TurnEndError(f"turn-end model not found: {path}")
    try:
        want = expected_sha256(path)
    except ValueError as exc:
        raise TurnEndError(f"{path}: unreadable manifest ({exc})") from None
    if packaged and want is None:
        raise TurnEndError(f"{path}: its manifest {path.stem}.manifest.json is missing")
    if want is not None and sha256_file(path) != want:
        raise TurnEndError(f"{path}: sha256 differs from its manifest (file changed or corrupt)")
    data = read_json(path, "turn-end model", TurnEndError)
    try:
        if data["format"] not in READABLE_FORMATS:
            raise TurnEndError(f"{path}: format {data['format']!r}, expected {FORMAT!r}")
        questions = data.get("questions")
        return TurnEndModel(
            base_rate=float(data["base_rate"]), shrinkage=float(data["shrinkage"]),
            last_word={k: (int(v[0]), int(v[1])) for k, v in data["last_word"].items()},
            last_two_words={k: (int(v[0]), int(v[1])) for k, v in data["last_two_words"].items()},
            weights={k: tuple(float(x) for x in v) for k, v in data["weights"].items()},
            survival=tuple(float(x) for x in data["survival"]["values"]),
            provenance=data.get("provenance", {}),
            questions=None if questions is None else question_model_from_json(questions),
        )
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        if isinstance(exc, TurnEndError):
            raise
        raise TurnEndError(f"{path}: not a turn-end model ({exc.__class__.__name__}: {exc})") from None
