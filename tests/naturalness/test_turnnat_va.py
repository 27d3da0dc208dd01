import math

import numpy as np
import pytest

from naturalness.turnnat_va import (
    NaturalnessParams,
    NoUnitsError,
    frame_nll,
    pool_units,
    unit_frame_range,
    unit_scores,
)


def test_frame_nll_picks_observed_class_and_skips_unknown():
    log_probs = np.log(np.full((4, 256), 1 / 512))
    log_probs[:, 7] = np.log(0.5)
    nll = frame_nll(log_probs, np.array([7, 0, -1, 7]))
    assert nll[0] == pytest.approx(math.log(2))
    assert nll[1] == pytest.approx(math.log(512))
    assert math.isnan(nll[2])
    assert nll[3] == pytest.approx(math.log(2))


def test_unit_frame_range_includes_both_ends():
    # frame times 1.00, 1.02, ... 3.00 s lie in [1, 3]: frames 50..150
    assert unit_frame_range(1.0, 3.0, 50) == (50, 151)
    assert unit_frame_range(-1.0, 0.05, 50) == (0, 3)  # 0.00, 0.02, 0.04


def test_unit_scores_exclusions():
    fr = 50
    nll = np.arange(500, dtype=float)  # 10 s of frames; frame t has NLL t
    nll[300:310] = np.nan  # horizon unknown
    units = [
        (1.0, 3.0, "onset"),  # entirely in the first 3 s: dropped
        (2.0, 4.0, "offset"),  # frames 150..200 remain (time >= 3 s)
        (3.0, 3.06, "onset"),  # frames 150..153: 4 frames < 5, dropped
        (5.9, 6.28, "offset"),  # frames 295..314 minus nan 300..309 -> 295..299, 310..314
        (9.0, 11.0, "onset"),  # frames 450..499 (beyond the end clipped)
    ]
    scores = unit_scores(nll, units, fr, NaturalnessParams())
    assert scores == [pytest.approx(175.0), pytest.approx((sum(range(295, 300)) + sum(range(310, 315))) / 10),
                      pytest.approx(474.5)]


def test_pool_units_mean_tail_dialog():
    scores = [1.0, 2.0, 3.0, 4.0, 10.0]
    res = pool_units(scores)
    # ceil(0.25 * 5) = 2 worst units: 10 and 4
    assert res.mean_nll == pytest.approx(4.0)
    assert res.tail_nll == pytest.approx(7.0)
    assert res.dialog_nll == pytest.approx(5.5)
    assert res.naturalness == pytest.approx(-5.5)
    assert res.n_units == 5
    one = pool_units([2.5])
    assert (one.mean_nll, one.tail_nll, one.dialog_nll) == (2.5, 2.5, 2.5)
    weighted = pool_units(scores, NaturalnessParams(mean_weight=1.0, tail_fraction=0.5))
    assert weighted.dialog_nll == pytest.approx(4.0) and weighted.tail_nll == pytest.approx(17 / 3)


def test_pool_units_without_units_is_an_error():
    with pytest.raises(NoUnitsError, match="no turn-taking boundary unit"):
        pool_units([])


# ---------------------------------------------------------------------------------------------
# `python -m naturalness score` end to end

import json  # noqa: E402

import soundfile  # noqa: E402

from turntaking.activity import conversation_to_json  # noqa: E402
from judge.model import load_checkpoint  # noqa: E402
from naturalness.scorers import canonical_scorer, load_scorer, scorer_type  # noqa: E402
from naturalness.turnnat_va import score_conversation  # noqa: E402
from tests.rendered_speech import alternating_dialogue  # noqa: E402
from tests.scripted import scripted_conversation  # noqa: E402
from tests.command_line import one_line_error, run_cli, run_cli_json, run_cli_process, write_checkpoint  # noqa: E402


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return write_checkpoint(tmp_path_factory.mktemp("ckpt"))


