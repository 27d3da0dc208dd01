"""Backchannels from what the listener did, on rendered two-channel speech through the session
pipeline (Silero voice activity, its boundary lags undone, Whisper tiny.en words): Whisper
mishears espeak-ng's hummed "um-hum" as "and then", so its words cannot be the gate.

The script (A = channel 0, B = channel 1), three scenes 4 s of silence apart:
    1. A talks for about 10 s; B hums twice inside it              two backchannels, no interruption
    2. A talks; B says "no, wait" inside it, A stops, B goes on     an interruption, no backchannel
    3. A talks; B says "yeah" over A's last words, A stops, B goes on   "yeah" starts B's turn
"""

from dataclasses import replace

import pytest

from speech.pipeline import load_conversation
from tests.rendered_speech import SAMPLE_RATE, Utterance, render_speech, speak
from turntaking.backchannel_words import is_backchannel_phrase, load_backchannel_list
from turntaking.boundary_lags import corrected, lags_of
from turntaking.events import EventParams, detect_events

A, B, HUMMER = "en-us", "en-us+f3", "en-gb+f2"
LONG_TURN = ("so last summer we drove all the way up the coast to see my grandmother "
             "and on the way we stopped at every little town we could find "
             "before we finally got there late in the evening tired but happy")
HUM = "um hum"
FIRST, WAIT, GOES_ON = "i think we should take the early train tomorrow because", "no, wait", \
    "the early train is always full on fridays"
SAID, YEAH, ON = "and that is why i never go there on weekends", "yeah", "me neither it is far too busy"


def seconds(text, voice, **options):
    return len(speak(text, voice, **options)) / SAMPLE_RATE


def script():
    """The utterances, and each scene's span (s)."""
    plan, scenes, t = [], {}, 0.5
    turn = seconds(LONG_TURN, A)
    plan.append(Utterance(0, t, LONG_TURN, A))
    plan += [Utterance(1, round(t + at * turn, 3), HUM, HUMMER, repeatable=True) for at in (0.3, 0.65)]
    scenes["hums"] = (t, t + turn)
    t += turn + 4.0
    plan.append(Utterance(0, t, FIRST, A))
    wait_at = t + seconds(FIRST, A) - 0.8  # A stops 0.8 s after B's "no, wait" begins
    goes_on = wait_at + seconds(WAIT, B) + 0.5
    plan += [Utterance(1, round(wait_at, 3), WAIT, B), Utterance(1, round(goes_on, 3), GOES_ON, B)]
    scenes["wait"] = (t, goes_on + seconds(GOES_ON, B))
    t = scenes["wait"][1] + 4.0
    plan.append(Utterance(0, t, SAID, A))
    yeah_at = t + seconds(SAID, A) - 0.25  # over A's last word
    on = yeah_at + seconds(YEAH, B) + 0.45
    plan += [Utterance(1, round(yeah_at, 3), YEAH, B), Utterance(1, round(on, 3), ON, B)]
    scenes["yeah"] = (t, on + seconds(ON, B))
    return plan, scenes, scenes["yeah"][1] + 1.0


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    plan, scenes, duration = script()
    path = render_speech(plan, duration=duration).write(tmp_path_factory.mktemp("audio") / "listener.wav")
    conv = load_conversation(path, vad="silero")
    return corrected(conv, lags_of(conv)), scenes  # as a session's statistics do


def within(segment, span) -> bool:
    return span[0] <= segment[0] and segment[1] <= span[1]


def in_scene(segments, span):
    return [s for s in segments if within(s, span)]


def test_two_misheard_hums_inside_a_turn_are_two_backchannels(recording):
    conv, scenes = recording
    assert conv.words_from == "asr"
    events = detect_events(conv)
    hums = in_scene(events.ipus[1], scenes["hums"])
    assert len(hums) == 2
    heard = [[w for w in conv.words[1] if within((w.start, w.end), (s - 0.2, e + 0.2))] for s, e in hums]
    phrases = load_backchannel_list()
    # Whisper's words for them are not backchannel words ...
    assert not any(is_backchannel_phrase(ws, phrases, EventParams().backchannel_max_words) for ws in heard), heard
    # ... yet the listener's behaviour makes them backchannels, and nobody interrupted.
    assert in_scene(events.backchannels[1], scenes["hums"]) == hums
    assert [i for i in events.interruptions if within((i.start, i.end), scenes["hums"])] == []
    start, end = scenes["hums"]
    assert end - start > 9.5
    assert any(s <= start + 0.2 and e >= end - 0.2 for s, e in events.turns[0])  # A's turn goes on through both
    # Read as a transcript (the words as the gate), the same hums were two interruptions.
    as_transcript = detect_events(replace(conv, words_from="transcript"))
    assert in_scene(as_transcript.backchannels[1], scenes["hums"]) == []
    assert len([i for i in as_transcript.interruptions if within((i.start, i.end), scenes["hums"])]) == 2


def test_a_no_wait_that_takes_the_floor_stays_an_interruption(recording):
    conv, scenes = recording
    events = detect_events(conv)
    assert in_scene(events.backchannels[1], scenes["wait"]) == []
    interruptions = [i for i in events.interruptions if within((i.start, i.end), scenes["wait"])]
    assert [(i.interrupter, i.interrupted) for i in interruptions] == [(1, 0)]


def test_a_yeah_after_which_the_speaker_stops_starts_the_listeners_turn(recording):
    conv, scenes = recording
    events = detect_events(conv)
    assert in_scene(events.backchannels[1], scenes["yeah"]) == []
    yeah = in_scene(events.ipus[1], scenes["yeah"])[0]
    start, end = scenes["yeah"]
    turns = [t for t in events.turns[1] if start <= t[0] <= end]
    assert len(turns) == 1 and turns[0][0] == yeah[0]  # B's one turn starts with its "yeah"
