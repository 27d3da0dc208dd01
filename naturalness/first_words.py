"""A lexical cue of who spoke last: P(the speaker answers the other | the first words of an IPU
that starts after a mutual silence).

Where an answer is cut out of a dialogue, the first speaker's pause and resumption are left, and
the timing is an ordinary hold (naturalness/checkpoints/MODEL_CARD.md,
"Limitations"). What gives it away is what the resumption says: it was the
reply to the removed answer ("oh really", "yeah that's ..."), now spoken after the speaker's own
pause. An inserted turn the other way round puts a turn before the speaker's own continuation ("and
then we ..."). On Switchboard the first two words of an IPU after a silence tell whether its
speaker answers the other or goes on with ROC-AUC 0.83 (held-out
training conversations; the model card's "What was tried"), the last words before the silence 0.79 (naturalness/word_cue.py):
the two are separate evidence.

The table (naturalness/checkpoints/first_words.json, sha256 checked against its manifest at load):
P(answers | first word) and P(answers | first two words), counted on the starts after a mutual
silence of Switchboard training conversations, each level shrunk toward the coarser one
(pseudo-count `shrinkage`), the first word toward the share of answers. "Answers": the last speech
before the start that was not a backchannel was the other speaker's (going on after the other's
"uh-huh" is going on). Backchannels (turntaking.events) are neither counted nor
scored: an inserted backchannel's "yeah" would otherwise earn its clip a bonus. Fillers ("uh",
"um") are dropped before the first words are read, as ASR mostly drops them: words from a call's
ASR then mean what words from a transcript mean.

`first_words_term` puts, at each such start, log P(role | first words) - log P(role) on the frame
where it starts (the role, answers or goes on, being what the voice activity shows): a start whose
words fit its role gains, one whose words fit the other role pays. The `timing-hazard-words`
scorer adds it, times a weight, to the frames' log-likelihoods (timing_hazard/word_scorer.py).
"""

from __future__ import annotations

import bisect
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from judge.turn_end import utterance_tokens
from naturalness.model_files import check_manifest_sha256, packaged_path, write_manifest
from turntaking.activity import Conversation
from turntaking.events import EventParams, Events, detect_events
from turntaking.jsonfiles import read_json

MODEL_FILE = "first_words.json"
FORMAT = "first-words-1"
FILLERS = frozenset({"uh", "um", "er", "ah", "hm"})
SHRINKAGE = 10.0  # pseudo-count of each level toward the coarser one
WORD_START_TOLERANCE_S = 0.02  # a word belongs to the IPU it starts in, allowing for the IPU's rounding
MIN_COUNT = 2  # two-word entries seen fewer times are left out of the packaged file (shrunk to nothing)


class FirstWordsError(ValueError):
    pass


@dataclass(frozen=True)
class IpuStart:
    speaker: int
    time_s: float
    after_silence: bool  # False: it starts in overlap with the other's speech
    backchannel: bool
    answers: bool  # the last IPU before it that was not a backchannel was the other speaker's
    answers_ipu: bool  # the last IPU before it, backchannels included, was the other's
    tokens: tuple[str, ...]  # its first words (at most four), in the turn-end model's spelling
    content_tokens: tuple[str, ...]  # the same without fillers (the first token when all are fillers)


def ipu_starts(conv: Conversation, events: EventParams = EventParams(),
               detected: Events | None = None) -> list[IpuStart]:
    """Every IPU start after the dialogue's first, with its first words; [] without words.
    `detected`: the dialogue's `detect_events`, where the caller has them already."""
    if conv.words is None:
        return []
    detected = detect_events(conv, events) if detected is None else detected
    backchannels = [set(detected.backchannels[k]) for k in (0, 1)]
    spans = sorted((s, e, k, (s, e) in backchannels[k]) for k in (0, 1) for s, e in detected.ipus[k])
    words = [sorted(conv.words[k], key=lambda w: w.start) for k in (0, 1)]
    word_starts = [[w.start for w in side] for side in words]  # bisected: an hour has thousands of IPUs
    out = []
    latest_end, last, last_turn = None, None, None
    for s, e, k, bc in spans:
        if latest_end is not None:
            first = bisect.bisect_left(word_starts[k], s - WORD_START_TOLERANCE_S)
            tokens = utterance_tokens(w.text for w in words[k][first:bisect.bisect_left(word_starts[k], e)])
            if tokens:
                content = tuple(t for t in tokens if t not in FILLERS) or tokens[:1]
                turn = last if last_turn is None else last_turn
                out.append(IpuStart(k, s, s > latest_end, bc, turn != k, last != k, tokens[:4], content[:4]))
        if latest_end is None or e >= latest_end:
            latest_end, last = e, k
            if not bc:
                last_turn = k
    return out


def scored_starts(starts: Iterable[IpuStart]) -> list[IpuStart]:
    """The starts the table counts and the term scores: after a mutual silence, not backchannels."""
    return [s for s in starts if s.after_silence and not s.backchannel]


