"""What the language model is shown for a reply: the participant's turn, the turns before it, and
for a question about the conversation itself the earlier turns quoted (chosen with
studies.reply_quality: docs/dialogue-systems.md)."""

from __future__ import annotations

import re
from typing import Callable


def first_sentences(text: str, n: int) -> str:
    """The first `n` sentences of `text` (0: all of it).

    >>> first_sentences("Start early. The trail gets hot! Bring water.", 2)
    'Start early. The trail gets hot!'
    """
    if n <= 0:
        return text.strip()
    return "".join(re.findall(r"[^.!?]*(?:[.!?]+|$)", text)[:n]).strip()


def reply_prompt(history: list[tuple[str, str]], text: str, exchanges: int, earlier_user_turns: int,
                 reply_sentences: int = 0) -> list[dict]:
    """The chat messages after the system prompt for a reply to `text`: the participant's words of
    `earlier_user_turns` turns, then the last `exchanges` exchanges (each reply cut to its first
    `reply_sentences` sentences; 0: whole), then `text`.

    The earlier turns carry the participant's words only: a small model copies its own earlier
    answers, and the participant's words are what the reply must follow.

    >>> history = [("I like hiking.", "Nice!"), ("Where to go?", "The Alps."), ("When?", "In June.")]
    >>> [m["role"] for m in reply_prompt(history, "Thanks.", exchanges=1, earlier_user_turns=1)]
    ['user', 'user', 'assistant', 'user']
    >>> reply_prompt(history, "Thanks.", exchanges=1, earlier_user_turns=1)[0]["content"]
    'Where to go?'
    """
    kept = history[len(history) - exchanges:] if exchanges > 0 else []
    before = history[:len(history) - len(kept)]
    messages = [{"role": "user", "content": user} for user, _ in before[len(before) - earlier_user_turns:]
                if earlier_user_turns > 0]
    for user, assistant in kept:
        messages += [{"role": "user", "content": user},
                     {"role": "assistant", "content": first_sentences(assistant, reply_sentences)}]
    return messages + [{"role": "user", "content": text}]


# A turn that asks about the conversation itself: what the participant said ("what did I say my
# name was?", "do you remember...?") or what the system said (ASKS_WHAT_YOU_SAID).
RECALL_QUESTION = re.compile(
    r"\b(did|have|had) (i|we) (just |already )?(say|tell|mention)\b"
    r"|\byou (still )?remember\b|\bremember (what|when|where|who|which|how|my|our)\b"
    r"|\b(you|i) (just )?(said|told (you|me))\b", re.IGNORECASE)
ASKS_WHAT_YOU_SAID = re.compile(
    r"\bwhat (did|was it) you (just )?(say|said|tell)\b|\byou (just )?(said|told me)\b"
    r"|\b(say|repeat) (that|it) again\b|\blast thing you\b", re.IGNORECASE)


def asks_about_the_conversation(text: str) -> bool:
    """Whether a turn asks what was said earlier, by the participant or by the system."""
    return bool(RECALL_QUESTION.search(text) or ASKS_WHAT_YOU_SAID.search(text))


def recall_prompt(history: list[tuple[str, str]], text: str, turns: int) -> list[dict]:
    r"""The message after the system prompt for a question about the conversation: the
    participant's last `turns` turns quoted one a line, the system's last reply when the question
    asks what it said, then the question.

    The 135M model does not look back through earlier messages for an answer (2 of 8 recall
    questions answered right with them as messages) but reads lines quoted in the question's own
    message (6 of 8); quoted for every turn, they pull each reply away from the turn it answers
    (relevance 0.55 -> 0.22 nats a token on the fitting conversations), so only a recall question
    gets them (docs/dialogue-systems.md). Its own last reply, quoted to a question about the
    participant's words, was copied as the answer.

    >>> history = [("I'm Anna.", "Hi Anna! Nice day."), ("I hike.", "Great.")]
    >>> recall_prompt(history, "What's my name? Do you remember?", 8)[0]["content"]
    "What I told you so far:\nI'm Anna.\nI hike.\n\nWhat's my name? Do you remember?"
    >>> recall_prompt(history, "Can you say that again?", 8)[0]["content"]
    "What I told you so far:\nI'm Anna.\nI hike.\n\nWhat you said last: Great.\n\nCan you say that again?"
    """
    told = "\n".join(user for user, _ in history[len(history) - turns:])
    said = history[-1][1] if history and ASKS_WHAT_YOU_SAID.search(text) else ""
    last = f"\n\nWhat you said last: {said}" if said else ""
    return [{"role": "user", "content": f"What I told you so far:\n{told}{last}\n\n{text}"}]


