"""The cascade's replies follow the conversation: twelve distinct questions get at least eleven
distinct replies, none repeating the one before, with the packaged SmolLM2-135M and the cascade's
own prompt and decoding. The decoding was chosen on another conversation (a hike,
benchmarks/data/reply_questions_hike.txt); this one (New York) was not used to choose it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from studies.reply_variety import reply_variety, same_reply
from systems.cascaded import CascadedSettings

DATA = Path(__file__).parents[2] / "benchmarks" / "data"
QUESTIONS = DATA / "reply_questions_new_york.txt"


def replies(llm, settings: CascadedSettings, topic: str, questions: list[str]):
    """Each question answered as the cascade answers it, reply by reply: its prompt
    (`CascadedSettings.reply_messages`), the reply's decoding, at most `max_sentences`."""
    llm.warm(settings.reply_messages(topic, [], "")[:1])
    history: list[tuple[str, str]] = []
    for question in questions:
        messages = settings.reply_messages(topic, history, question)
        reply = ""
        for piece in llm.stream(messages, settings.max_new_tokens, decoding=settings.decoding(len(history))):
            reply += piece
            if len(re.findall(r"[.!?]+(?:\s|$)", reply)) >= settings.max_sentences:
                break
        reply = reply.strip()
        history.append((question, reply))
        yield reply


@pytest.fixture(scope="module")
def llm(cascade_components):
    return cascade_components[2]


def test_twelve_questions_get_distinct_replies(llm):
    questions = [line for line in QUESTIONS.read_text().splitlines() if line.strip()]
    assert len(questions) == 12 and len(set(questions)) == 12
    answers = list(replies(llm, CascadedSettings(), "sightseeing in New York", questions))
    variety = reply_variety(answers)
    assert variety.distinct >= 11, answers
    assert variety.back_to_back == 0, answers
    # the same call again gives the same replies (greedy decoding with the penalty)
    assert list(replies(llm, CascadedSettings(), "sightseeing in New York", questions[:3])) == answers[:3]


def test_plain_greedy_decoding_repeats_itself(llm):
    # What the settings answer: the conversation they were chosen on, prompted with the last
    # exchange (the system's own reply) and decoded greedily without the penalty, lets the small
    # model repeat itself (the measure sees it).
    questions = [line for line in (DATA / "reply_questions_hike.txt").read_text().splitlines() if line.strip()]
    plain = CascadedSettings(repetition_penalty=1.0, history_turns=1, earlier_user_turns=0)
    said: list[str] = []
    for reply in replies(llm, plain, "preparing for a hike", questions):  # up to the first repeat
        if any(same_reply(reply, earlier) for earlier in said):
            break
        said.append(reply)
    else:
        raise AssertionError(f"no reply repeats an earlier one: {said}")
    print(f"reply {len(said) + 1} of {len(questions)} repeats an earlier one: {reply!r}")
