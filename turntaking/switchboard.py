"""Switchboard-1 conversations from the ISIP MS-98 word alignments, in their original layout.

    ROOT/splits/{train,val}.txt                                 conversation numbers, one a line
    ROOT/swb_ms98_transcriptions/NN/NNNN/swNNNN{A,B}-ms98-a-word.text   <utt_id> <start> <end> <word>

Voice activity of a side is the union of its word intervals; non-speech tokens ([silence],
[noise], [laughter], [vocalized-noise], <b_aside>...) are not speech. Words are normalised the way
the turn-taking literature cleans Switchboard: `[laughter-yes]` -> `yes`, `{weatherwise}` ->
`weatherwise`, `[splace/space]` -> `space`, `because_1` -> `because`, restarts `i-` -> `i`.
"""

from __future__ import annotations

import re
from pathlib import Path

from turntaking.activity import Conversation, Word
from turntaking.segment import merge_segments

SPLITS_DIR = "splits"
TRANSCRIPTS_DIR = "swb_ms98_transcriptions"

# Adjacent words in MS-98 share their boundaries, so speech is contiguous without any merging;
# a tiny tolerance absorbs rounding in the 1/16 ms grid of the files.
DEFAULT_MERGE_GAP_S = 0.001


class CorpusError(ValueError):
    """A corpus directory or conversation that cannot be read."""


def conversation_ids(root, split: str | None = None, split_list=None) -> list[str]:
    """Conversation numbers from a split list file, a named split, or every conversation found."""
    root = Path(root)
    if split_list is not None or split is not None:
        path = Path(split_list) if split_list is not None else root / SPLITS_DIR / f"{split}.txt"
        if not path.is_file():
            raise CorpusError(f"split list not found: {path}")
        ids = [line.strip() for line in path.read_text().splitlines() if line.strip()]
        return [i[2:] if i.startswith("sw") else i for i in ids]
    transcripts = root / TRANSCRIPTS_DIR
    if not transcripts.is_dir():
        raise CorpusError(f"{root} is not a Switchboard MS-98 directory (no {TRANSCRIPTS_DIR}/)")
    return sorted(p.name for p in transcripts.glob("*/*") if p.is_dir())


def word_file(root, conv_id: str, side: str) -> Path:
    conv_id = str(conv_id)
    return Path(root) / TRANSCRIPTS_DIR / conv_id[:2] / conv_id / f"sw{conv_id}{side}-ms98-a-word.text"


_LAUGHTER_WORD = re.compile(r"^\[laughter-(.+)\]$")
_MISPRONOUNCED = re.compile(r"^\[[^/\]]*/([^\]]+)\]$")


def clean_token(token: str) -> str | None:
    """The spoken word of an MS-98 token, or None for a non-speech token."""
    m = _LAUGHTER_WORD.match(token)
    if m:
        token = m.group(1)
    else:
        m = _MISPRONOUNCED.match(token)
        if m:
            token = m.group(1)
        elif token.startswith("[") and token.endswith("]") or token.startswith("<"):
            return None
    token = re.sub(r"_\d+$", "", token)
    token = token.replace("{", "").replace("}", "")
    token = re.sub(r"\[([^\]]*)\]", r"\1", token)  # partial words: thi[s]- -> this-
    token = token.strip("-").lower()
    return token or None


def read_word_file(path: Path) -> tuple[list[Word], float]:
    """Words of one side and the end time of its last token (speech or not)."""
    if not path.is_file():
        raise CorpusError(f"missing word alignment file: {path}")
    words: list[Word] = []
    last_end = 0.0
    for line_no, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) < 4:
            raise CorpusError(f"{path}:{line_no}: expected '<utt_id> <start> <end> <word>'")
        try:
            start, end = float(parts[1]), float(parts[2])
        except ValueError:
            raise CorpusError(f"{path}:{line_no}: start/end are not numbers") from None
        last_end = max(last_end, end)
        text = clean_token(parts[3])
        if text is not None and end > start:
            words.append(Word(start, end, text))
    return words, last_end


def load_conversation(root, conv_id, merge_gap_s: float = DEFAULT_MERGE_GAP_S) -> Conversation:
    conv_id = str(conv_id).removeprefix("sw")
    words_a, end_a = read_word_file(word_file(root, conv_id, "A"))
    words_b, end_b = read_word_file(word_file(root, conv_id, "B"))
    activity = tuple(
        merge_segments([(w.start, w.end) for w in ws], gap=merge_gap_s) for ws in (words_a, words_b)
    )
    return Conversation(
        duration=max(end_a, end_b),
        activity=activity,
        words=(words_a, words_b),
        speakers=("A", "B"),
        source=f"sw{conv_id}",
    )


def iter_conversations(root, ids):
    for conv_id in ids:
        yield load_conversation(root, conv_id)