# Words that say nothing of what a recall question is about ("what did I say my ... was?").
_RECALL_FILLER = frozenset(
    "a an and are at be did do does for from had has have how i i'm in is it it's me my of on or said say so "
    "tell told that the their there they this to was we were what when where which who whom why will with you "
    "your remember just already again mention mentioned know he she him her his hers they them its us our "
    "ours".split())
# The participant's words said back to them: "my brother and I" -> "your brother and you".
_TO_LISTENER = {"i": "you", "me": "you", "my": "your", "mine": "yours", "myself": "yourself", "am": "are",
                "i'm": "you're", "i've": "you've", "i'll": "you'll", "i'd": "you'd", "we": "you", "us": "you",
                "our": "your", "ours": "yours", "we're": "you're", "we've": "you've", "we'll": "you'll"}


def _content_words(text: str) -> set[str]:
    words = re.findall(r"[a-z0-9']+", text.lower().replace("\u2019", "'"))
    return {w[:-2] if w.endswith("'s") else w for w in words if w not in _RECALL_FILLER and len(w) > 1}


def _content_tokens(text: str) -> list[str]:
    """The content words as written (a name keeps its capital: " Scotland" is its own token)."""
    return [w for w in re.findall(r"[A-Za-z0-9']+", text.replace("\u2019", "'")) if _content_words(w)]


def said_back(text: str) -> str:
    """The participant's sentence as the system says it back to them.

    >>> said_back("My brother Tom and I are going skiing in January.")
    'your brother Tom and you are going skiing in January'
    """
    words = text.strip().rstrip(".!?").split()
    return " ".join(_TO_LISTENER.get(w.lower(), w) for w in words)


def recalled_answer(history: list[tuple[str, str]], text: str, turns: int,
                    relatedness: Callable[[list[str], list[str]], float] | None = None) -> str | None:
    """For a question about what the participant said (RECALL_QUESTION, not about the system's own
    words), the earlier turns of the last `turns` that share the most words with it, said back
    ("You said ..."); where no turn shares a word, the statement (not a question of theirs) whose
    words are most related to the question's by `relatedness` (systems.word_vectors: "country" and
    "Scotland"); None without it, or for any other turn.

    The packaged 135M model, given the earlier turns quoted, answered 5 of 8 such questions of the
    fitting conversations and 2 of 10 of a third confirming set ("I'm not sure what to say, but I'll
    try my best. You're Sam!"): it does not look facts up; the words the question shares with the
    turn it asks about find it (docs/dialogue-systems.md).

    >>> history = [("My brother Tom and I are going skiing.", "Fun!"), ("I have skied once.", "Nice.")]
    >>> recalled_answer(history, "Who did I say I was going skiing with?", 8)
    'You said your brother Tom and you are going skiing.'
    >>> recalled_answer(history, "What should I wear?", 8) is None
    True
    """
    if not history or not RECALL_QUESTION.search(text) or ASKS_WHAT_YOU_SAID.search(text):
        return None
    asked = _content_words(text)
    told = [user for user, _ in history[len(history) - turns:]] if turns > 0 else []
    shared = [len(asked & _content_words(user)) for user in told]
    best = max(shared, default=0)
    if best == 0:
        # On the written turns of the five spent sets, 34 of 45 recall questions found their turn
        # by shared words; with the related words for the 10 that share none, 44 of 45
        # (docs/dialogue-systems.md). A question of theirs is not what they are asked about.
        statements = [user for user in told if not user.rstrip().endswith("?")]
        if relatedness is None or not statements:
            return None
        words = _content_tokens(text)
        chosen = max(statements, key=lambda user: relatedness(words, _content_tokens(user)))
        return f"You said {said_back(chosen)}."
    chosen = [said_back(user) for user, n in zip(told, shared) if n == best][-2:]
    return "You said " + " and that ".join(chosen) + "."
