"""What the language model is shown for a reply: the participant's turn, the turns before it, and
for a question about the conversation itself the earlier turns quoted (chosen with
studies.reply_quality: docs/dialogue-systems.md)."""

from __future__ import annotations

import re


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
    r"\b(did|have|had) (i|we) (just |already )?(say|tell|mention)\b|\bremember\b"
    r"|\b(you|i) (just )?(said|told (you|me))\b", re.IGNORECASE)
ASKS_WHAT_YOU_SAID = re.compile(
    r"\bwhat (did|was it) you (just )?(say|said|tell)\b|\byou (just )?(said|told me)\b"
    r"|\b(say|repeat) (that|it) again\b|\blast thing you\b", re.IGNORECASE)


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
