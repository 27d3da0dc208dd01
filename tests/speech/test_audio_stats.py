"""The full `stats` pipeline on real speech: espeak-ng utterances placed at known times in two
channels -> Silero voice activity -> faster-whisper words -> events and statistics.

The script (A = channel 0, B = channel 1):
    A  "i went to the market this morning"           pause 0.6 s
    A  "and bought some fresh bread at the bakery"   B "okay" inside it (a backchannel)
                                                      gap 0.7 s
    B  "that sounds really nice to me"                A "but wait" inside it (butting-in)
                                                      gap 0.5 s
    A  "i also found a new book shop"                 B enters 0.6 s before A's end:
    B  "really tell me more about the book shop please"   (floor-taking)
"""

import json

import pytest

from speech.pipeline import InputError, load_conversation, statistics_for_path
from tests import command_line
from tests.rendered_speech import SAMPLE_RATE, Utterance, render_speech, speak

VOICES = ("en-us", "en-us+f3")


def length(text, channel):
    return len(speak(text, VOICES[channel])) / SAMPLE_RATE


@pytest.fixture(scope="module")
def scripted_audio(tmp_path_factory):
    plan, t = [], 0.5
    u1 = "i went to the market this morning"
    plan.append(Utterance(0, t, u1, VOICES[0]))
    t += length(u1, 0) + 0.6
    u2 = "and bought some fresh bread at the bakery"
    plan.append(Utterance(0, t, u2, VOICES[0]))
    plan.append(Utterance(1, t + 0.5, "okay", VOICES[1]))
    t += length(u2, 0) + 0.7
    u3 = "that sounds really nice to me"
    plan.append(Utterance(1, t, u3, VOICES[1]))
    plan.append(Utterance(0, t + 0.3, "but wait", VOICES[0]))
    t += length(u3, 1) + 0.5
    u4 = "i also found a new book shop"
    plan.append(Utterance(0, t, u4, VOICES[0]))
    t += length(u4, 0) - 0.6
    u5 = "really tell me more about the book shop please"
    plan.append(Utterance(1, t, u5, VOICES[1]))
    t += length(u5, 1) + 1.0
    speech = render_speech(plan, duration=t)
    path = speech.write(tmp_path_factory.mktemp("audio") / "scripted.wav")
    return speech, path


def test_voice_activity_onsets_match_the_placed_speech(scripted_audio):
    speech, path = scripted_audio
    conv = load_conversation(path, vad="silero", transcribe=False)
    assert conv.duration == pytest.approx(speech.duration)
    for k in (0, 1):
        onsets = [s for s, _ in conv.activity[k]]
        for u in speech.in_channel(k):
            assert min(abs(o - u.start) for o in onsets) < 0.06, (k, u.text)


def test_event_counts_on_real_speech_with_asr(scripted_audio):
    speech, path = scripted_audio
    stats = statistics_for_path(path, vad="silero")
    counts = stats["counts"]
    assert counts["ipu"] == 7
    assert counts["pause"] == 1 and stats["speakers"]["A"]["counts"]["pause"] == 1
    assert counts["gap"] == 2
    assert stats["speakers"]["B"]["counts"]["gap"] == 1 and stats["speakers"]["A"]["counts"]["gap"] == 1
    assert counts["overlap"] == 3
    assert counts["backchannel"] == 1 and stats["speakers"]["B"]["counts"]["backchannel"] == 1
    assert counts["interruption"] == 2
    assert stats["speakers"]["A"]["counts"]["butting_in"] == 1
    assert stats["speakers"]["B"]["counts"]["floor_taking"] == 1
    # Times follow the placement: onsets within 60 ms; Silero's offsets come up to ~150 ms late
    # (its probability decays after speech ends, plus 40 ms padding).
    placed = {u.text: u for u in speech.utterances}
    a_end = placed["i went to the market this morning"].end
    a_next = placed["and bought some fresh bread at the bakery"].start
    pause = stats["events"]["pause"][0]
    assert pause["end"] == pytest.approx(a_next, abs=0.06)
    assert 0 <= pause["start"] - a_end < 0.2
    # Whisper heard the words: about as many as were spoken.
    spoken = sum(len(u.text.split()) for u in speech.utterances)
    assert abs(stats["words"] - spoken) <= 4
    assert stats["speaking_rate_wpm"] == pytest.approx(stats["words"] / (speech.duration / 60))


def test_without_asr_the_backchannel_counts_as_an_interruption(scripted_audio):
    _, path = scripted_audio
    stats = statistics_for_path(path, vad="silero", transcribe=False)
    assert stats["counts"]["backchannel"] == 0
    assert stats["counts"]["interruption"] == 3
    assert stats["speaking_rate_wpm"] is None


def run_cli(*args):
    """`python -m analysis` as its `main(argv)` in this process (an interpreter start with its
    imports costs seconds a call); the JSON run below is the real process."""
    done = command_line.run_cli("analysis", *args)
    return done.returncode, done.stdout, done.stderr


def test_cli_json_on_audio(scripted_audio):
    _, path = scripted_audio
    done = command_line.run_cli_process("analysis", "stats", path, "--no-asr", "--json")
    rc, out, err = done.returncode, done.stdout, done.stderr
    assert rc == 0, err
    stats = json.loads(out)
    assert {"duration_s", "per_minute", "percent", "speakers", "events"} <= set(stats)
    assert stats["counts"]["gap"] == 2


def test_bad_audio_inputs_give_one_line_errors(scripted_audio, tmp_path):
    speech, path = scripted_audio
    corrupt = tmp_path / "corrupt.wav"
    corrupt.write_bytes(b"RIFF\x00\x00\x00\x00WAVEfmt garbage")
    mono = speech.write(tmp_path / "mono.wav", mono=True)
    empty = tmp_path / "empty.wav"
    import numpy as np
    import soundfile

    soundfile.write(str(empty), np.zeros((0, 2), dtype=np.float32), 16000)
    cases = [
        (corrupt, [], "cannot read"),
        (mono, [], "has 1 channel; two-channel audio"),
        (empty, [], "empty recording"),
        (path, ["--vad", "words"], "missing transcript"),
    ]
    for file, extra, message in cases:
        rc, out, err = run_cli("stats", file, *extra)
        assert rc == 2, (file, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], (file, err)


def test_missing_transcript_is_an_input_error(scripted_audio):
    _, path = scripted_audio
    with pytest.raises(InputError, match="missing transcript"):
        load_conversation(path, vad="words")
