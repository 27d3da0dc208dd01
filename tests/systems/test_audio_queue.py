"""The systems' output queue: a resumed reply skips the quiet it had reached (between two words),
keeping a short lead before the next sound, and never drops sound."""

from __future__ import annotations

import numpy as np

from systems.base import SAMPLE_RATE, AudioQueue
from tests.studies.conftest import espeak_16k

LEVEL = 0.01


def test_skip_quiet_goes_on_with_the_next_word_and_keeps_its_lead(tmp_path):
    word = espeak_16k("yes", tmp_path / "yes.wav")
    onset = int(np.flatnonzero(np.abs(word) > LEVEL)[0])  # espeak's own lead-in counts as quiet too
    queue = AudioQueue()
    queue.put(np.zeros(int(0.25 * SAMPLE_RATE), dtype=np.float32))  # the pause, over two chunks
    queue.put(np.zeros(int(0.15 * SAMPLE_RATE), dtype=np.float32))
    queue.put(word)
    total = len(queue)
    keep = int(0.03 * SAMPLE_RATE)
    dropped = queue.skip_quiet(LEVEL, keep=keep, most=SAMPLE_RATE)
    assert dropped == int(0.4 * SAMPLE_RATE) + onset - keep and len(queue) == total - dropped
    rest = queue.take(len(queue))
    assert np.all(np.abs(rest[:keep]) <= LEVEL) and np.abs(rest[keep]) > LEVEL
    np.testing.assert_array_equal(rest[keep:keep + 1000], word[onset:onset + 1000])


def test_skip_quiet_drops_no_more_than_it_may_and_nothing_before_sound(tmp_path):
    word = espeak_16k("yes", tmp_path / "yes.wav")
    loud = word[np.flatnonzero(np.abs(word) > LEVEL)[0]:]
    queue = AudioQueue()
    queue.put(np.zeros(SAMPLE_RATE, dtype=np.float32))
    queue.put(loud)
    assert queue.skip_quiet(LEVEL, keep=0, most=SAMPLE_RATE // 2) == SAMPLE_RATE // 2
    assert queue.skip_quiet(LEVEL, keep=SAMPLE_RATE, most=SAMPLE_RATE) == 0  # the lead it keeps
    playing = AudioQueue()
    playing.put(loud)
    assert playing.skip_quiet(LEVEL, keep=0, most=SAMPLE_RATE) == 0 and len(playing) == len(loud)
    assert AudioQueue().skip_quiet(LEVEL, keep=0, most=SAMPLE_RATE) == 0
