"""The lexical turn-completion cue (naturalness/word_cue.py) and the timing-hazard-words scorer, on
a hand-built dialogue with words, through the packaged timing and turn-end models.

The answer cut out after a question-like turn end, and the answer silenced, both score less
natural than the original; the other four perturbations too."""

import json

import numpy as np
import pytest

from judge.turn_end import load_turn_end_model
from naturalness.scorers import load_scorer
from naturalness.turn_cue import cue_logit_shift
from naturalness.word_cue import base_rate_logit, utterances_at_ipu_ends, word_cues
from tests.command_line import run_cli_json
from turntaking.activity import Conversation, Word, conversation_to_json

QUESTION = "so do you have any pets"
GOING_ON = "and then we went down to the"
ANSWER = "oh we have two dogs and a cat"


def dialogue() -> list[tuple[int, float, float, str]]:
    """(speaker, start, end, words): A asks, B answers, A goes on; A's pauses within a turn follow
    an unfinished phrase, the ends before B's answers are questions; B backchannels once."""
    return [
        (0, 0.5, 3.1, QUESTION), (1, 3.4, 5.6, ANSWER), (0, 5.9, 8.0, GOING_ON), (0, 8.4, 10.2, QUESTION),
        (1, 10.5, 13.0, ANSWER), (0, 13.3, 15.9, GOING_ON), (1, 14.6, 14.9, "uh-huh"), (0, 16.3, 18.0, QUESTION),
        (1, 18.3, 20.1, ANSWER), (0, 20.4, 23.8, GOING_ON), (0, 24.3, 27.5, QUESTION), (1, 27.8, 30.4, ANSWER),
        (0, 30.6, 33.0, QUESTION), (1, 33.3, 35.8, ANSWER), (0, 36.1, 38.6, QUESTION), (1, 38.9, 40.4, ANSWER),
    ]


def to_conversation(segments, words: bool = True) -> Conversation:
    duration = max(e for _, _, e, _ in segments) + 0.6
    activity = tuple([(s, e) for k, s, e, _ in segments if k == spk] for spk in (0, 1))
    if not words:
        return Conversation(duration, activity)
    spoken = ([], [])
    for k, s, e, text in segments:
        tokens = text.split()
        step = (e - s) / len(tokens)
        spoken[k].extend(Word(s + i * step, s + (i + 1) * step, t) for i, t in enumerate(tokens))
    return Conversation(duration, activity, tuple(sorted(w, key=lambda x: x.start) for w in spoken))


def insert_silence(segments, at: float, length: float):
    return [(k, s + (length if s >= at else 0), e + (length if s >= at else 0), t) for k, s, e, t in segments]


def remove_span(segments, start: float, end: float, gap: float):
    """Delete [start, end) from the timeline (both speakers) and put `gap` of silence there."""
    out = []
    for k, s, e, t in segments:
        if e <= start:
            out.append((k, s, e, t))
        elif s >= end:
            out.append((k, s - (end - start) + gap, e - (end - start) + gap, t))
    return out


PERTURBED = {
    # B's answer to "do you have any pets" (10.5-13.0) cut out: A pauses 0.6 s and goes on
    "answer_cut_out": lambda d: remove_span(d, 10.2, 13.3, 0.6),
    # the same answer silenced: A waits through the silence it leaves, then goes on
    "answer_silenced": lambda d: [x for x in d if x[:2] != (1, 10.5)],
    "late_response": lambda d: insert_silence(d, 18.3, 1.6),
    "early_entry": lambda d: [(k, s - 1.8, e - 1.8, t) if (k, s) == (1, 27.8) else (k, s, e, t) for k, s, e, t in d],
    # a 2 s answer of B inserted into A's 0.5 s pause after "... went down to the"
    "inserted_turn": lambda d: sorted(insert_silence(d, 24.3, 2.0) + [(1, 24.05, 26.05, ANSWER)], key=lambda x: x[1]),
    "extra_backchannels": lambda d: d + [(1, 1.4, 1.7, "yeah"), (1, 21.2, 21.5, "yeah"), (1, 22.3, 22.6, "yeah")],
}


