"""The first words after a silence as evidence of who spoke last (naturalness/first_words.py), in
the `timing-hazard-words` scorer: on the scripted conversation of known events, on hand-built
dialogues with words, through the packaged table, and the table's command line on a tiny MS-98
corpus."""

import json
import shutil
from dataclasses import replace

import pytest

from naturalness.first_words import (
    FirstWordsError,
    first_words_term,
    ipu_starts,
    load_first_words_table,
    packaged_first_words_path,
    scored_starts,
)
from naturalness.model_files import manifest_path
from naturalness.scorers import load_scorer
from speech.recordings import load_recording
from tests.command_line import one_line_error, run_cli
from tests.naturalness.test_word_cue import remove_span, to_conversation
from tests.rendered_speech import SAMPLE_RATE, Utterance, render_speech, speak
from tests.scripted import UTTERANCES, scripted_conversation, write_ms98
from turntaking.activity import Conversation, Word


def test_starts_their_roles_and_what_is_scored_on_the_scripted_conversation():
    starts = {round(s.time_s, 2): s for s in ipu_starts(scripted_conversation())}
    assert sorted(starts) == [3.2, 3.8, 5.0, 6.5, 8.6, 9.5, 11.5, 12.5, 16.0]
    # B's "uh-huh" and "yeah" are backchannels; "but wait" and A's floor-taking start in overlap
    assert starts[3.2].backchannel and starts[5.0].backchannel and not starts[16.0].backchannel
    assert not starts[9.5].after_silence and not starts[12.5].after_silence and starts[8.6].after_silence
    # who spoke last: B's answer after A's question, B going on after its own pause, A's "then"
    # after B's backchannel (A goes on; by the last IPU alone it would answer the "uh-huh")
    assert starts[8.6].answers and not starts[11.5].answers and not starts[6.5].answers
    assert not starts[3.8].answers and starts[3.8].answers_ipu
    assert starts[8.6].content_tokens == ("yes", "i", "do", "and")
    scored = [round(s.time_s, 2) for s in scored_starts(starts.values())]
    assert scored == [3.8, 6.5, 8.6, 11.5, 16.0]
    assert ipu_starts(scripted_conversation(with_words=False)) == []


def test_asr_and_transcript_spellings_give_the_same_first_words():
    def first(texts):
        words = [Word(2.0 + 0.3 * i, 2.25 + 0.3 * i, t) for i, t in enumerate(texts)]
        conv = Conversation(5.0, ([(0.2, 1.5)], [(2.0, 2.0 + 0.3 * len(texts))]),
                            ([Word(0.2, 1.5, "okay")], words))
        [start] = ipu_starts(conv)
        return start.content_tokens

    # ASR mostly drops fillers and writes "Uh-huh," as one word: both spellings meet
    assert first(["Uh,", "well", "I", "think"]) == first(["uh", "well", "i", "think"]) == ("well", "i", "think")
    assert first(["Oh,", "yeah!"]) == first(["uh", "oh", "yeah"]) == ("ohyeah",)  # one phrase of the list
    assert first(["Uh-huh,", "well"]) == first(["uh", "huh", "well"]) == first(["uh-huh", "well"])
    assert first(["um"]) == ("um",)  # nothing but a filler: the filler itself


def test_the_packaged_table_reads_answers_from_replies_and_going_on_from_continuations():
    table = load_first_words_table()
    assert table.provenance["split"] == "train" and table.provenance["conversations"] > 1000
    assert table.p_answers(("oh", "really")) > 0.7 > table.base_rate > 0.1 > table.p_answers(("and", "then"))
    assert table.p_answers(("yeah", "that's")) > 2 * table.base_rate


# A says something that could go on; B replies; A's next words answer B. Cut B's reply out and A
# goes on after 0.6 s with what was its answer to it: an ordinary hold by its timing.
STATEMENT = "and then we drove up to the lake"
REPLY = "that sounds like a lot of fun"
OH_REALLY = "oh yeah it was really nice"
GOING_ON = "and we stayed there for a week"


def dialogue() -> list[tuple[int, float, float, str]]:
    return [
        (0, 0.5, 3.0, STATEMENT), (0, 3.5, 5.6, GOING_ON), (1, 5.9, 8.2, REPLY), (0, 8.5, 10.4, OH_REALLY),
        (0, 10.9, 13.2, GOING_ON), (1, 13.5, 15.8, REPLY), (0, 16.1, 18.0, OH_REALLY), (0, 18.5, 20.6, GOING_ON),
    ]


def test_the_first_words_are_what_catches_an_answer_cut_out_after_a_statement():
    natural = to_conversation(dialogue())
    perturbed = to_conversation(remove_span(dialogue(), 13.2, 16.1, 0.6))  # B's second reply cut out
    scorer = load_scorer("timing-hazard-words")
    without = replace(scorer, cue_settings=replace(scorer.cue_settings, first_words_weight=0.0))
    # voice activity and the last words before the silence rank it the wrong way round
    assert load_scorer("timing-hazard").score(perturbed).naturalness > load_scorer("timing-hazard").score(natural).naturalness
    assert without.score(perturbed).naturalness > without.score(natural).naturalness
    # A's "oh yeah" after its own pause is a reply without the speech it replies to
    got, want = scorer.score(perturbed), scorer.score(natural)
    assert got.naturalness < want.naturalness
    assert (want.first_words, got.first_words) == (7, 6)


