"""Causal word inputs of the word-conditioned judge: the most recent completed word per speaker.

Voice activity alone cannot tell a turn end from a pause; the last words can ("... you know?" vs
"... and the"). For every 50 Hz frame t and each speaker the judge gets
- the id of that speaker's most recent word that has *ended* by the end of frame t
  (end <= (t + 1) / 50 s), from a fixed vocabulary of frequent training words;
- log(1 + seconds since that word ended), capped like the voice-activity features.
A word therefore never influences frames that end before the word does.

Word texts are normalised so that Switchboard MS-98 tokens (`turntaking.switchboard`) and
faster-whisper words (`speech.asr`: capitals, punctuation, leading spaces; inner hyphens kept on
both sides, "uh-huh") meet in one vocabulary. Not in `turntaking.backchannel_words.backchannel_form`, which
the BC labels use: folding repeated letters would merge vocabulary words ("too" and "to"). Ids: 0 = no word yet, 1 = a word outside the vocabulary, 2.. = vocabulary words.
"""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np

from judge.features import FRAME_RATE, MAX_SINCE_S

NO_WORD_ID = 0
OOV_ID = 1
FIRST_WORD_ID = 2
WORD_FEATURE_NAMES = ("log_since_word_end_0", "log_since_word_end_1")
N_WORD_FEATURES = len(WORD_FEATURE_NAMES)

_NOT_WORD_CHARS = re.compile(r"[^a-z0-9'\-]+")


class MissingWordsError(ValueError):
    """A word-conditioned judge was given a conversation without words."""


def normalize_word(text: str) -> str:
    """Lower case, punctuation dropped except apostrophes and inner hyphens: "Yeah," -> "yeah"."""
    return _NOT_WORD_CHARS.sub("", text.lower()).strip("-'")


def build_vocabulary(conversations, size: int) -> list[str]:
    """The `size` most frequent normalised words of the conversations (ties: alphabetical)."""
    counts: Counter[str] = Counter()
    for conv in conversations:
        if conv.words is None:
            continue
        for side in conv.words:
            counts.update(w for w in (normalize_word(x.text) for x in side) if w)
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return [w for w, _ in ranked[:size]]


def word_index(vocabulary: list[str]) -> dict[str, int]:
    return {w: FIRST_WORD_ID + i for i, w in enumerate(vocabulary)}


def word_inputs(words, n_frames: int, index: dict[str, int], frame_rate: float = FRAME_RATE):
    """(ids (M, 2) int64, features (M, 2) float32) for a conversation's two word lists."""
    ids = np.zeros((n_frames, 2), dtype=np.int64)
    feats = np.full((n_frames, 2), math.log1p(MAX_SINCE_S), dtype=np.float32)
    frame_end = (np.arange(n_frames) + 1) / frame_rate
    for k in (0, 1):
        side = [w for w in words[k] if normalize_word(w.text)]
        if not side or n_frames == 0:
            continue
        side.sort(key=lambda w: w.end)
        ends = np.array([w.end for w in side])
        word_ids = np.array([index.get(normalize_word(w.text), OOV_ID) for w in side])
        # The last word (by end time) that has ended by the end of each frame; -1 = none yet.
        latest = np.searchsorted(ends, frame_end + 1e-9, side="right") - 1
        known = latest >= 0
        ids[known, k] = word_ids[latest[known]]
        since = np.minimum(frame_end[known] - ends[latest[known]], MAX_SINCE_S)
        feats[known, k] = np.log1p(np.maximum(since, 0.0))
    return ids, feats


def conversation_word_inputs(conv, n_frames: int, index: dict[str, int]):
    """`word_inputs` of a Conversation; a clear error when it carries no words."""
    if conv.words is None:
        name = conv.source or "conversation"
        raise MissingWordsError(
            f"{name}: this judge needs the words with their times (a voice-activity JSON with \"words\", "
            "or a two-channel recording transcribed by faster-whisper); use a voice-activity judge otherwise"
        )
    return word_inputs(conv.words, n_frames, index)
