"""Talking Turns chunk labels on hand-built voice activity whose labels are known chunk by chunk.

All times are multiples of the 40 ms chunk, so chunk k covers [0.04 k, 0.04 (k + 1)) exactly.
"""

import numpy as np
import pytest

from turntaking.activity import Conversation, Word
from turntaking.events import detect_events
from judge.labels import BC, C, CHUNK_S, I, LABELS, NA, T, chunk_labels, chunk_states


def words_over(start, end, text):
    tokens = text.split()
    step = (end - start) / len(tokens)
    return [Word(start + i * step, start + (i + 1) * step, t) for i, t in enumerate(tokens)]


# speaker, start, end, text
SCRIPT = [
    (0, 0.40, 2.00, "so i went home today"),  # first speech: C (no earlier floor holder)
    (1, 2.40, 4.00, "well i think that is fine"),  # after a gap: T at its first chunk
    (0, 3.00, 3.40, "yeah"),  # listener backchannel inside B's turn: BC
    (1, 4.40, 6.00, "and then we left early"),  # after B's own pause: C
    (0, 5.00, 5.40, "but wait"),  # butting-in: I, then B alone again: C
    (0, 5.80, 7.60, "let me tell you something"),  # floor-taking: I while B ends, then T
]
DURATION = 8.0


def scripted(with_words=True):
    activity, words = ([], []), ([], [])
    for spk, s, e, text in SCRIPT:
        activity[spk].append((s, e))
        words[spk].extend(words_over(s, e, text))
    return Conversation(DURATION, activity, words if with_words else None, source="labels-test")


def expected_labels():
    lab = np.full(200, NA)
    lab[10:50] = C  # A 0.40-2.00
    lab[60] = T  # B takes the turn at 2.40
    lab[61:100] = C
    lab[75:85] = BC  # A's "yeah" 3.00-3.40
    lab[110:150] = C  # B 4.40-6.00 after a pause
    lab[125:135] = I  # A butts in 5.00-5.40
    lab[145:150] = I  # A starts 5.80 while B still speaks until 6.00
    lab[150] = T  # B stopped first: the interruption took the floor
    lab[151:190] = C  # A alone until 7.60
    return lab


def test_labels_chunk_by_chunk():
    conv = scripted()
    labels = chunk_labels(conv)
    assert LABELS == ("C", "BC", "T", "I", "NA")
    assert len(labels) == round(DURATION / CHUNK_S) == 200
    expected = expected_labels()
    wrong = np.flatnonzero(labels != expected)
    assert wrong.size == 0, [(int(i), LABELS[labels[i]], LABELS[expected[i]]) for i in wrong[:10]]


def test_chunk_states_speakers_backchannels_and_floor():
    conv = scripted()
    events = detect_events(conv)
    assert events.backchannels == ([(3.0, 3.4)], [])
    st = chunk_states(conv, events)
    assert st.speaking.shape == st.backchannel.shape == st.in_turn.shape == (2, 200)
    assert np.flatnonzero(st.backchannel[0]).tolist() == list(range(75, 85))
    assert not st.backchannel[1].any()
    owner = np.full(200, -1)
    owner[10:60] = 0  # A holds the floor from its first chunk, through the gap
    owner[60:150] = 1  # B from the turn change, through its pause and the overlaps
    owner[150:] = 0  # A after the floor-taking interruption
    assert st.turn_owner.tolist() == owner.tolist()
    # TURN^k in the paper's sense: B's turn spans its pause 4.00-4.40 but not the gap before it.
    assert st.in_turn[1, 100:110].all() and not st.in_turn[1, 50:60].any()
    assert st.chunk_times()[60] == pytest.approx(2.4)


def test_without_words_the_backchannel_is_an_overlap():
    labels = chunk_labels(scripted(with_words=False))
    assert (labels[75:85] == I).all()


def test_turn_change_without_gap_and_overlap_of_two_turn_holders():
    conv = Conversation(3.0, ([(0.0, 1.0)], [(1.0, 2.0), (2.4, 2.8)]),
                        (words_over(0.0, 1.0, "this is mine"), words_over(1.0, 2.0, "now it is mine")
                         + words_over(2.4, 2.8, "again")))
    labels = chunk_labels(conv)
    assert labels[:25].tolist() == [C] * 25
    assert labels[25] == T and (labels[26:50] == C).all()
    assert (labels[50:60] == NA).all() and labels[60] == C


def test_bad_chunk_size_is_refused():
    with pytest.raises(ValueError, match="chunk_s"):
        chunk_labels(scripted(), chunk_s=0.0)


@pytest.mark.parametrize("said", ["Mm-hmm.", "mmhmm", "mm hmm", "m m m", "Uh-huh", "uh huh", "um-hum"])
def test_the_bc_label_meets_a_backchannel_in_any_spelling(said):
    # The labels take their backchannels from turntaking.events, in its one spelling: an ASR's
    # "uh huh" is as much a BC as Switchboard's "uh-huh".
    conv = Conversation(DURATION, ([(0.40, 7.60)], [(3.00, 3.40)]),
                        (words_over(0.40, 7.60, "so i went home today and then we left early"), words_over(3.00, 3.40, said)))
    labels = chunk_labels(conv)
    assert (labels[75:85] == BC).all()
