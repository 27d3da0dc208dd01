"""The cascade's turns stay short when a participant talks over them (a participant once heard it
speak for 23 s straight while they spoke three times). A question that asks for everything, then
three interruptions over the answer: with `barge_in: yield` the system stops for each, with the
default `ignore` it does not listen but its answer ends within two sentences."""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile

from studies.offline_call import active_segments, run_offline_feed
from studies.reply_quality import sentence_count
from systems.cascaded import CascadedSystem
from tests.studies.conftest import espeak_16k
from tests.studies.over_the_reply import OverTheReplyFeed

RATE = 16000
LONGEST_TURN_S = 12.0  # two sentences of at most max_new_tokens (32) tokens, spoken by Piper
STOP_WITHIN_S = 0.8  # barge_in_ms (0.2 s) of overlap, the VAD's frames and the audio queued in the call


def spoken(text: str, tmp_path, name: str) -> np.ndarray:
    audio = espeak_16k(text, tmp_path / f"{name}.wav")
    loud = np.flatnonzero(np.abs(audio) > 0.01)
    return audio[loud[0]:loud[-1] + 1]


@pytest.fixture(scope="module")
def calls(tmp_path_factory, cascade_components):
    """One call per barge_in setting: (its feed, its system channel's speech, its timing log)."""
    tmp_path = tmp_path_factory.mktemp("short_turns")
    question = spoken("Can you tell me everything I need to know about planning a long hike in the mountains?",
                      tmp_path, "question")
    pieces = {name: spoken(text, tmp_path, name) for name, text in
              (("first", "wait a second"), ("second", "no, listen to me please"), ("third", "hold on, hold on"))}
    results = {}
    for barge_in in ("ignore", "yield"):
        feed = OverTheReplyFeed(np.concatenate([np.zeros(RATE, dtype=np.float32), question]), pieces,
                                {"first": 1.5, "second": 1.5})
        system = CascadedSystem({"barge_in": barge_in}, components=cascade_components)
        result = run_offline_feed(feed, tmp_path / f"{barge_in}.wav", system=system, topic="hiking")
        audio, _ = soundfile.read(str(tmp_path / f"{barge_in}.wav"), dtype="float32")
        events = [json.loads(line) for line in result.log_path.read_text().splitlines()]
        results[barge_in] = (feed, pieces, audio[:, 1], events)
    return results


def longest_turn(system: np.ndarray) -> tuple[float, list]:
    """The longest run of the system's speech, pauses under a second bridged (a listener hears one turn)."""
    segments = active_segments(system, bridge_s=1.0)
    return max((end - start for start, end in segments), default=0.0), segments


def test_without_listening_the_answer_still_ends_within_two_sentences(calls):
    feed, pieces, system, events = calls["ignore"]
    assert feed.answer.onset is not None, "the system never answered"
    replies = [e["text"] for e in events if e["event"] == "reply"]
    assert replies and all(sentence_count(text) <= 2 for text in replies), replies
    longest, segments = longest_turn(system)
    assert longest <= LONGEST_TURN_S, segments


def test_yielding_it_stops_for_each_interruption_over_its_speech(calls):
    feed, pieces, system, events = calls["yield"]
    assert feed.answer.onset is not None, "the system never answered"
    speech = active_segments(system, bridge_s=0.1)
    talked_over = 0
    for name, start in feed.starts.items():
        start_s, end_s = start / RATE, (start + len(pieces[name])) / RATE
        speaking = any(s < start_s < e for s, e in speech)
        if not speaking:
            continue  # the piece fell after a reply had ended: nothing to yield
        talked_over += 1
        still = sum(max(0.0, min(e, end_s) - max(s, start_s + STOP_WITHIN_S)) for s, e in speech)
        assert still < 0.1, f"the system kept talking {still:.2f} s over {name!r}: {speech}"
    assert talked_over >= 1 and sum(e["event"] == "yielded" for e in events) >= talked_over
    longest, segments = longest_turn(system)
    assert longest <= LONGEST_TURN_S, segments
