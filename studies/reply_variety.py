"""Whether a dialogue system's replies follow the conversation or repeat themselves.

Two replies are the same reply when at least half of the word trigrams of the shorter one occur
in the other ("I'm so glad you enjoyed the hike. I've got ..." said again with a word changed),
or, for replies under three words, when their words are equal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SAME_REPLY_OVERLAP = 0.5


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def same_reply(a: str, b: str) -> bool:
    """Whether two replies say the same thing in nearly the same words.

    >>> same_reply("I'm so glad you enjoyed the hike.", "I am so glad you enjoyed the hike!")
    True
    >>> same_reply("Bring water and a map.", "Start early in the morning.")
    False
    """
    wa, wb = _words(a), _words(b)
    ta = {tuple(wa[i:i + 3]) for i in range(len(wa) - 2)}
    tb = {tuple(wb[i:i + 3]) for i in range(len(wb) - 2)}
    if not ta or not tb:
        return wa == wb
    return len(ta & tb) / min(len(ta), len(tb)) >= SAME_REPLY_OVERLAP


@dataclass(frozen=True)
class ReplyVariety:
    replies: int
    distinct: int  # replies that are not the same reply as any earlier one
    back_to_back: int  # replies that are the same reply as the one just before


def reply_variety(replies: list[str]) -> ReplyVariety:
    """How many of a call's replies are distinct, and how many repeat the one before.

    >>> reply_variety(["Hello there, nice to meet you.", "Hello there, nice to meet you.", "Bring water."])
    ReplyVariety(replies=3, distinct=2, back_to_back=1)
    """
    distinct = sum(not any(same_reply(r, earlier) for earlier in replies[:i]) for i, r in enumerate(replies))
    repeats = sum(same_reply(replies[i], replies[i - 1]) for i in range(1, len(replies)))
    return ReplyVariety(len(replies), distinct, repeats)
