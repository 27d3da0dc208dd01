"""Turn-taking events on a scripted conversation whose events are known exactly."""

import pytest

from turntaking.activity import Conversation, Word
from turntaking.backchannel_words import backchannel_form, is_backchannel_phrase, load_backchannel_list
from turntaking.events import Event, EventParams, detect_events, group_turns, inter_pausal_units, overlap_events
from turntaking.reference import ReferenceMismatch, switchboard_reference
from tests.scripted import EXPECTED, scripted_conversation


def approx_segments(segments):
    return [pytest.approx(tuple(s)) for s in segments]


@pytest.fixture(scope="module")
def events():
    return detect_events(scripted_conversation())


def test_ipus_merge_silences_up_to_200ms(events):
    for k in (0, 1):
        assert events.ipus[k] == approx_segments(EXPECTED["ipus"][k])


def test_pauses_and_gaps_by_who_spoke_before_and_after(events):
    assert [(e.start, e.end, e.speaker) for e in events.pauses] == approx_segments(EXPECTED["pauses"])
    assert [(e.start, e.end, e.speaker) for e in events.gaps] == approx_segments(EXPECTED["gaps"])


def test_ipu_gaps_keep_the_silences_next_to_backchannels(events):
    assert [(e.start, e.end, e.speaker) for e in events.ipu_pauses] == approx_segments(EXPECTED["ipu_pauses"])
    assert [(e.start, e.end, e.speaker) for e in events.ipu_gaps] == approx_segments(EXPECTED["ipu_gaps"])


def test_floor_transfers_between_turns_not_backchannels(events):
    got = [(t.from_speaker, t.to_speaker, t.offset_s) for t in events.floor_transfers]
    assert got == [pytest.approx(x) for x in EXPECTED["floor_transfers"]]


def test_without_words_a_backchannel_is_a_turn_and_its_silences_are_gaps():
    ev = detect_events(scripted_conversation(with_words=False))
    assert [(e.start, e.end) for e in ev.gaps] == [(e.start, e.end) for e in ev.ipu_gaps]
    # B's "uh-huh" takes the floor at 3.2 (+0.2 s) and gives it back at 3.8 (+0.2 s).
    assert [round(t.offset_s, 6) for t in ev.floor_transfers][:2] == [0.2, 0.2]


def test_overlaps_attributed_to_the_speaker_entering(events):
    assert [(e.start, e.end, e.speaker) for e in events.overlaps] == approx_segments(EXPECTED["overlaps"])


def test_backchannels_inside_the_other_speakers_turn_only(events):
    for k in (0, 1):
        assert events.backchannels[k] == approx_segments(EXPECTED["backchannels"][k])


def test_turns_are_not_broken_by_backchannels(events):
    for k in (0, 1):
        assert events.turns[k] == approx_segments(EXPECTED["turns"][k])


def test_interruptions_floor_taking_and_butting_in(events):
    got = [(i.start, i.end, i.interrupter, i.floor_taking) for i in events.interruptions]
    assert got == [pytest.approx(x) for x in EXPECTED["interruptions"]]


def test_without_words_there_are_no_backchannels_and_turns_use_every_ipu():
    ev = detect_events(scripted_conversation(with_words=False))
    assert ev.backchannels == ([], [])
    assert ev.ipu_words is None
    # B's "uh-huh" in A's pause now breaks A's first turn.
    assert ev.turns[0][0] == pytest.approx((0.5, 3.0))


def test_ipu_threshold_is_a_parameter():
    conv = Conversation(5.0, ([(0.0, 1.0), (1.3, 2.0)], []))
    assert len(detect_events(conv).ipus[0]) == 2
    assert len(detect_events(conv, EventParams(ipu_silence_s=0.3)).ipus[0]) == 1
    assert inter_pausal_units([(0.0, 1.0), (1.2, 2.0)], 0.2) == [(0.0, 2.0)]


def test_backchannel_needs_at_most_two_listed_words():
    speaker = [(0.0, 4.0), (5.0, 9.0)]
    listener_words = [Word(4.2, 4.5, "oh"), Word(4.5, 4.7, "yeah"), Word(4.7, 4.8, "right")]
    conv = Conversation(10.0, (speaker, [(4.2, 4.8)]), ([], listener_words))
    assert detect_events(conv).backchannels[1] == []  # three words
    conv2 = Conversation(10.0, (speaker, [(4.2, 4.7)]), ([], listener_words[:2]))
    assert detect_events(conv2).backchannels[1] == [(4.2, 4.7)]
    conv3 = Conversation(10.0, (speaker, [(4.2, 4.7)]), ([], [Word(4.2, 4.7, "tomato")]))
    assert detect_events(conv3).backchannels[1] == []


MM_HMM = ["Mm-hmm", "mmhmm", "mm hmm", "mmm-hmm", "Mhm.", "MM-HMM!"]
UH_HUH = ["Uh-huh", "uh huh", "uhhuh", "UH-HUH."]


def words_of(text: str) -> list[Word]:
    """ASR-like words: one per space-separated piece, 0.2 s each."""
    return [Word(0.2 * i, 0.2 * (i + 1), piece) for i, piece in enumerate(text.split())]