def test_the_cut_out_answer_is_caught_through_asr_on_rendered_speech(tmp_path):
    """The same dialogue spoken by espeak-ng (two voices), read back as a study reads a call:
    Silero's voice activity and faster-whisper's words. The resumption's "oh yeah" survives ASR."""
    voices = {0: "en-us", 1: "en-us+f3"}

    def recording(name, turns):  # (channel, text, silence before it)
        t, placed = 0.5, []
        for channel, text, silence in turns:
            t += silence
            placed.append(Utterance(channel, t, text, voice=voices[channel], repeatable=True))
            t += len(speak(text, voices[channel], repeatable=True)) / SAMPLE_RATE
        return load_recording(render_speech(placed, t + 0.8).write(tmp_path / f"{name}.wav"))

    turns = [(0, STATEMENT, 0.0), (0, GOING_ON, 0.5), (1, REPLY, 0.3), (0, OH_REALLY, 0.3), (0, GOING_ON, 0.5),
             (1, REPLY, 0.3), (0, OH_REALLY, 0.3), (0, GOING_ON, 0.5)]
    natural = recording("natural", turns)
    perturbed = recording("cut_out", turns[:5] + [(0, OH_REALLY, 0.6), turns[7]])  # B's second reply cut out
    resumed = [s for s in scored_starts(ipu_starts(perturbed)) if s.speaker == 0 and not s.answers]
    assert any(s.content_tokens[0] == "ohyeah" for s in resumed), resumed
    timing = load_scorer("timing-hazard")
    assert timing.score(perturbed).naturalness > timing.score(natural).naturalness
    scorer = load_scorer()  # the default: timing-hazard-words
    assert scorer.score(perturbed).naturalness < scorer.score(natural).naturalness


def test_an_extra_backchannel_earns_no_first_words_term():
    natural = to_conversation(dialogue())
    with_bc = to_conversation(sorted(dialogue() + [(1, 1.4, 1.7, "yeah"), (1, 11.5, 11.8, "uh-huh")],
                                     key=lambda x: x[1]))
    table = load_first_words_table()
    n = int(with_bc.duration * 50) + 1
    a, b = first_words_term(natural, table, n, 50.0), first_words_term(with_bc, table, n, 50.0)
    assert a[1] == b[1] == 7 and a[0].sum() == pytest.approx(b[0].sum())
    assert first_words_term(to_conversation(dialogue(), words=False), table, n, 50.0) is None


def test_fit_first_words_on_a_tiny_ms98_corpus_and_load_it(tmp_path):
    ids = ["4321", "4322", "4323"]
    for conv_id in ids:
        write_ms98(tmp_path, conv_id, utterances=UTTERANCES)
    (tmp_path / "splits").mkdir()
    (tmp_path / "splits" / "train.txt").write_text("\n".join(ids) + "\n")
    write_ms98(tmp_path, "4324", utterances=UTTERANCES, duration=65.0)  # the reference split: 65 s
    (tmp_path / "splits" / "val.txt").write_text("4324\n")
    done = run_cli("naturalness", "fit-first-words", tmp_path, "--out-dir", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    table = load_first_words_table(tmp_path / "out" / "first_words.json")
    # five scored starts a conversation (see the first test), two of them answers
    assert table.provenance["starts"] == 15 and table.base_rate == pytest.approx(0.4)
    assert table.first_word["yes"] == (3, 3) and table.first_word["anyway"] == table.first_word["then"] == (3, 0)
    assert table.p_answers(("yes", "i")) > table.base_rate > table.p_answers(("anyway", "where"))
    manifest = json.loads(manifest_path(tmp_path / "out" / "first_words.json").read_text())
    assert manifest["meta"]["conversations"] == 3
    # the human reference: the 65 s conversation in windows of 30 and 60 s, scored with its words
    reference = manifest["human_reference"]["naturalness_by_window_s"]
    assert {k: v["windows"] for k, v in reference.items()} == {"30": 2, "60": 1}
    assert reference["30"]["conversations"] == 1 and reference["30"]["ci95"] is None  # one conversation: no interval
    assert manifest["human_reference"]["score_params"]["word_cue"]["first_words_weight"] == 1.5


def test_the_packaged_table_is_checked_against_its_manifest_and_errors_are_one_line(tmp_path):
    for path in (packaged_first_words_path(), manifest_path(packaged_first_words_path())):
        shutil.copy(path, tmp_path / path.name)
    copy = tmp_path / "first_words.json"
    assert load_first_words_table(copy) == load_first_words_table()
    copy.write_text(copy.read_text().replace('"base_rate":0.', '"base_rate":0.0', 1))
    with pytest.raises(FirstWordsError, match="differs from its manifest"):
        load_first_words_table(copy)
    with pytest.raises(FirstWordsError, match="not found"):
        load_first_words_table(tmp_path / "absent.json")
    one_line_error(run_cli("naturalness", "fit-first-words", tmp_path / "nowhere"), "split list not found")
