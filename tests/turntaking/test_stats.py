"""Corpus-level statistics and the Switchboard loader on the scripted conversation."""

import pytest

from turntaking.activity import activity_frames, frames_to_segments
from turntaking.stats import corpus_statistics, conversation_statistics
from turntaking.switchboard import CorpusError, clean_token, conversation_ids, load_conversation
from tests.scripted import DURATION, EXPECTED, scripted_conversation, write_ms98

MINUTES = DURATION / 60


@pytest.fixture(scope="module")
def stats():
    return conversation_statistics(scripted_conversation())


def test_counts_per_minute_and_percent(stats):
    assert stats["duration_s"] == DURATION
    assert stats["counts"] == {
        "ipu": 10, "pause": 2, "gap": 2, "overlap": 3, "ipu_pause": 2, "ipu_gap": 4, "turn": 5,
        "backchannel": 2, "interruption": 2, "floor_taking": 1, "butting_in": 1,
    }
    assert stats["per_minute"]["gap"] == pytest.approx(2 / MINUTES)
    assert stats["durations_s"] == pytest.approx(
        {"ipu": 14.3, "pause": 1.0, "gap": 1.6, "overlap": 1.4, "ipu_pause": 1.0, "ipu_gap": 2.0})
    assert stats["percent"] == pytest.approx(
        {"ipu": 71.5, "pause": 5.0, "gap": 8.0, "overlap": 7.0, "ipu_pause": 5.0, "ipu_gap": 10.0})
    assert stats["floor_transfer_offsets_s"] == pytest.approx([0.6, -0.5, 1.0])


def test_speaking_and_backchannel_rates(stats):
    assert stats["words"] == sum(EXPECTED["words"])
    assert stats["speaking_rate_wpm"] == pytest.approx(38 / MINUTES)
    assert stats["backchannel_rate_wpm"] == pytest.approx(2 / MINUTES)


def test_per_speaker_attribution(stats):
    a, b = stats["speakers"]["A"], stats["speakers"]["B"]
    assert a["counts"]["ipu"] == 5 and b["counts"]["ipu"] == 5
    assert a["counts"]["gap"] == 0 and b["counts"]["gap"] == 2  # gaps go to the speaker taking the turn
    assert a["counts"]["ipu_gap"] == 1 and b["counts"]["ipu_gap"] == 3
    assert a["durations_s"]["ipu_gap"] == pytest.approx(0.2)
    assert a["counts"]["overlap"] == 2 and b["counts"]["overlap"] == 1
    assert a["counts"]["floor_taking"] == 1 and a["counts"]["butting_in"] == 1
    assert b["counts"]["backchannel"] == 2 and b["backchannel_rate_wpm"] == pytest.approx(2 / MINUTES)
    assert a["words"] == 23 and b["words"] == 15
    assert a["percent"]["ipu"] == pytest.approx(100 * 9.2 / DURATION)


def test_event_lists_in_json(stats):
    gaps = stats["events"]["gap"]
    assert gaps[0] == {"speaker": "B", "start": 8.0, "end": 8.6}
    assert stats["events"]["ipu_gap"][0] == {"speaker": "B", "start": 3.0, "end": 3.2}
    assert len(stats["events"]["ipu"]) == 10


def test_without_words_rates_are_none():
    st = conversation_statistics(scripted_conversation(with_words=False))
    assert st["speaking_rate_wpm"] is None and st["backchannel_rate_wpm"] is None
    assert st["counts"]["backchannel"] == 0


def test_corpus_pools_events_over_minutes(stats):
    short = conversation_statistics(scripted_conversation())
    agg = corpus_statistics([stats, short])
    assert agg["conversations"] == 2
    assert agg["per_minute"]["gap"] == pytest.approx(4 / (2 * MINUTES))
    assert agg["percent"]["overlap"] == pytest.approx(7.0)
    assert agg["per_conversation"]["per_minute"]["gap"]["std"] == 0.0


def test_corpus_floor_transfer_offset_distribution(stats):
    fto = corpus_statistics([stats, stats])["floor_transfer_offset"]
    assert fto["n"] == 6
    assert fto["percentiles_s"]["50"] == pytest.approx(0.6)
    assert fto["mean_s"] == pytest.approx((0.6 - 0.5 + 1.0) / 3)
    hist = fto["histogram"]
    assert sum(hist["counts"]) == 6 and hist["below"] == hist["above"] == 0
    # -0.5 s falls in the bin [-0.5, -0.45): two of them, one per copy.
    assert hist["counts"][hist["edges_s"].index(-0.5)] == 2


def test_ms98_layout_round_trip(tmp_path):
    write_ms98(tmp_path, "4321")
    (tmp_path / "splits").mkdir()
    (tmp_path / "splits" / "val.txt").write_text("4321\n")
    assert conversation_ids(tmp_path, "val") == ["4321"]
    assert conversation_ids(tmp_path) == ["4321"]
    conv = load_conversation(tmp_path, "4321")
    assert conv.duration == DURATION
    from_files = conversation_statistics(conv)
    expected = conversation_statistics(scripted_conversation())
    for key in ("counts", "durations_s", "words", "backchannel_words"):
        assert from_files[key] == pytest.approx(expected[key])


def test_ms98_token_cleaning():
    assert clean_token("[silence]") is None
    assert clean_token("[vocalized-noise]") is None
    assert clean_token("<b_aside>") is None
    assert clean_token("[laughter-Yes]") == "yes"
    assert clean_token("{weatherwise}") == "weatherwise"
    assert clean_token("[splace/space]") == "space"
    assert clean_token("because_1") == "because"
    assert clean_token("thi[s]-") == "this"
    assert clean_token("uh-huh") == "uh-huh"


def test_missing_corpus_files_are_named(tmp_path):
    with pytest.raises(CorpusError, match="missing word alignment file"):
        load_conversation(tmp_path, "1234")
    with pytest.raises(CorpusError, match="split list not found"):
        conversation_ids(tmp_path, "train")


def test_frames_round_trip():
    conv = scripted_conversation()
    frames = conv.frames(100)
    assert frames.shape == (2, 2000)
    assert frames_to_segments(frames[1], 100)[0] == pytest.approx((3.2, 3.6))
    assert activity_frames(([], []), 1.0, 50).sum() == 0