@pytest.mark.parametrize("spellings", [MM_HMM, UH_HUH])
def test_a_list_entry_in_any_spelling_matches_words_in_the_others(tmp_path, spellings):
    assert len({backchannel_form(s) for s in spellings}) == 1
    for entry in spellings:
        path = tmp_path / "list.txt"
        path.write_text(f"# one entry\n{entry}\n")
        load_backchannel_list.cache_clear()
        phrases = load_backchannel_list(str(path))
        for spoken in spellings:
            assert is_backchannel_phrase(words_of(spoken), phrases, max_words=2), (entry, spoken)
        assert not is_backchannel_phrase(words_of("tomato"), phrases, max_words=2)
    load_backchannel_list.cache_clear()


def test_the_packaged_list_holds_switchboard_and_asr_spellings():
    phrases = load_backchannel_list()
    # Switchboard MS-98 tokens, and words faster-whisper wrote for spoken "mm-hmm" / "uh-huh".
    for spoken in ["uh-huh", "um-hum", "uhhuh", "uh huh", "Mm-hmm.", "mm mm mm", "m m m", "Mhm", "Uh, huh.",
                   "all right", "Alright.", "That's right."]:
        assert is_backchannel_phrase(words_of(spoken), phrases, max_words=2), spoken
    # Each word listed still needs at most `max_words` of them; a listed phrase does not.
    assert not is_backchannel_phrase(words_of("yeah okay right"), phrases, max_words=2)
    assert not is_backchannel_phrase(words_of("uh huh i think so"), phrases, max_words=2)


def test_group_turns_breaks_on_the_other_speakers_speech_in_between():
    assert group_turns([(0, 1), (2, 3)], []) == [(0, 3)]
    assert group_turns([(0, 1), (2, 3)], [(1.2, 1.5)]) == [(0, 1), (2, 3)]
    # Speech that starts inside the previous IPU and runs into the silence breaks the turn too.
    assert group_turns([(0, 1), (2, 3)], [(0.5, 1.5)]) == [(0, 1), (2, 3)]
    # Speech entirely inside an IPU does not.
    assert group_turns([(0, 1), (2, 3)], [(0.2, 0.6)]) == [(0, 3)]


# Ties: where two boundaries coincide, the definitions decide one way; these pin which.

def test_the_other_speaker_ending_exactly_as_an_ipu_ends_does_not_break_the_turn():
    # Its speech touches the in-between silence at one instant only: nothing is said in between.
    assert group_turns([(0, 1), (1.5, 2)], [(0.5, 1.0)]) == [(0, 2)]
    assert group_turns([(0, 1), (1.5, 2)], [(0.5, 1.01)]) == [(0, 1), (1.5, 2)]


def test_touching_or_instantaneous_speech_is_no_overlap():
    assert overlap_events(([(0.0, 1.0)], [(1.0, 2.0)])) == []
    assert overlap_events(([(0.0, 2.0)], [(1.0, 1.0)])) == []  # a zero-length segment
    assert overlap_events(([(0.0, 2.0)], [(1.0, 1.5)])) == [Event(1.0, 1.5, 1)]


def speaking(a, b) -> Conversation:
    return Conversation(activity=[a, b], duration=5.0)


def test_starting_together_is_no_interruption():
    # "Starting strictly inside" the other's IPU: a simultaneous start interrupts nobody.
    assert detect_events(speaking([(0.0, 2.0)], [(0.0, 1.0)])).interruptions == []
    [cut] = detect_events(speaking([(0.0, 2.0)], [(0.01, 1.0)])).interruptions
    assert (cut.interrupter, cut.interrupted) == (1, 0)


def test_ending_together_with_the_interrupted_ipu_is_butting_in_not_floor_taking():
    # Floor-taking means outlasting the interrupted IPU; ending at the same instant does not.
    [same_end] = detect_events(speaking([(0.0, 2.0)], [(1.0, 2.0)])).interruptions
    assert not same_end.floor_taking and (same_end.start, same_end.end) == (1.0, 2.0)
    [outlasting] = detect_events(speaking([(0.0, 2.0)], [(1.0, 2.01)])).interruptions
    assert outlasting.floor_taking


def test_event_parameters_are_checked_and_round_trip_through_their_dict():
    params = EventParams(ipu_silence_s=0.5, backchannel_max_words=3)
    assert EventParams.from_dict(params.as_dict()) == params
    assert EventParams.from_dict(None) == EventParams() == EventParams.from_dict(EventParams().as_dict())
    for bad, message in (({"ipu_silence_s": -0.1}, "ipu_silence_s must be"), ({"ipu_silence_s": "x"}, "ipu_silence_s"),
                         ({"backchannel_max_words": 0}, "backchannel_max_words must be"),
                         ({"ipu_gap": 0.2}, "unknown event parameter(s) ipu_gap")):
        with pytest.raises(ValueError, match=None) as error:
            EventParams.from_dict(bad)
        assert message in str(error.value)


def test_the_switchboard_reference_is_refused_for_other_event_parameters():
    assert switchboard_reference()["params"] == EventParams().as_dict()
    with pytest.raises(ReferenceMismatch, match="rebuild it"):
        switchboard_reference(EventParams(ipu_silence_s=0.3))
