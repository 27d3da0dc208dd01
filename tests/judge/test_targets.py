"""Future voice-activity classes and turn-taking boundary units on hand-built tracks."""

import numpy as np
import pytest

from turntaking.activity import Conversation
from judge.targets import (
    BIN_EDGES_S,
    FRAME_RATE,
    N_CLASSES,
    decode_class,
    encode_bins,
    future_activity_classes,
    future_bins,
    tbu_frame_mask,
    turn_boundary_units,
)


def test_constants():
    assert FRAME_RATE == 50 and BIN_EDGES_S == (0, 0.2, 0.6, 1.2, 2.0) and N_CLASSES == 256


def test_encode_decode_round_trip_and_bit_order():
    for c in range(256):
        bins = decode_class(c)
        assert bins.shape == (2, 4) and bins.dtype == bool
        assert encode_bins(bins) == c
    only = np.zeros((2, 4), bool)
    only[0, 0] = True
    assert encode_bins(only) == 1
    only[:] = False
    only[1, 3] = True
    assert encode_bins(only) == 128
    # vectorised over leading axes
    stack = np.stack([decode_class(c) for c in (0, 5, 255)])
    assert encode_bins(stack).tolist() == [0, 5, 255]
    with pytest.raises(ValueError, match="0..255"):
        decode_class(256)
    with pytest.raises(ValueError, match="shape"):
        encode_bins(np.zeros((2, 3)))


def track():
    """300 frames: speaker 0 active in frames 0..149, speaker 1 in frames 160..299."""
    va = np.zeros((2, 300), np.float32)
    va[0, :150] = 1
    va[1, 160:] = 1
    return va


def test_known_class_at_known_frame():
    classes = future_activity_classes(track())
    # Frame 140 looks at frames 141..240: speaker 0 bin [141,150] has 9/10 active; speaker 1 bin
    # [151,170] has 11/20, [171,200] and [201,240] are full.
    expected = np.array([[1, 0, 0, 0], [0, 1, 1, 1]], bool)
    assert (future_bins(track())[140] == expected).all()
    assert classes[140] == 1 + 2 * 16 + 4 * 16 + 8 * 16 == 225
    # Frame 144: speaker 0 bin [145,154] has exactly 5/10 active -> not more than half -> off.
    assert not future_bins(track())[144][0, 0]
    assert classes[144] == encode_bins(np.array([[0, 0, 0, 0], [0, 1, 1, 1]], bool))
    # Frame 0: speaker 0 fills its first three bins, bin 3 [61,100] too; speaker 1 silent.
    assert classes[0] == 15


def test_horizon_past_the_end_has_no_class():
    classes = future_activity_classes(track())
    assert classes.shape == (300,)
    assert (classes[:200] >= 0).all()  # frame 199 sees frames 200..299, the last one
    assert (classes[200:] == -1).all()
    assert (future_activity_classes(np.zeros((2, 50))) == -1).all()
    with pytest.raises(ValueError, match="2, n_frames"):
        future_activity_classes(np.zeros((3, 10)))


def test_turn_boundary_units_on_known_boundaries():
    conv = Conversation(8.0, ([(1.0, 3.0)], [(3.5, 3.6), (4.0, 6.5)]))
    units = turn_boundary_units(conv)
    # B's 0.1 s blip is below 200 ms and gives no unit; starts are clipped at 0.
    assert [(pytest.approx(s), pytest.approx(e), k) for s, e, k in units] == [
        (0.0, 1.0, "onset"),
        (1.0, 3.0, "offset"),
        (2.0, 4.0, "onset"),
        (4.5, 6.5, "offset"),
    ]
    assert len(turn_boundary_units(conv, min_utterance_s=0.05)) == 6
    shorter = turn_boundary_units(conv, length_s=0.5)
    assert shorter[1][:2] == (pytest.approx(2.5), pytest.approx(3.0))


def test_merge_gap_joins_word_level_fragments():
    conv = Conversation(5.0, ([(1.0, 2.0), (2.1, 3.0)], []))
    assert len(turn_boundary_units(conv)) == 4
    merged = turn_boundary_units(conv, merge_gap_s=0.18)
    assert [(u[1], u[2]) for u in merged] == [(1.0, "onset"), (3.0, "offset")]


def test_tbu_frame_mask():
    mask = tbu_frame_mask([(1.0, 2.0, "onset")], 200)
    assert np.flatnonzero(mask).tolist() == list(range(50, 101))
    assert tbu_frame_mask([(3.5, 5.0, "offset")], 200).sum() == 200 - 175
