"""The word-conditioned judge: word inputs on hand-built words, their causality, scoring without words."""

import json
import math

import numpy as np
import pytest
import torch

from turntaking.activity import Conversation, Word, conversation_to_json
from judge.features import MAX_SINCE_S
from judge.model import JudgeConfig, JudgeModel, load_checkpoint, predict, save_checkpoint
from judge.words import (
    NO_WORD_ID,
    OOV_ID,
    MissingWordsError,
    build_vocabulary,
    normalize_word,
    word_index,
    word_inputs,
)
from naturalness.turnnat_va import score_conversation
from tests.scripted import scripted_conversation
from tests.command_line import one_line_error, run_cli, run_cli_json

VOCABULARY = ["yeah", "i", "you", "know", "uh-huh", "don't"]
INDEX = word_index(VOCABULARY)


def words_model(seed: int = 0) -> JudgeModel:
    torch.manual_seed(seed)
    model = JudgeModel(JudgeConfig(inputs="words", hidden_size=16, head_hidden=16, word_vocabulary=VOCABULARY,
                                   word_dim=4))
    return model.eval()


def test_normalize_word_meets_switchboard_and_whisper_spellings():
    assert normalize_word(" Yeah,") == "yeah"
    assert normalize_word("Don't.") == "don't"
    assert normalize_word("uh-huh") == "uh-huh"
    assert normalize_word("-so") == "so"
    assert normalize_word("?!") == ""


def test_vocabulary_is_the_most_frequent_words_ties_alphabetical():
    conv = Conversation(3.0, ([(0, 1)], [(1, 2)]), (
        [Word(0, 0.5, "Yeah"), Word(0.5, 1.0, "you"), Word(1.0, 1.2, "know")],
        [Word(1.0, 1.5, "yeah,"), Word(1.5, 2.0, "i")],
    ))
    no_words = Conversation(3.0, ([(0, 1)], []))
    assert build_vocabulary([conv, no_words], 3) == ["yeah", "i", "know"]


def test_word_inputs_known_frame_by_frame():
    # speaker 0: "you" ends at 0.51 s, "know" (0.51-0.80) ends in frame 39 (0.78-0.80 ends exactly at 0.80)
    # speaker 1: "whatever" (not in the vocabulary) ends at 0.30 s
    words = ([Word(0.20, 0.51, "you"), Word(0.51, 0.80, "know")], [Word(0.05, 0.30, "whatever")])
    ids, feats = word_inputs(words, 60, INDEX)
    assert ids.shape == (60, 2) and feats.shape == (60, 2)
    # frame t ends at (t + 1) / 50 s: "you" is known from frame 25 (ends 0.52 s), not in frame 24 (0.50 s)
    assert ids[:25, 0].tolist() == [NO_WORD_ID] * 25
    assert ids[25:39, 0].tolist() == [INDEX["you"]] * 14
    assert ids[39:, 0].tolist() == [INDEX["know"]] * 21  # frame 39 ends at 0.80 s = the word's end
    assert ids[:14, 1].tolist() == [NO_WORD_ID] * 14 and ids[14:, 1].tolist() == [OOV_ID] * 46
    never = math.log1p(MAX_SINCE_S)
    assert feats[24, 0] == pytest.approx(never)
    assert feats[25, 0] == pytest.approx(math.log1p(0.01))
    assert feats[39, 0] == pytest.approx(0.0)
    assert feats[59, 0] == pytest.approx(math.log1p(1.2 - 0.8))
    assert feats[59, 1] == pytest.approx(math.log1p(1.2 - 0.3))


def two_turns(last_word: str) -> Conversation:
    """A speaks 0.5-4.0 s ending on `last_word` (ends 4.0 s), B answers 4.6-6.0 s."""
    a = [Word(0.5 + 0.5 * i, 1.0 + 0.5 * i, w) for i, w in enumerate(["i", "don't", "yeah", "i", "you", "i"])]
    a.append(Word(3.5, 4.0, last_word))
    b = [Word(4.6, 5.2, "yeah"), Word(5.2, 6.0, "i")]
    return Conversation(8.0, ([(0.5, 4.0)], [(4.6, 6.0)]), (a, b))


def test_a_word_reaches_no_frame_before_its_end():
    model = words_model()
    know, yeah = predict(model, two_turns("know")), predict(model, two_turns("yeah"))
    end_frame = round(4.0 * 50) - 1  # the first frame whose end (t + 1) / 50 reaches 4.0 s
    assert np.array_equal(know.va_log_probs[:end_frame], yeah.va_log_probs[:end_frame])
    assert not np.allclose(know.va_log_probs[end_frame], yeah.va_log_probs[end_frame])
    # label row i reads the state after frames < 2i: the first row that can see the word is end_frame // 2 + 1
    first_row = end_frame // 2 + 1
    assert np.array_equal(know.label_probs[:first_row], yeah.label_probs[:first_row])
    assert not np.allclose(know.label_probs[first_row], yeah.label_probs[first_row])


def test_words_judge_needs_words_and_says_so():
    model = words_model()
    with pytest.raises(MissingWordsError, match="needs the words"):
        predict(model, Conversation(8.0, ([(0.5, 4.0)], [(4.6, 6.0)]), source="vad-only.json"))


def test_words_checkpoint_round_trip_keeps_the_vocabulary(tmp_path):
    model = words_model()
    path = tmp_path / "w.pt"
    save_checkpoint(model, path)
    loaded = load_checkpoint(path)
    assert loaded.needs_words and loaded.config.word_vocabulary == VOCABULARY
    conv = two_turns("know")
    assert np.allclose(predict(loaded, conv).va_log_probs, predict(model, conv).va_log_probs)


def test_pairs_and_naturalness_cli_with_a_words_checkpoint(tmp_path):
    ckpt = tmp_path / "w.pt"
    save_checkpoint(words_model(), ckpt)
    conv = scripted_conversation(with_words=True)
    with_words = tmp_path / "with_words.json"
    with_words.write_text(json.dumps(conversation_to_json(conv)))
    [row] = run_cli_json("naturalness", "score", with_words, "--scorer", "turnnat-va", "--checkpoint", ckpt)["dialogues"]
    assert row["dialog_nll"] == pytest.approx(score_conversation(conv, load_checkpoint(ckpt)).dialog_nll)

    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(conversation_to_json(scripted_conversation(with_words=False))))
    one_line_error(run_cli("naturalness", "score", bare, "--scorer", "turnnat-va", "--checkpoint", ckpt), "bare.json", "needs the words")
    manifest = tmp_path / "m.jsonl"
    manifest.write_text(json.dumps({"pair_id": "p", "type": "t", "natural": "with_words.json",
                                    "perturbed": "bare.json"}) + "\n")
    one_line_error(run_cli("naturalness", "pairs", manifest, "--scorer", "turnnat-va", "--checkpoint", ckpt), "bare.json", "needs the words")

