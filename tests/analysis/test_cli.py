"""`python -m analysis` end to end, as a user runs it: its `main(argv)` in this process (an
interpreter start with its imports costs seconds a call), and once as the real process."""

import json

import pytest

from turntaking.activity import conversation_to_json
from tests import command_line
from tests.rendered_speech import Utterance, render_speech
from tests.scripted import DURATION, scripted_conversation, write_ms98


def run_cli(*args):
    done = command_line.run_cli("analysis", *args)
    return done.returncode, done.stdout, done.stderr


def run_process(*args):
    done = command_line.run_cli_process("analysis", *args)
    return done.returncode, done.stdout, done.stderr


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("swb")
    write_ms98(root, "4321")
    write_ms98(root, "4322")
    (root / "splits").mkdir()
    (root / "splits" / "val.txt").write_text("4321\n4322\n")
    return root


def test_stats_of_a_switchboard_conversation_as_json(corpus):
    rc, out, err = run_process("stats", corpus / "swb_ms98_transcriptions/43/4321", "--vad", "words", "--json")
    assert rc == 0, err
    stats = json.loads(out)
    assert stats["duration_s"] == DURATION
    assert stats["counts"]["gap"] == 2 and stats["counts"]["ipu_gap"] == 4 and stats["counts"]["backchannel"] == 2
    assert set(stats["speakers"]) == {"A", "B"}
    assert stats["percent"]["overlap"] == pytest.approx(7.0)
    assert {"ipu", "pause", "gap", "overlap", "backchannel", "interruption"} <= set(stats["events"])


SPEAKER_A = ("So I went down to the market this morning and the prices were much higher than last week, "
             "and I really think we should start cooking at home a lot more often, don't you think so.")


# B says "mm-hmm" (spelt "Mmm, hmm.": espeak reads "Mm-hmm." as the letters "em em hum") and
# "Uh-huh."; Whisper tiny.en writes them "m m m ..." and "uh uh", words the backchannel list meets
# only in its one spelling (before it: 0 backchannels, 2 interruptions). Rendered repeatably: over
# 40 dither noises Whisper heard the hum as "and i'm" in 4 (measured 2026-11-24).
def test_backchannels_survive_the_real_asr(tmp_path):
    b = dict(voice="en-us+m7", repeatable=True)
    speech = render_speech([Utterance(0, 0.3, SPEAKER_A, "en-us+f3"), Utterance(1, 3.0, "Mmm, hmm.", **b),
                            Utterance(1, 6.5, "Uh-huh.", **b)], duration=12.0)
    assert speech.in_channel(0)[0].end > 9.0  # A holds the floor over both
    rc, out, err = run_cli("stats", speech.write(tmp_path / "rec.wav"), "--json")
    assert rc == 0, err
    stats = json.loads(out)
    assert stats["counts"]["backchannel"] == 2
    assert stats["counts"]["interruption"] == 0
    assert stats["speakers"]["B"]["counts"]["backchannel"] == 2


def test_stats_of_a_voice_activity_json(tmp_path):
    path = tmp_path / "dialogue.json"
    path.write_text(json.dumps(conversation_to_json(scripted_conversation())))
    rc, out, err = run_cli("stats", path)
    assert rc == 0, err
    gap_row = next(line for line in out.splitlines() if line.startswith("gap /min"))
    assert gap_row.split()[2] == "6.00"  # 2 gaps in 1/3 minute (not counting the 2 next to "uh-huh")
    assert "floor-transfer offsets: 3, median 600 ms (quartiles 50 to 800 ms), 33% in overlap" in out


def test_corpus_statistics_with_split_list(corpus, tmp_path):
    split = tmp_path / "ids.txt"
    split.write_text("4321\n")
    rc, out, err = run_cli("stats", "--corpus", "switchboard", corpus, "--split-list", split, "--json", "--quiet")
    assert rc == 0, err
    agg = json.loads(out)
    assert agg["conversations"] == 1 and agg["per_minute"]["gap"] == pytest.approx(6.0)
    assert agg["floor_transfer_offset"]["n"] == 3
    rc, out, err = run_cli("stats", "--corpus", "switchboard", corpus, "--split", "val", "--json")
    assert rc == 0 and json.loads(out)["conversations"] == 2
    assert "conversations" in err  # progress bar on stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["stats", "/nonexistent/x.wav"], "input not found: /nonexistent/x.wav"),
        (["stats", "--corpus", "fisher", "/tmp"], "unknown corpus 'fisher'"),
        (["stats", "--corpus", "switchboard", "/nonexistent"], "not a Switchboard MS-98 directory"),
    ],
)
def test_bad_input_gives_one_line_error(args, message):
    rc, out, err = run_cli(*args)
    assert rc == 2 and out == ""
    assert err.strip().splitlines() == [f"error: {err.strip().removeprefix('error: ')}"]
    assert message in err


def test_bad_input_from_the_real_process_is_one_line_too():
    rc, out, err = run_process("stats", "/nonexistent/x.wav")
    assert rc == 2 and out == "" and err == "error: input not found: /nonexistent/x.wav\n"


def test_word_timings_with_an_audio_backend_is_refused(corpus):
    rc, _, err = run_cli("stats", corpus / "swb_ms98_transcriptions/43/4321", "--vad", "silero")
    assert rc == 2 and "holds word timings, not audio" in err


def test_malformed_voice_activity_json(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"duration": 3, "vad": [[[0, 1]]]}')
    rc, _, err = run_cli("stats", bad)
    assert rc == 2 and "exactly two speakers" in err
    bad.write_text("{not json")
    rc, _, err = run_cli("stats", bad)
    assert rc == 2 and "not valid JSON" in err
