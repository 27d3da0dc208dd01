"""The turn-end model of the predictive system: silences and their labels on the scripted
conversation, a fit on a tiny MS-98 corpus, the packaged model's behaviour and its file checks,
the judge feature as the streaming judge gives it, and the command line's error paths."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from judge.features import FRAME_RATE
from judge.model import load_checkpoint
from judge.streaming import StreamingJudge
from judge.questions import dialog_act_units, fit_question_model, question_features
from judge.turn_end import (
    JUDGE_AT_S,
    SURVIVAL_FLOOR,
    TurnEndError,
    conversation_silences,
    judge_frame,
    load_turn_end_model,
    save_turn_end_model,
    utterance_tokens,
)
from judge.turn_end_fitting import fit_turn_end_model, judge_p_t_after_frames
from judge.model import packaged_checkpoint_dir
from tests.command_line import one_line_error, run_cli
from tests.scripted import UTTERANCES, scripted_conversation, write_ms98


@pytest.fixture(scope="module")
def judge():
    return load_checkpoint()


@pytest.fixture(scope="module")
def packaged():
    return load_turn_end_model()


def test_silences_of_the_scripted_conversation(judge):
    conv = scripted_conversation()
    found = [(s.start, s.speaker, s.shift, None if s.hold_s is None else round(s.hold_s, 6), s.words)
             for s in conversation_silences(conv, judge_p_t_after_frames(judge, conv))]
    assert found == [
        (3.0, 0, False, 0.8, ("and", "slept")),  # B's "uh-huh" inside A's turn: a hold, A resumes at 3.8
        (3.6, 1, True, None, ("uhuh",)),  # after B's backchannel A goes on: B's "turn" ended
        (6.0, 0, False, 0.5, ("woke", "up")),
        (8.0, 0, True, None, ("i", "mean")),
        (11.0, 1, False, 0.5, ("so", "too")),  # B's words since A's "but wait" ended
        (15.0, 0, True, None, ("something", "now")),
    ]


def test_the_judge_feature_is_what_the_streaming_judge_says_after_six_silent_frames(judge):
    conv = scripted_conversation()
    silences = conversation_silences(conv, judge_p_t_after_frames(judge, conv))
    frames = conv.frames(FRAME_RATE)
    streaming = StreamingJudge(judge)
    read = {}
    silent_run = 0
    for t in range(frames.shape[1]):
        streaming.push(bool(frames[0, t]), bool(frames[1, t]))
        silent_run = 0 if frames[:, t].any() else silent_run + 1
        if silent_run == round(JUDGE_AT_S * FRAME_RATE):
            read[t] = streaming.prob("T")
    for s in silences:
        assert judge_frame(s.start) in read
        assert s.judge_p_t == pytest.approx(read[judge_frame(s.start)], abs=1e-5)


def test_fit_on_a_tiny_ms98_corpus_and_round_trip(tmp_path, judge):
    ids = ["4321", "4322", "4323"]
    for conv_id in ids:
        write_ms98(tmp_path, conv_id)
    model = fit_turn_end_model(tmp_path, ids, judge=judge)
    # 6 silences a conversation, 3 of them shifts (see the test above)
    assert model.provenance["silences"] == 18 and model.base_rate == pytest.approx(0.5)
    assert model.last_word["uhuh"] == (3, 3) and model.last_two_words["woke up"] == (3, 0)
    assert model.p_words(("uhuh",)) > model.base_rate > model.p_words(("woke", "up"))
    # holds: 0.8, 0.5, 0.5 s of pause in each conversation
    assert model.pause_survival(0.49) == 1.0
    assert model.pause_survival(0.5) == pytest.approx(1 / 3, abs=1e-6)
    assert model.pause_survival(0.8) == SURVIVAL_FLOOR
    saved = tmp_path / "turn_end.json"
    save_turn_end_model(model, saved)
    assert load_turn_end_model(saved) == model


def test_a_finished_question_has_a_much_higher_prior_than_an_unfinished_phrase(packaged):
    unfinished = packaged.prior_shift(packaged.last_words("I was going to the"), None)
    question = packaged.prior_shift(packaged.last_words("what do you think"), None)
    assert unfinished < 0.5 * question
    assert unfinished < packaged.base_rate < question


def test_asr_spelling_and_transcript_spelling_meet(packaged):
    assert packaged.last_words("Going to the...") == packaged.last_words("going to the") == ("to", "the")
    assert utterance_tokens(["Going", "to", "th[e]-", "[laughter]"]) == ("going", "to", "the")
    for asr, transcript in (("Uh-huh.", "uh-huh"), ("Uh huh.", "uh-huh"), ("uhhuh", "uh-huh"),
                            ("Mm-hmm.", "um-hum"), ("Mhm.", "um-hum"), ("mm hmm", "um-hum"), ("Yeah.", "yeah"),
                            ("Oh, yeah!", "oh yeah"), ("(laughs) Okay.", "okay")):
        assert packaged.last_words(asr) == utterance_tokens(transcript.split()), asr
    assert packaged.last_words("") == ()
    assert packaged.prior_shift(packaged.last_words("Uh-huh."), None) > packaged.base_rate


def test_pause_survival_falls_from_one_and_the_posterior_rises_with_silence(packaged):
    grid = np.arange(0, 6.0, 0.02)
    survival = np.array([packaged.pause_survival(t) for t in grid])
    assert survival[0] == 1.0 and np.all(np.diff(survival) <= 0) and survival[-1] >= SURVIVAL_FLOOR
    assert survival[-1] < 0.05
    words = packaged.last_words("I was going to the")
    p = [packaged.p_turn_end(words, 0.3, t) for t in (0.12, 0.5, 1.0, 2.0)]
    assert p[0] == pytest.approx(packaged.prior_shift(words, 0.3)) and p == sorted(p) and p[-1] > p[1]


def test_missing_inputs_use_the_models_fitted_without_them(packaged):
    assert packaged.prior_shift(None, None) == packaged.base_rate
    words = packaged.last_words("what do you think")
    assert packaged.prior_shift(words, None) != packaged.prior_shift(words, 0.3)
    assert packaged.prior_shift(None, 0.6) > packaged.prior_shift(None, 0.05)


def test_the_packaged_file_is_checked_against_its_manifest(tmp_path):
    for name in ("turn_end.json", "turn_end.manifest.json"):
        shutil.copy(packaged_checkpoint_dir() / name, tmp_path / name)
    assert load_turn_end_model(tmp_path / "turn_end.json") == load_turn_end_model()
    data = bytearray((tmp_path / "turn_end.json").read_bytes())
    data[100] = ord("7") if data[100] != ord("7") else ord("8")
    (tmp_path / "turn_end.json").write_bytes(bytes(data))
    with pytest.raises(TurnEndError, match="sha256 differs from its manifest"):
        load_turn_end_model(tmp_path / "turn_end.json")
    with pytest.raises(TurnEndError, match="turn-end model not found"):
        load_turn_end_model(tmp_path / "absent.json")


def test_command_line_errors_are_one_line(tmp_path):
    one_line_error(run_cli("judge", "fit-turn-end", tmp_path / "nowhere", "--out", tmp_path / "m.json"),
                   "not a Switchboard directory")
    one_line_error(run_cli("judge", "evaluate-turn-end", tmp_path / "nowhere"), "not a Switchboard directory")
    one_line_error(run_cli("judge", "evaluate-turn-end", tmp_path, "--model", tmp_path / "absent.json"),
                   "turn-end model not found")
    write_ms98(tmp_path, "4321", utterances=UTTERANCES)  # a corpus without splits/
    one_line_error(run_cli("judge", "fit-turn-end", tmp_path, "--out", tmp_path / "m.json"), "split list not found")


def test_a_finished_question_is_a_question_by_its_words_not_its_last_two(packaged):
    question, unfinished = "what should i pack for a weekend hiking trip", "i was thinking about going to the"
    # Its last two words alone say little; the question cue lifts the prior.
    for judge_p_t in (None, 0.3):
        without = packaged.prior_shift(packaged.last_words(question), judge_p_t)
        with_utterance = packaged.prior_shift(packaged.last_words(question), judge_p_t, question)
        assert with_utterance > without + 0.2 and with_utterance > 1.5 * without, judge_p_t
        assert packaged.prior_shift(packaged.last_words(unfinished), judge_p_t, unfinished) < packaged.base_rate
    assert packaged.questions.p_tokens(utterance_tokens([question])) > 0.5
    assert packaged.questions.p_tokens(utterance_tokens([unfinished])) < 0.1
    # None and an utterance without words are the fits without the cue, unchanged.
    words = packaged.last_words(question)
    assert packaged.prior_shift(words, 0.3, None) == packaged.prior_shift(words, 0.3, "") == \
        packaged.prior_shift(words, 0.3)
    assert packaged.prior_shift(None, None, question) > 1.5 * packaged.prior_shift(None, None, unfinished)


def test_asr_spelling_and_transcript_spelling_meet_for_the_question_cue(packaged):
    for asr, transcript in (("What should I pack for a weekend trip?", "what should i pack for a weekend trip"),
                            ("Do you have kids, right?", "do you have kids right"),
                            ("Uh-huh. Don't you think so?", "uh-huh don't you think so"),
                            ("(laughs) Is it, uh, far?", "[laughter-is] it uh far")):
        tokens = utterance_tokens(transcript.split())
        assert packaged.question_logit(utterance_tokens([asr])) == packaged.question_logit(tokens), asr
        assert packaged.prior_shift(packaged.last_words(asr), 0.3, asr) == \
            packaged.prior_from_tokens(packaged.last_words(asr), 0.3, tokens)


DIALOG_ACTS_A = """sw4321A-ms98-a-0001,0.1,0.3,do,B,qy,u-1-1
sw4321A-ms98-a-0001,0.3,0.5,you,I,qy,u-1-1
sw4321A-ms98-a-0002,0.9,1.0,[laughter],O,,
sw4321A-ms98-a-0002,1.0,1.2,uh,B,sd,u-2-1
sw4321A-ms98-a-0002,1.2,1.4,we-,I,sd,u-2-1
sw4321A-ms98-a-0003,2.0,2.3,have,B,+,u-3-1
sw4321A-ms98-a-0003,2.3,2.6,kids,I,+,u-3-1
sw4321A-ms98-a-0004,3.0,3.2,right,B,^g,u-4-1
"""


def test_dialog_act_units_and_a_question_model_on_them(tmp_path):
    (tmp_path / "swb_dialog_acts_words").mkdir()
    (tmp_path / "swb_dialog_acts_words" / "sw4321A-word-da.csv").write_text(DIALOG_ACTS_A)
    (tmp_path / "swb_dialog_acts_words" / "sw4321B-word-da.csv").write_text(
        "sw4321B-ms98-a-0001,0.6,0.8,yeah,B,sd,u-1-1\n")
    units = dialog_act_units(tmp_path, "4321")
    assert [(u.speaker, u.texts, u.tag, u.question) for u in units] == [
        ("A", ("do", "you"), "qy", True),
        ("B", ("yeah",), "sd", False),
        ("A", ("uh", "we-"), "sd", False),
        ("A", ("have", "kids"), "sd", False),  # "+" continues A's previous unit
        ("A", ("right",), "^g", True),
    ]
    assert question_features(("do", "you", "have")) == {
        "w:do", "w:you", "w:have", "b:<s> do", "b:do you", "b:you have", "b:have </s>",
        "first:do", "last:have", "first2:do you", "last2:you have"}
    model = fit_question_model(units * 5, utterance_tokens)  # every feature seen 5 times or more
    assert model.p_tokens(("do", "you")) > 0.5 > model.p_tokens(("uh", "we"))