@dataclass(frozen=True)
class FirstWordsTable:
    base_rate: float  # share of answers among the counted starts
    shrinkage: float
    first_word: dict[str, tuple[int, int]]  # word -> (starts, answers)
    first_two_words: dict[str, tuple[int, int]]  # "w1 w2" -> (starts, answers)
    provenance: dict = field(default_factory=dict, compare=False)

    @classmethod
    def fit(cls, starts: Iterable[IpuStart], shrinkage: float = SHRINKAGE, provenance: dict | None = None,
            min_count: int = 1) -> FirstWordsTable:
        starts = scored_starts(starts)
        if not starts:
            raise FirstWordsError("no IPU starts after a silence with words to count")
        one, two = Counter(), Counter()
        for st in starts:
            t = st.content_tokens
            one[t[0], 0] += 1
            one[t[0], 1] += st.answers
            if len(t) >= 2:
                two[" ".join(t[:2]), 0] += 1
                two[" ".join(t[:2]), 1] += st.answers
        first = {w: (n, one[w, 1]) for (w, i), n in one.items() if i == 0}
        pairs = {w: (n, two[w, 1]) for (w, i), n in two.items() if i == 0 and n >= min_count}
        return cls(float(np.mean([s.answers for s in starts])), shrinkage, first, pairs, dict(provenance or {}))

    def p_answers(self, tokens: tuple[str, ...]) -> float:
        """P(answers | the first one or two tokens), shrunk level by level."""
        n, a = self.first_word.get(tokens[0], (0, 0))
        p = (a + self.shrinkage * self.base_rate) / (n + self.shrinkage)
        if len(tokens) >= 2:
            n, a = self.first_two_words.get(" ".join(tokens[:2]), (0, 0))
            p = (a + self.shrinkage * p) / (n + self.shrinkage)
        return min(max(p, 1e-3), 1 - 1e-3)

    def log_ratio(self, start: IpuStart) -> float:
        """log P(role | first words) - log P(role), the role being the start's own."""
        p = self.p_answers(start.content_tokens)
        if start.answers:
            return float(np.log(p) - np.log(self.base_rate))
        return float(np.log1p(-p) - np.log1p(-self.base_rate))

    def as_json(self) -> dict:
        return {"format": FORMAT, "base_rate": self.base_rate, "shrinkage": self.shrinkage,
                "fillers": sorted(FILLERS), "first_word": self.first_word, "first_two_words": self.first_two_words,
                "provenance": self.provenance}


def first_words_term(conv: Conversation, table: FirstWordsTable, n_frames: int, frame_rate: float,
                     events: EventParams = EventParams(),
                     detected: Events | None = None) -> tuple[np.ndarray, int] | None:
    """(the (n_frames - 1,) per-transition log-likelihood ratios, how many starts had one); None
    when the dialogue has no words."""
    if conv.words is None:
        return None
    term = np.zeros(max(n_frames - 1, 0))
    starts = scored_starts(ipu_starts(conv, events, detected))
    for st in starts:
        t = min(max(int(round(st.time_s * frame_rate)) - 1, 0), len(term) - 1)
        if t >= 0:
            term[t] += table.log_ratio(st)
    return term, len(starts)


def packaged_first_words_path() -> Path:
    return packaged_path(MODEL_FILE)


def save_first_words_table(table: FirstWordsTable, path, human_reference: dict | None = None) -> dict:
    """Write the table and its manifest (sha256, provenance, and the scorer's human reference by
    window length where given); return the manifest."""
    path = Path(path)
    path.write_text(json.dumps(table.as_json(), separators=(",", ":"), sort_keys=True))
    fields = {"scorer": "timing-hazard-words", "meta": table.provenance}
    if human_reference is not None:
        fields["human_reference"] = human_reference
    return write_manifest(path, fields)


def load_first_words_table(path=None) -> FirstWordsTable:
    """The table at `path` (default: the packaged one), its sha256 checked against its manifest."""
    path = packaged_first_words_path() if path is None else Path(path)
    if not path.is_file():
        raise FirstWordsError(f"first-words table not found: {path}")
    check_manifest_sha256(path, FirstWordsError)
    data = read_json(path, "first-words table", FirstWordsError)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        found = data.get("format") if isinstance(data, dict) else None
        raise FirstWordsError(f"{path}: format {found!r}, expected {FORMAT!r}")
    try:
        return FirstWordsTable(
            float(data["base_rate"]), float(data["shrinkage"]),
            {k: (int(v[0]), int(v[1])) for k, v in data["first_word"].items()},
            {k: (int(v[0]), int(v[1])) for k, v in data["first_two_words"].items()},
            dict(data.get("provenance", {})))
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise FirstWordsError(f"{path}: not a first-words table ({exc})") from None
