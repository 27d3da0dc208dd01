"""`python -m analysis pipeline-bias` and `reference --through-pipeline` end to end on a small
scripted Switchboard tree: conversations rendered by the packaged voices, measured through Silero
and Whisper, the bias tables before and after, and the like-with-like reference table."""

import json

import pytest

from speech.silero_lags import CORRECTION, LAGS_BY_SNR
from tests.command_line import run_cli
from tests.scripted import block_utterances, write_ms98


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("swb")
    for conv_id in ("6101", "6102", "6103"):
        write_ms98(root, conv_id, block_utterances(1), 15.0)
    (root / "splits").mkdir()
    (root / "splits" / "val.txt").write_text("6101\n6102\n")
    (root / "splits" / "train.txt").write_text("6103\n")
    return root


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("renderings")


def test_pipeline_bias_writes_the_tables_before_and_after(corpus, work, tmp_path):
    out = tmp_path / "bias.md"
    done = run_cli("analysis", "pipeline-bias", "--corpus", "switchboard", corpus, "--work-dir", work,
                   "--seconds", "15", "--conversations", "2", "--markdown", out, "--quiet")
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    before, after = text.split("**after**")
    for table in (before, after):
        for statistic in ("backchannel /min", "turn /min", "interruption /min", "floor_taking /min", "gap /min",
                          "FTO median ms"):
            assert f"| {statistic} |" in table
    assert "held-out-2, noise 15 dB below" in after
    assert len(list(work.glob("*.flac"))) == 2 * 3  # two conversations in three voice pairs, noise added on reading
    rows = [json.loads(p.read_text()) for p in work.glob("sw6101.15s.held-out-1*.json")]
    clean, noisy = sorted(rows, key=lambda r: r["added_noise_db"] is not None)
    # each channel's noise estimated from its audio, and its lags read off it
    assert min(clean["snr_db"]) == 60.0 and 12 < max(noisy["snr_db"]) < 18
    assert noisy["vad+asr"]["boundary_lags"][0][1] > clean["vad+asr"]["boundary_lags"][0][1]
    # B's "yeah" inside A's turn: read as a transcript the block has one backchannel a minute-ful.
    assert "| backchannel /min | 4.00 |" in before


def test_the_pipeline_reference_is_built_from_the_same_renderings(corpus, work, tmp_path):
    out = tmp_path / "reference.json"
    done = run_cli("analysis", "reference", "--corpus", "switchboard", corpus, "--through-pipeline",
                   "--conversations", "2", "--seconds", "15", "--work-dir", work, "--out", out, "--quiet")
    assert done.returncode == 0, done.stderr
    table = json.loads(out.read_text())
    assert table["name"] == "Switchboard, session pipeline"
    assert table["conversations"] == 2 and table["conversation_ids"] == ["sw6101", "sw6102"]
    assert table["measurement"]["boundary_correction"] == {"method": CORRECTION,
                                                           "lags_by_snr": [list(level) for level in LAGS_BY_SNR]}
    assert table["command"].endswith("--through-pipeline --conversations 2 --seconds 15")
    assert table["per_minute"]["turn"] > 0


def test_a_folder_that_is_not_switchboard_is_one_line(tmp_path):
    done = run_cli("analysis", "pipeline-bias", "--corpus", "switchboard", tmp_path, "--work-dir", tmp_path / "w")
    assert done.returncode == 2
    assert done.stderr.startswith("error:") and len(done.stderr.strip().splitlines()) == 1
