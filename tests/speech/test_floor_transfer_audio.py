"""Floor-transfer offsets and backchannel-free gaps on real speech: espeak-ng utterances at known
times in two channels -> Silero voice activity -> faster-whisper words -> events.

The script (A = channel 0, B = channel 1):
    A  "i went to the market this morning"
    B  "okay" 0.5 s after A stops; A goes on 0.5 s after it   (a backchannel in A's turn)
    A  "and bought some fresh bread at the bakery"
    B  "that sounds really nice to me"      0.4 s after A's end      FTO +0.4
    A  "i also found a new book shop"       0.7 s after B's end      FTO +0.7
    B  "really tell me more about it please"  0.6 s before A's end   FTO -0.6 (overlap)
"""

import pytest

from speech.pipeline import load_conversation
from tests.rendered_speech import SAMPLE_RATE, Utterance, render_speech, speak
from turntaking.events import detect_events
from turntaking.stats import conversation_statistics

VOICES = ("en-us", "en-us+f3")
# Silero's onsets land within 60 ms of the placed speech; its offsets come up to ~150 ms late
# (the probability decays after speech ends, plus 40 ms padding): a measured offset lies in
# [true - 0.2 s, true + 0.06 s].
EARLY, LATE = 0.2, 0.06


def length(text, channel):
    return len(speak(text, VOICES[channel])) / SAMPLE_RATE


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    plan, t = [], 0.5
    for channel, text, offset in ((0, "i went to the market this morning", 0.5),
                                  (1, "okay", 0.5),
                                  (0, "and bought some fresh bread at the bakery", 0.4),
                                  (1, "that sounds really nice to me", 0.7),
                                  (0, "i also found a new book shop", -0.6),
                                  (1, "really tell me more about it please", 1.0)):
        plan.append(Utterance(channel, round(t, 4), text, VOICES[channel]))
        t += length(text, channel) + offset
    speech = render_speech(plan, duration=t)
    path = speech.write(tmp_path_factory.mktemp("audio") / "fto.wav")
    return speech, load_conversation(path, vad="silero")


def test_floor_transfer_offsets_come_out_at_the_placed_times(recording):
    speech, conv = recording
    events = detect_events(conv)
    assert [len(events.backchannels[k]) for k in (0, 1)] == [0, 1]  # Whisper heard "okay"
    got = [(t.from_speaker, t.to_speaker, t.offset_s) for t in events.floor_transfers]
    assert [(a, b) for a, b, _ in got] == [(0, 1), (1, 0), (0, 1)]  # the backchannel transfers nothing
    for (_, _, offset), true in zip(got, (0.4, 0.7, -0.6)):
        assert true - EARLY <= offset <= true + LATE, (offset, true)
    assert got[2][2] < 0  # B's last turn starts in overlap


def test_gaps_leave_out_the_silences_around_the_backchannel(recording):
    _, conv = recording
    stats = conversation_statistics(conv)
    # Talking Turns' IPU gaps: before and after "okay", plus the two real turn changes by silence.
    assert stats["counts"]["ipu_gap"] == 4
    assert stats["counts"]["gap"] == 2
    assert [round(g["end"] - g["start"], 1) for g in stats["events"]["gap"]] == [pytest.approx(0.4, abs=0.2),
                                                                                 pytest.approx(0.7, abs=0.2)]
    assert len(stats["floor_transfer_offsets_s"]) == 3
