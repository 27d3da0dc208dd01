"""The predictive system's lexical completion cue on the packaged language model: a finished
request or question is far likelier to end a sentence than the same words cut short, whatever
punctuation the recogniser wrote; its likelihood ratio says so by its sign. The question cue
raises the odds of a turn end after a finished question, and lowers them after a cut one."""

from __future__ import annotations

import pytest

from systems.lexical_completion import (
    load_lexical_completion,
    log_likelihood_ratio,
    question_log_ratio,
    spoken_words,
)

# Sentences of neither the fit (lexical_completion_fit.py @ e518010, docs/dialogue-systems.md) nor the examiner.
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


# Neither the fit's (Switchboard) nor the examiner's.
QUESTIONS = ("Where is the nearest post office?", "Do you know a good recipe for soup?",
             "How long does the flight to Lisbon take?")
STATEMENTS = ("I bought a new bike last week.", "The soup was a little too salty.")
CUT = ("Where is the", "How long does the flight to")


def test_a_finished_question_raises_the_odds_of_a_turn_end_and_a_cut_one_lowers_them(completion):
    asked = [question_log_ratio(completion.p_question(text)) for text in QUESTIONS]
    told = [question_log_ratio(completion.p_question(text)) for text in STATEMENTS]
    cut = [question_log_ratio(completion.p_question(text)) for text in CUT]
    assert min(asked) > 0.4 and min(asked) > max(told) + 0.3, (asked, told)
    assert max(cut) < 0 < min(asked)  # a cut question is no question yet