def test_cli_naturalness_matches_library(checkpoint, tmp_path):
    conv = scripted_conversation(with_words=False)
    path = tmp_path / "scripted.json"
    path.write_text(json.dumps(conversation_to_json(conv)))
    [row] = run_cli_json("naturalness", "score", path, "--scorer", "turnnat-va", "--checkpoint", checkpoint)["dialogues"]
    expected = score_conversation(conv, load_checkpoint(checkpoint))
    # A: 3.8 6.0 6.5 8.0 9.5 10.0 12.5 15.0, B: 3.2 3.6 5.0 5.4 8.6 11.0 11.5 13.0 16.0 16.4 are the
    # boundaries at or after 3.08 s, where a unit first has 5 frames from 3 s on (0.5 and 2.0-3.0 not)
    assert row["n_units"] == 18
    assert row["n_units"] == expected.n_units > 0
    assert row["dialog_nll"] == pytest.approx(expected.dialog_nll)
    assert row["naturalness"] == pytest.approx(-0.5 * row["mean_nll"] - 0.5 * row["tail_nll"])


def test_old_name_turnnat_paper_still_scores_the_same(checkpoint, tmp_path):
    conv = scripted_conversation(with_words=False)
    path = tmp_path / "scripted.json"
    path.write_text(json.dumps(conversation_to_json(conv)))
    new = run_cli("naturalness", "score", path, "--scorer", "turnnat-va", "--checkpoint", checkpoint, "--json")
    old = run_cli("naturalness", "score", path, "--scorer", "turnnat-paper", "--checkpoint", checkpoint, "--json")
    assert new.returncode == old.returncode == 0, old.stderr
    assert json.loads(old.stdout) == json.loads(new.stdout)  # the report names the scorer turnnat-va
    assert json.loads(old.stdout)["scorer"] == "turnnat-va"
    assert "turnnat-paper is deprecated, use turnnat-va" in old.stderr and "deprecated" not in new.stderr
    assert scorer_type("turnnat-paper") is scorer_type("turnnat-va")
    assert canonical_scorer("turnnat-paper") == "turnnat-va" == canonical_scorer("turnnat-va")
    # Study results were cached under the old name (the score is unchanged): the key keeps it.
    assert load_scorer("turnnat-va", checkpoint).identity()["scorer"] == "turnnat-paper"


def test_cli_on_two_channel_speech_through_silero(checkpoint, tmp_path):
    speech = alternating_dialogue(("hello there how are you today", "i am fine thank you very much",
                                   "would you like to go for a walk", "yes that sounds like a lovely idea",
                                   "let us meet at the park at noon"), gap=0.6)
    wav = speech.write(tmp_path / "dialogue.wav")
    result = run_cli_process("naturalness", "score", wav, "--scorer", "turnnat-va", "--checkpoint", checkpoint, "--json")
    assert result.returncode == 0, result.stderr
    [row] = json.loads(result.stdout)["dialogues"]
    # 5 turns, each >= 0.2 s: 10 boundaries; those before 3 s + 5 frames cannot be scored
    onsets_offsets = [t for u in speech.utterances for t in (u.start, u.end)]
    assert row["n_units"] == sum(t >= 3.0 + 4 / 50 for t in onsets_offsets)

    report = run_cli_json("judge", "metrics", wav, "--system-channel", "1", "--checkpoint", checkpoint)["metrics"]
    assert report["speak_up"]["decisions"]["speaks up"]["count"] == 2  # B answers A twice
    assert report["convey_turn"]["decisions"]["user speaks up"]["count"] == 2  # A answers B twice

    mono = tmp_path / "mono.wav"
    soundfile.write(str(mono), speech.mixture(), speech.sample_rate)
    one_line_error(run_cli("naturalness", "score", mono, "--scorer", "turnnat-va", "--checkpoint", checkpoint), "mono.wav", "1 channel")


def test_cli_naturalness_bad_input(checkpoint, tmp_path):
    one_line_error(run_cli("naturalness", "score", tmp_path / "missing.wav", "--scorer", "turnnat-va", "--checkpoint", checkpoint),
                   "not found", "missing.wav")
    short = tmp_path / "short.json"
    short.write_text(json.dumps({"duration": 2.0, "vad": [[[0.2, 1.0]], [[1.2, 1.8]]]}))
    one_line_error(run_cli("naturalness", "score", short, "--scorer", "turnnat-va", "--checkpoint", checkpoint),
                   "short.json", "no turn-taking boundary unit")