@pytest.mark.parametrize("kind", sorted(PERTURBED))
def test_words_scorer_finds_each_perturbation_less_natural(kind):
    scorer = load_scorer("timing-hazard-words")
    natural, perturbed = to_conversation(dialogue()), to_conversation(PERTURBED[kind](dialogue()))
    assert perturbed.activity != natural.activity
    got, want = scorer.score(perturbed), scorer.score(natural)
    assert got.word_cues > 0 and want.word_cues > 0
    assert got.naturalness < want.naturalness


def test_the_words_are_what_catches_the_cut_out_answer():
    """On voice activity alone the cut-out answer leaves an ordinary hold: the default ranks this
    one the wrong way round; with the question before it, it is a missing answer."""
    natural, perturbed = (to_conversation(d) for d in (dialogue(), PERTURBED["answer_cut_out"](dialogue())))
    timing = load_scorer("timing-hazard")
    assert timing.score(perturbed).naturalness > timing.score(natural).naturalness
    words = load_scorer("timing-hazard-words")
    assert words.score(perturbed).naturalness < words.score(natural).naturalness


def test_without_words_the_score_is_timing_hazards_and_says_so():
    conv = to_conversation(dialogue(), words=False)
    score = load_scorer("timing-hazard-words").score(conv)
    assert score.word_cues is None
    assert score.dialog_nll == pytest.approx(load_scorer("timing-hazard").score(conv).dialog_nll, abs=1e-12)
    assert score.as_dict()["scorer"] == "timing-hazard-words"
    assert word_cues(conv, load_turn_end_model()) is None


def test_cues_read_the_utterance_up_to_each_ipu_end():
    model = load_turn_end_model()
    conv = to_conversation(dialogue())
    utterances = utterances_at_ipu_ends(conv)
    # every IPU of at least 0.3 s has one (the 0.3 s backchannel too)
    assert [(k, round(t, 2)) for k, t, _ in utterances] == sorted(((k, e) for k, _, e, _ in dialogue()), key=lambda x: x[1])
    first = {(k, round(t, 2)): tokens for k, t, tokens in utterances}
    assert first[(0, 3.1)][-2:] == ("any", "pets") and first[(0, 8.0)][-2:] == ("to", "the")
    # A's second IPU of a turn reads the turn since B last spoke: both IPUs' words
    assert first[(0, 10.2)] == tuple((GOING_ON + " " + QUESTION).split())
    cues = {(c.speaker, round(c.time_s, 2)): c.p_complete for c in word_cues(conv, model)}
    assert cues[(0, 3.1)] > model.base_rate > cues[(0, 8.0)]
    with_question = {(c.speaker, round(c.time_s, 2)): c.p_complete for c in word_cues(conv, model, with_question=True)}
    assert with_question[(0, 3.1)] > cues[(0, 3.1)]


def test_a_fixed_centre_moves_the_hazards_by_the_cue_itself():
    conv = to_conversation(dialogue())
    model = load_turn_end_model()
    cues = word_cues(conv, model)
    va = np.zeros((2, 100), dtype=np.int8)
    va[0, :20] = 1
    va[1, 40:60] = 1
    end = [c for c in cues if round(c.time_s, 2) == 3.1][0]
    cue = type(end)(0, 1.0, end.p_complete)
    shift = cue_logit_shift([cue], va, 20, 2.0, base_rate_logit(model))
    d = 2.0 * (np.log(cue.p_complete / (1 - cue.p_complete)) - base_rate_logit(model))
    assert shift[1, 20:40] == pytest.approx(d) and shift[0, 20:40] == pytest.approx(-d)
    assert not shift[:, :20].any() and not shift[:, 40:].any()


def test_cli_scores_a_json_with_its_words_and_one_without(tmp_path):
    with_words, without = tmp_path / "words.json", tmp_path / "activity.json"
    with_words.write_text(json.dumps(conversation_to_json(to_conversation(dialogue()))))
    without.write_text(json.dumps(conversation_to_json(to_conversation(dialogue(), words=False))))
    report = run_cli_json("naturalness", "score", with_words, without, "--scorer", "timing-hazard-words")
    assert report["scorer"] == "timing-hazard-words" and report["params"]["word_cue"]["weight"] == 1.0
    first, second = report["dialogues"]
    assert first["word_cues"] == len(dialogue()) and second["word_cues"] is None
    [plain] = run_cli_json("naturalness", "score", without)["dialogues"]
    assert second["naturalness"] == pytest.approx(plain["naturalness"], abs=1e-9)
