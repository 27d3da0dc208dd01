"""Fitting the turn-end model (`judge.turn_end`) on Switchboard: the silences of the training
conversations with the voice-activity judge's P(T) read in each, and the model fitted on them. Apart
from the model because it runs the judge (torch); using a fitted model does not."""

from __future__ import annotations

import platform
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from judge.checkpoint_files import DEFAULT_CHECKPOINT, packaged_checkpoint_dir
from judge.features import FRAME_RATE, va_features
from judge.labels import LABELS
from judge.model import JudgeModel, load_checkpoint
from judge.turn_end import (
    N_FOLDS,
    Silence,
    TurnEndError,
    TurnEndModel,
    conversation_silences,
    fit_from_silences,
    fit_question_cue,
    question_training_conversations,
)
from storage.files import sha256_file
from turntaking.activity import Conversation
from turntaking.events import EventParams
from turntaking.git_commit import git_commit
from turntaking.switchboard import load_conversation


def judge_p_t_after_frames(model: JudgeModel, conv: Conversation) -> np.ndarray:
    """(M,) the judge's P(T) for the next chunk after each 20 ms frame t has been pushed, as
    `StreamingJudge.prob("T")` gives it: the offline GRU pass, read after every frame."""
    feats = va_features(conv.frames(FRAME_RATE))
    with torch.no_grad():
        h = model.encode(torch.from_numpy(feats)[None])[0]
        return torch.softmax(model.label_head(h), dim=-1)[:, LABELS.index("T")].numpy().astype(float)


def switchboard_silences(swb_dir, ids: Sequence[str], judge: JudgeModel, progress=None,
                         params: EventParams = EventParams()) -> list[tuple[int, Silence]]:
    """(conversation index, silence) of the listed Switchboard conversations."""
    out = []
    items = range(len(ids)) if progress is None else progress(range(len(ids)))
    for i in items:
        conv = load_conversation(swb_dir, ids[i])
        out.extend((i, s) for s in conversation_silences(conv, judge_p_t_after_frames(judge, conv), params))
    return out


def fit_turn_end_model(swb_dir, conversation_ids: Sequence[str], judge: JudgeModel | None = None,
                       progress=None, judge_path=None, with_questions: bool = True) -> TurnEndModel:
    """Fit on the listed (training) Switchboard conversations with the VA judge (default: packaged);
    the question cue on dialog acts of other conversations (`question_training_conversations`),
    left out when there are none or `with_questions` is False."""
    if judge is None:
        judge = load_checkpoint(judge_path)
    if not conversation_ids:
        raise TurnEndError("no conversations to fit on")
    question_ids = question_training_conversations(swb_dir, conversation_ids) if with_questions else []
    questions = fit_question_cue(swb_dir, question_ids) if question_ids else None
    pairs = switchboard_silences(swb_dir, conversation_ids, judge, progress)
    judge_file = Path(judge_path) if judge_path else packaged_checkpoint_dir() / DEFAULT_CHECKPOINT
    provenance = {
        "corpus": "switchboard", "corpus_dir": str(swb_dir), "conversations": len(conversation_ids),
        "conversation_ids": list(conversation_ids), "judge": judge_file.name,
        "judge_sha256": sha256_file(judge_file) if judge_file.is_file() else None,
        "events": EventParams().as_dict(), "git_commit": git_commit(Path(__file__).parent), "python": platform.python_version(),
    }
    return fit_from_silences([s for _, s in pairs], [i % N_FOLDS for i, _ in pairs], provenance, questions)

