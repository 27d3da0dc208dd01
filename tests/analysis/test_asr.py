"""Words with times from the packaged Whisper tiny.en, on espeak-ng speech at known times."""

import pytest

from analysis.asr import clean_word, transcribe_channels
from analysis.silero import silero_segments


@pytest.fixture(scope="module")
def dialogue_activity(dialogue):
    return tuple(silero_segments(dialogue.samples))


def words_of_utterance(words, utterance, margin=0.15):
    return [w for w in words if utterance.start - margin <= w.start and w.end <= utterance.end + margin]


def test_each_channel_is_transcribed_word_by_word_at_its_times(dialogue, dialogue_activity):
    words = transcribe_channels(dialogue.samples, 16000, dialogue_activity)
    for channel in range(2):
        utterances = dialogue.in_channel(channel)
        # Every word lies inside one utterance's bounds (150 ms margin: the VAD segment it is kept in).
        assert sum(len(words_of_utterance(words[channel], u)) for u in utterances) == len(words[channel])
        for u in utterances:
            said = [w.text for w in words_of_utterance(words[channel], u)]
            assert said == u.text.split(), (said, u.text)
        for w in words[channel]:
            assert w.start <= w.end and isinstance(w.start, float)


def test_mono_mixture_is_transcribed_per_speaker_track(dialogue, dialogue_activity):
    # The pipeline's mono path: both tracks cut from one mixture (here the turns do not overlap).
    words = transcribe_channels(None, 16000, dialogue_activity, mixture=dialogue.mixture())
    assert [w.text for w in words[0]] == " ".join(u.text for u in dialogue.in_channel(0)).split()
    assert [w.text for w in words[1]] == " ".join(u.text for u in dialogue.in_channel(1)).split()


def test_no_speech_no_words(dialogue):
    assert transcribe_channels(dialogue.samples, 16000, ([], [])) == ([], [])


def test_bad_arguments():
    with pytest.raises(ValueError, match="^transcription needs 16000 Hz audio, got 8000 Hz$"):
        transcribe_channels(None, 8000, ([], []))
    with pytest.raises(ValueError, match="^transcription needs the channels or the mono mixture$"):
        transcribe_channels(None, 16000, ([], []))


def test_clean_word():
    assert [clean_word(t) for t in [" Hello,", " THERE!", " don't", " 'cause", " ...", " you?"]] == [
        "hello", "there", "don't", "cause", "", "you"]
