"""Segments made by the loaders and event detection mix with the plain (start, end) pairs that
JSON files and older callers carry."""

from __future__ import annotations

import json

from turntaking.activity import Conversation, conversation_from_json, conversation_to_json
from turntaking.events import detect_events
from turntaking.segment import Segment


def test_conversation_segments_survive_a_json_round_trip_as_pairs():
    conv = Conversation(6.0, ([(0, 2), (2.5, 3)], [(3.4, 5)]))
    assert all(isinstance(seg, Segment) for segs in conv.activity for seg in segs)
    text = json.dumps(conversation_to_json(conv))
    assert json.loads(text)["vad"] == [[[0.0, 2.0], [2.5, 3.0]], [[3.4, 5.0]]]
    assert conversation_from_json(json.loads(text)).activity == conv.activity


def test_event_segments_unpack_index_and_measure_like_pairs():
    events = detect_events(Conversation(6.0, ([(0, 2), (2.5, 3)], [(3.4, 5)])))
    (start, end), = events.turns[1]
    turn = events.turns[0][0]
    assert (start, end) == (3.4, 5.0) and turn[0] == 0.0
    assert turn.duration == 3.0 and not turn.overlaps(events.turns[1][0])
    assert (turn | events.turns[1][0]) == (0.0, 5.0)
