"""The reply measures (studies.reply_quality) on the packaged SmolLM2, and the cascade's reply
settings that were chosen by them: suppressed words, the system's own replies in the prompt."""

from __future__ import annotations

import json

import pytest

from studies.reply_quality import (
    exchanges_from_log,
    packaged_scorer,
    relevances,
    reply_qualities,
    summarize,
)
from systems.base import SystemError_
from systems.cascaded import CascadedSettings
from systems.reply_prompts import reply_prompt
from tests.command_line import run_cli

TURNS = ["How early should I start the hike tomorrow?",
         "What should I cook for dinner tonight?",
         "Which museum should I visit first in Paris?",
         "My knees hurt after running, what should I do?"]
ANSWERS = ["Start at dawn, before the trail gets hot.",
           "Make a pasta with tomato sauce and basil.",
           "Go to the Louvre first, it opens at nine.",
           "Rest them for a few days and stretch before you run."]


def test_a_reply_that_answers_its_turn_is_relevant_one_that_fits_any_turn_is_not():
    scores = relevances(packaged_scorer(), TURNS, ANSWERS)
    assert all(s > 0.3 for s in scores), scores
    # Each answer given to the wrong question (shifted by one) is less likely than after its own.
    shifted = relevances(packaged_scorer(), TURNS, ANSWERS[1:] + ANSWERS[:1])
    assert all(s < 0 for s in shifted), shifted
    # A reply that fits anything, the baseline's habit, scores near nothing whichever turn it follows.
    generic = "I'm sorry for any confusion, but I'd be happy to help with that."
    generic_scores = relevances(packaged_scorer(), TURNS, [generic] * len(TURNS))
    assert max(abs(s) for s in generic_scores) < min(scores) / 2, (generic_scores, scores)


def test_a_reply_that_says_its_turn_back_is_an_echo_and_answers_nothing():
    # What the 135M model said to turns of the fitting conversations (docs/dialogue-systems.md): under
    # the likelihood alone, the turn itself is the likeliest reply to it.
    turns = TURNS + ["When can it go for walks?", "We are getting a puppy on Friday."]
    replies = ANSWERS + ["When can it go for walks?", "We're getting a puppy on Friday."]
    alone = relevances(packaged_scorer(), turns, replies)
    assert min(alone[4:]) > max(alone[:4]), alone  # the echoes score highest of all
    qualities = reply_qualities(packaged_scorer(), turns, replies)
    assert [q.echo for q in qualities] == [False] * 4 + [True] * 2
    assert [q.relevance for q in qualities[4:]] == [0.0, 0.0]
    assert [q.relevance for q in qualities[:4]] == alone[:4]
    assert summarize(qualities).echoes == 2 and summarize(qualities).as_dict()["echoes"] == 2


def test_a_reply_to_a_question_about_the_conversation_is_not_measured_by_its_turn():
    # "You said..." is explained by the earlier turn it says back, one of the contrast turns:
    # the measure would count the right answer as one that answers another turn.
    # (the fourth confirming set's noisy neighbour, the right answer said back)
    turns = ["My upstairs neighbour plays drums every night.", "It usually starts around eleven.",
             "How do I ask him to stop without a fight?", "What instrument did I say he plays?"]
    replies = ["That must be loud at night.", "Eleven is late for drums.",
               "Knock and ask him kindly after the noise.", "You said your upstairs neighbour plays drums every night."]
    alone = relevances(packaged_scorer(), turns, replies)
    assert alone[3] < -0.5 and alone[3] < min(alone[:3]), alone  # the right answer scored lowest
    qualities = reply_qualities(packaged_scorer(), turns, replies)
    assert qualities[3].relevance is None and [q.relevance for q in qualities[:3]] == alone[:3]
    assert summarize(qualities).relevance_mean == pytest.approx(sum(alone[:3]) / 3)


def test_the_call_summary_counts_apologies_disclaimers_and_long_replies():
    replies = ["I'm sorry for your loss, but as a voice assistant I don't have personal preferences.",
               "Start at dawn. The trail gets hot. Bring water. And a hat.", "The Louvre.", ""]
    qualities = reply_qualities(None, TURNS, replies)
    summary = summarize(qualities)
    assert (summary.apologies, summary.disclaimers, summary.long_replies) == (1, 1, 1)
    assert summary.relevance_mean is None  # no model given
    # A conversation of one turn has nothing to contrast a reply with.
    assert relevances(packaged_scorer(), ["Hello there."], ["Hi, how are you?"]) == [None]
    with pytest.raises(ValueError):
        relevances(packaged_scorer(), TURNS, ANSWERS[:2])


