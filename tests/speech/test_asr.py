"""Words with times from the packaged Whisper tiny.en, on espeak-ng speech at known times."""

from difflib import SequenceMatcher

import numpy as np
import pytest

import speech.asr as asr
from speech.asr import (
    WINDOWS_S,
    Piece,
    clean_word,
    pack_regions,
    transcribe_channels,
    window_for,
    without_loop,
)
from speech.silero import silero_segments


@pytest.fixture(scope="module")
def dialogue_activity(dialogue):
    return tuple(silero_segments(dialogue.samples))


def missed_words(said: list[str], truth: list[str]) -> int:
    """Words of `truth` not matched, in order, by `said`, plus words said in excess."""
    matched = sum(block.size for block in SequenceMatcher(a=said, b=truth, autojunk=False).get_matching_blocks())
    return len(truth) - matched + len(said) - matched


def words_of_utterance(words, utterance, margin=0.15):
    return [w for w in words if utterance.start - margin <= w.start and w.end <= utterance.end + margin]


def test_each_channel_is_transcribed_word_by_word_at_its_times(dialogue, dialogue_activity):
    words = transcribe_channels(dialogue.samples, 16000, dialogue_activity)
    for channel in range(2):
        utterances = dialogue.in_channel(channel)
        # Every word lies inside one utterance's bounds (150 ms margin: the VAD segment it is kept in).
        assert sum(len(words_of_utterance(words[channel], u)) for u in utterances) == len(words[channel])
        # Whisper tiny on espeak-ng's voice drops a word now and then ("hello there" -> "hello,"
        # in some encoder windows): at most one word wrong per utterance, in order.
        for u in utterances:
            said = [w.text for w in words_of_utterance(words[channel], u)]
            assert missed_words(said, u.text.split()) <= 1, (said, u.text)
        for w in words[channel]:
            assert w.start <= w.end and isinstance(w.start, float)


def test_mono_mixture_is_transcribed_per_speaker_track(dialogue, dialogue_activity):
    # The pipeline's mono path: both tracks cut from one mixture (here the turns do not overlap).
    words = transcribe_channels(None, 16000, dialogue_activity, mixture=dialogue.mixture())
    for channel in range(2):
        truth = " ".join(u.text for u in dialogue.in_channel(channel)).split()
        assert missed_words([w.text for w in words[channel]], truth) <= 1


def test_no_speech_no_words(dialogue):
    assert transcribe_channels(dialogue.samples, 16000, ([], [])) == ([], [])


def test_bad_arguments():
    with pytest.raises(ValueError, match="^transcription needs 16000 Hz audio, got 8000 Hz$"):
        transcribe_channels(None, 8000, ([], []))
    with pytest.raises(ValueError, match="^transcription needs the channels or the mono mixture$"):
        transcribe_channels(None, 16000, ([], []))


def test_clean_word():
    assert [clean_word(t) for t in [" Hello,", " THERE!", " don't", " 'cause", " ...", " you?", " Mm-hmm.", " -"]] == [
        "hello", "there", "don't", "cause", "", "you", "mm-hmm", ""]


def test_missed_words():
    assert missed_words("hello how are you".split(), "hello there how are you".split()) == 1
    assert missed_words("a b c".split(), "a b c".split()) == 0
    assert missed_words("a x c".split(), "a b c".split()) == 2  # one substitution: a miss and an excess


def test_regions_are_packed_in_time_order_up_to_the_capacity():
    regions = [(10.0, 13.0), (0.0, 2.0), (3.0, 6.0), (20.0, 40.0), (41.0, 42.0)]
    assert pack_regions(regions, 7.5) == [[(0.0, 2.0), (3.0, 6.0)], [(10.0, 13.0)], [(20.0, 40.0)], [(41.0, 42.0)]]
    assert pack_regions([], 7.5) == []


def test_encoder_window_holds_the_piece_and_its_end_margin():
    assert window_for(1.0) == 3 and window_for(4.5) == 5 and window_for(4.6) == 6 and window_for(7.5) == 8
    assert window_for(7.6) == 16 and window_for(29.5) == 30 and window_for(40.0) == WINDOWS_S[-1]


def test_piece_maps_its_times_back_to_the_recording():
    signal = np.arange(16000 * 10, dtype=np.float32)  # sample k holds k: cuts are visible exactly
    piece = Piece.join(0, signal, [(1.0, 2.0), (5.0, 5.5)])
    assert len(piece.audio) == 16000 * 1.5
    assert piece.audio[0] == 16000 and piece.audio[16000] == 5 * 16000
    assert piece.offsets.tolist() == [0.0, 1.0]
    assert piece.region_at(0.5) == 0 and piece.region_at(1.2) == 1
    assert piece.recording_time(0.25, 0) == 1.25 and piece.recording_time(1.25, 1) == 5.25
    assert piece.recording_time(1.75, 1) == 5.5  # kept inside its region


def test_a_looping_piece_is_transcribed_again_a_region_at_a_time(dialogue, dialogue_activity, monkeypatch):
    # A token cap far below the speech makes every multi-region piece "loop": the words must
    # then come from the regions transcribed one by one, at the same places.

    monkeypatch.setattr(asr, "TOKENS_PER_S", 0.5)
    calls = []
    transcribe_batch = asr._transcribe_batch
    monkeypatch.setattr(asr, "_transcribe_batch", lambda *a: calls.append(len(a[2][0].regions)) or transcribe_batch(*a))
    words = transcribe_channels(dialogue.samples, 16000, dialogue_activity)
    assert max(calls) > 1 and calls[-1] == 1  # packed pieces first, single regions after
    for channel in range(2):
        for u in dialogue.in_channel(channel):
            said = [w.text for w in words_of_utterance(words[channel], u)]
            assert len(said) <= len(u.text.split())  # capped, never looping past the speech


def test_a_loop_is_said_once():
    assert without_loop([5, 5, 5, 5, 5]) == [5]
    assert without_loop([1, 2, 3, 4, 2, 3, 4, 2, 3]) == [1, 2, 3, 4]  # cut mid-unit at the cap
    assert without_loop([1, 2, 3, 4]) == [1, 2, 3, 4]  # no repetition: nothing cut
