"""The overlap probes (barge-in stop time, false barge-ins) on hand-made system speech segments,
and the scheduled feed that places an event on the system's speech onset."""

from __future__ import annotations

import numpy as np
import pytest

from examiner.overlap_events import MODEL_MERGE_GAP_S, event_response
from turntaking.segment import merge_segments
from examiner.scheduling import SAMPLE_RATE, ScheduledFeed


def test_segments_merge_over_gaps_up_to_half_a_second():
    assert merge_segments([(1.0, 2.0), (2.5, 3.0), (3.6, 4.0)], gap=MODEL_MERGE_GAP_S) == [(1.0, 3.0), (3.6, 4.0)]


def test_a_system_that_stops_soon_after_the_event_yielded():
    # The system speaks 4.0-9.0 s, then pauses 0.4 s (merged) ... and stops at 10.2: event 8.0-9.5.
    response = event_response([(4.0, 9.0), (9.4, 10.2), (12.0, 13.0)], 8.0, 9.5)
    assert response.speaking and response.stopped
    assert response.stop_time_s == pytest.approx(2.2)
    assert response.overlap_s == pytest.approx(1.5)
    assert response.response_latency_s == pytest.approx(2.5)


def test_a_system_that_talks_on_did_not_stop_and_a_silent_one_was_not_speaking():
    talks_on = event_response([(4.0, 15.0)], 8.0, 8.6)
    assert talks_on.speaking and not talks_on.stopped and talks_on.stop_time_s == pytest.approx(7.0)
    silent = event_response([(1.0, 3.0)], 8.0, 8.6)
    assert (silent.speaking, silent.stopped, silent.stop_time_s, silent.overlap_s) == (False, None, None, 0.0)


def feed_blocks(feed, system_audio):
    """Drive the feed as studies.offline_call does: each 20 ms, the system's block, then the mic's."""
    played, first, block = [], 0, 320
    while not feed.finished(first):
        reply = system_audio[first:first + block]
        if len(reply):
            feed.heard(first, reply)
        played.append(feed.block(first, block))
        first += block
    return np.concatenate(played)


def test_the_event_starts_the_set_time_after_the_systems_onset():
    lead = np.zeros(SAMPLE_RATE * 2, dtype=np.float32)
    lead[8000:24000] = 0.1  # the question, 0.5-1.5 s
    event = np.full(8000, 0.2, dtype=np.float32)
    system = np.zeros(SAMPLE_RATE * 30, dtype=np.float32)
    system[int(3.3 * SAMPLE_RATE):int(9 * SAMPLE_RATE)] = 0.05  # the system answers at 3.3 s
    feed = ScheduledFeed(lead, event, after_onset=int(1.5 * SAMPLE_RATE))
    played = feed_blocks(feed, system)
    assert feed.onset == int(3.3 * SAMPLE_RATE)
    starts = np.flatnonzero(played > 0.15)
    assert starts[0] / SAMPLE_RATE == pytest.approx(4.8) and len(starts) == len(event)
    assert len(played) / SAMPLE_RATE == pytest.approx(4.8 + 0.5 + 6.0, abs=0.02)


def test_a_short_backchannel_is_not_the_answers_onset():
    lead = np.zeros(SAMPLE_RATE * 2, dtype=np.float32)
    event = np.full(8000, 0.2, dtype=np.float32)
    system = np.zeros(SAMPLE_RATE * 30, dtype=np.float32)
    system[int(2.1 * SAMPLE_RATE):int(2.6 * SAMPLE_RATE)] = 0.05  # "mm-hm", 0.5 s
    system[int(4.0 * SAMPLE_RATE):int(4.6 * SAMPLE_RATE)] = 0.05  # the answer, with a 0.2 s pause inside
    system[int(4.8 * SAMPLE_RATE):int(8.0 * SAMPLE_RATE)] = 0.05
    feed = ScheduledFeed(lead, event, after_onset=int(2.0 * SAMPLE_RATE))
    played = feed_blocks(feed, system)
    assert feed.onset == int(4.0 * SAMPLE_RATE)
    assert np.flatnonzero(played > 0.15)[0] / SAMPLE_RATE == pytest.approx(6.0)


def test_a_silent_system_gets_the_event_after_the_wait():
    lead = np.zeros(SAMPLE_RATE, dtype=np.float32)
    event = np.full(1600, 0.2, dtype=np.float32)
    feed = ScheduledFeed(lead, event, after_onset=SAMPLE_RATE, wait=2 * SAMPLE_RATE)
    played = feed_blocks(feed, np.zeros(0, dtype=np.float32))
    assert feed.onset is None and np.flatnonzero(played > 0.15)[0] / SAMPLE_RATE == pytest.approx(3.0)