def test_exchanges_are_read_from_a_timing_log_a_dropped_speculation_left_out():
    events = [{"event": "transcript", "turn": 1, "text": "I am planning a hike", "mic_s": 2.0},
              {"event": "transcript", "turn": 2, "text": "I am planning a hike for Saturday", "mic_s": 2.6},
              {"event": "decided", "turn": 2, "text": "Nice,", "mic_s": 2.9},
              {"event": "reply_chunk", "turn": 2, "text": "where are you going?", "mic_s": 3.1},
              {"event": "reply", "turn": 2, "text": "Nice, where are you going?", "mic_s": 3.4},
              {"event": "transcript", "turn": 3, "text": "To the Alps", "mic_s": 6.0},
              {"event": "decided", "turn": 3, "text": "The Alps are", "mic_s": 6.3},  # cut off: no "reply"
              {"event": "reply_chunk", "turn": 3, "text": "lovely in June.", "mic_s": 6.6}]
    assert exchanges_from_log(events) == [("I am planning a hike for Saturday", "Nice, where are you going?"),
                                          ("To the Alps", "The Alps are lovely in June.")]


def test_the_prompt_keeps_the_first_sentence_of_the_systems_own_replies():
    history = [("My name is Anna.", "Nice to meet you, Anna! Where are you hiking? I love the Alps.")]
    messages = reply_prompt(history, "What did I say my name was?", exchanges=2, earlier_user_turns=5,
                            reply_sentences=1)
    assert messages == [{"role": "user", "content": "My name is Anna."},
                        {"role": "assistant", "content": "Nice to meet you, Anna!"},
                        {"role": "user", "content": "What did I say my name was?"}]


def test_suppressed_words_come_from_the_study_file_as_a_list_and_are_checked():
    settings = CascadedSettings.from_config({"suppressed_words": ["sorry", "apologize"]})
    assert settings.suppressed_words == ("sorry", "apologize")
    assert settings.decoding(0).suppressed_words == ("sorry", "apologize")
    with pytest.raises(SystemError_, match="suppressed_words"):
        CascadedSettings.from_config({"suppressed_words": ["sorry", 3]})


def test_a_suppressed_word_is_never_said_where_the_model_would_say_it(cascade_components):
    llm = cascade_components[2]
    # the cascade's first turn of a fitting conversation, under the assistant prompt it had until 6 Dec 2026
    messages = [{"role": "system", "content": "You are a friendly voice assistant talking with a person about a "
                 "trip to Paris. Answer in one or two short spoken sentences. No lists, no emojis."},
                {"role": "user", "content": "I am flying to Paris next month."}]
    plain = CascadedSettings(suppressed_words=())
    said = "".join(llm.stream(messages, 24, decoding=plain.decoding(0)))
    assert "sorry" in said.lower(), said  # what the packaged model said then
    kept = CascadedSettings(suppressed_words=("sorry",))
    said = "".join(llm.stream(messages, 24, decoding=kept.decoding(0)))
    assert said.strip() and "sorry" not in said.lower(), said


def test_the_command_line_measures_a_calls_timing_log(tmp_path):
    log = tmp_path / "call.jsonl"
    events = []
    for turn, (heard, said) in enumerate(zip(TURNS, ANSWERS[:3] + ["I'm sorry, as an AI I cannot run."])):
        events += [{"event": "transcript", "turn": turn, "text": heard, "mic_s": 2.0 + 5 * turn},
                   {"event": "reply", "turn": turn, "text": said, "mic_s": 3.0 + 5 * turn}]
    log.write_text("\n".join(json.dumps(e) for e in events) + "\n{\"event\": \"rep")  # a killed process's last line
    done = run_cli("studies", "replies", log, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["summary"]["replies"] == 4 and report["summary"]["apologies"] == 1
    assert report["summary"]["disclaimers"] == 1
    assert [r["relevance"] > 0.3 for r in report["replies"][:3]] == [True, True, True]
    assert [r["echo"] for r in report["replies"]] == [False] * 4
    table = run_cli("studies", "replies", log)
    assert table.returncode == 0 and "apology,disclaimer" in table.stdout
    for bad in (tmp_path / "missing.jsonl", tmp_path / "empty.jsonl"):
        if bad.name == "empty.jsonl":
            bad.write_text("")
        done = run_cli("studies", "replies", bad)
        assert done.returncode == 1 and done.stderr.startswith("error:") and "Traceback" not in done.stderr


def test_a_question_about_the_conversation_gets_what_was_said_before(cascade_components):
    # Not from the fitting or the confirming conversations (those are measured, not pinned): one of
    # six new recall questions tried once here, four of which the packaged model answered right.
    settings = CascadedSettings()
    history = [("I am going to a jazz concert in Berlin on Friday.", "Oh, nice!"),
               ("I have never been to Germany.", "You will love it.")]
    messages = settings.reply_messages("a concert", history, "Where did I say the concert was?")
    assert messages[-1]["content"].startswith("What I told you so far:\nI am going to a jazz concert in Berlin")
    assert "You will love it" not in messages[-1]["content"]  # its own words only when asked what it said
    said = "".join(cascade_components[2].stream(messages, settings.max_new_tokens, decoding=settings.decoding(2)))
    assert "berlin" in said.lower(), said
    # Any other turn keeps the prompt short: the turn before and this one.
    other = settings.reply_messages("a concert", history, "What should I wear?")
    assert [m["content"] for m in other[1:]] == ["I have never been to Germany.", "What should I wear?"]
