"""Backchannel words: the packaged phrase list and the one spelling in which words meet it."""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from pathlib import Path

from turntaking.activity import Word


def backchannel_form(text: str) -> str:
    """The one spelling in which words meet the backchannel list: lower case, letters and digits
    only (no hyphens, spaces, apostrophes or punctuation), and a letter repeated in a row said
    once. "Mm-hmm", "mmhmm", "mm hmm", "mmm-hmm" and "Mhm" are all "mhm"; "Uh-huh", "uh huh" and
    "uhhuh" are "uhuh".

    Why: Switchboard MS-98 spells "uh-huh", faster-whisper's words lose the hyphen ("uhhuh") or
    split it ("uh", "huh"), and people write lists either way. (It also makes "uh-uh" and
    "uh-huh" one phrase; Switchboard spells the negative "huh-uh", and lists it.)

    >>> backchannel_form("Mm-hmm"), backchannel_form("uh huh"), backchannel_form("Uh-huh!")
    ('mhm', 'uhuh', 'uhuh')
    """
    letters = re.sub(r"[\W_]+", "", text.lower())
    return re.sub(r"([^\W\d_])\1+", r"\1", letters)


@lru_cache(maxsize=8)
def load_backchannel_list(path: str | None = None) -> frozenset[str]:
    """Backchannel phrases, one a line ('#' comments), in `backchannel_form`; the packaged default
    when `path` is None."""
    if path is None:
        text = resources.files("turntaking").joinpath("data/backchannels.txt").read_text()
    else:
        p = Path(path)
        if not p.is_file():
            raise FileNotFoundError(f"backchannel list not found: {p}")
        text = p.read_text()
    phrases = (backchannel_form(line.split("#", 1)[0]) for line in text.splitlines())
    return frozenset(p for p in phrases if p)


def is_backchannel_phrase(words: list[Word], phrases: frozenset[str], max_words: int) -> bool:
    """Whether the words together are a listed phrase, or there are at most `max_words` of them
    and each is listed, compared in `backchannel_form` (`phrases` as `load_backchannel_list`
    gives them). The phrase is the words joined without spaces: "uh" "huh" (two ASR words) meets
    "uh-huh" (one list entry), and "mm" "mm" "mm" (how faster-whisper splits one "mm-hmm") meets
    "mm" however many pieces the ASR made of it.

    >>> phrases = load_backchannel_list()
    >>> is_backchannel_phrase([Word(0, .2, "uh"), Word(.2, .4, "huh")], phrases, max_words=2)
    True
    >>> is_backchannel_phrase([Word(0, .2, "mm"), Word(.2, .4, "mm"), Word(.4, .6, "mm")], phrases, max_words=2)
    True
    >>> is_backchannel_phrase([Word(0, .2, "so"), Word(.2, .4, "what")], phrases, max_words=2)
    False
    """
    if not words:
        return False
    if backchannel_form("".join(w.text for w in words)) in phrases:
        return True
    return len(words) <= max_words and all(backchannel_form(w.text) in phrases for w in words)
