"""The predictive system's lexical completion cue on the packaged language model: a finished
request or question is far likelier to end a sentence than the same words cut short, whatever
punctuation the recogniser wrote; its likelihood ratio says so by its sign."""

from __future__ import annotations

import pytest

from studies.systems.lexical_completion import load_lexical_completion, log_likelihood_ratio, spoken_words

# Sentences of neither the fit (benchmarks/lexical_completion_fit.py) nor the examiner.
PAIRS = [
    ("Could you read me the news headlines?", "Could you read me the"),
    ("I want to return these shoes.", "I want to return these"),
    ("What is the weather like in Rome today?", "What is the weather like in"),
    ("My train leaves at seven.", "My train leaves at"),
]


@pytest.fixture(scope="module")
def completion():
    return load_lexical_completion()


def test_spoken_words_drop_the_recognisers_punctuation():
    assert spoken_words(" going to the... ") == "Going to the"
    assert spoken_words("Well, mm-hm. Yes?") == "Well mm hm Yes"
    assert spoken_words(" ?! ") == ""


@pytest.mark.parametrize("finished, cut", PAIRS)
def test_a_finished_sentence_ends_and_its_cut_prefix_does_not(completion, finished, cut):
    done, short = completion.p_end(finished), completion.p_end(cut)
    assert done > 20 * short, (done, short)
    assert log_likelihood_ratio(done) > 0 > log_likelihood_ratio(short)
    # Whisper often writes "." after a cut: the cue reads the words, not the guess
    assert completion.p_end(cut + ".") == pytest.approx(short)


def test_no_words_no_sentence_end(completion):
    assert completion.p_end("") == 0.0 and completion.p_end("...") == 0.0
