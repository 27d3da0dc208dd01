"""The scripted participant who waits for each answer (studies.offline_call.TurnByTurnFeed), played
block by block against a system that answers each utterance 0.5 s after it ends with 2 s of sound,
and against one that never answers."""

from __future__ import annotations

import numpy as np

from studies.offline_call import TurnByTurnFeed
from systems.base import BLOCK

RATE = 16000


def play(feed: TurnByTurnFeed, answers: bool, limit_s: float = 120.0) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """The mic signal the feed plays, and where the system's answers were (samples)."""
    mic, answered, position = [], [], 0
    while not feed.finished(position) and position < limit_s * RATE:
        reply = np.zeros(BLOCK, dtype=np.float32)
        if answers and feed.starts:
            end = feed.starts[-1] + len(feed.utterances[len(feed.starts) - 1])
            start = end + RATE // 2
            if start <= position < start + 2 * RATE:
                reply[:] = 0.1
                if not answered or answered[-1][0] != start:
                    answered.append((start, start + 2 * RATE))
        feed.heard(position, reply)
        mic.append(feed.block(position, BLOCK))
        position += BLOCK
    return np.concatenate(mic), answered


def utterance(seconds: float) -> np.ndarray:
    return np.full(int(seconds * RATE), 0.2, dtype=np.float32)


def test_each_utterance_waits_for_the_answer_to_end_then_a_quiet_moment():
    feed = TurnByTurnFeed([utterance(1.0), utterance(1.5), utterance(0.5)], quiet_s=1.5)
    mic, answered = play(feed, answers=True)
    assert len(feed.starts) == 3 and len(answered) == 3
    assert feed.starts[0] == RATE  # after the lead
    for (_, answer_end), next_start in zip(answered, feed.starts[1:]):
        assert 0 <= next_start - (answer_end + 1.5 * RATE) < BLOCK  # quiet_s after the answer ended
    # each utterance is played whole where it started, silence elsewhere
    for start, speech in zip(feed.starts, feed.utterances):
        assert np.all(mic[start:start + len(speech)] == 0.2)
    assert np.count_nonzero(mic) == sum(len(u) for u in feed.utterances)
    # the call ends a quiet moment after the last answer
    assert len(mic) - (answered[-1][1] + 1.5 * RATE) < BLOCK


def test_without_an_answer_the_next_utterance_comes_after_the_wait():
    feed = TurnByTurnFeed([utterance(1.0), utterance(1.0)], wait_s=4.0)
    mic, _ = play(feed, answers=False)
    assert feed.starts[1] - (feed.starts[0] + RATE) == 4 * RATE
    assert len(mic) == feed.starts[1] + RATE + 4 * RATE
