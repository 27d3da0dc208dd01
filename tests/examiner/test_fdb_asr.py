"""Where output.json is missing, the packaged ASR makes it: same take-over and latency within
0.2 s of the words given, on espeak-ng speech placed at known times."""

from __future__ import annotations

import json
import shutil

import pytest
import soundfile

from examiner.output_words import PACKAGED_ASR
from tests.command_line import run_cli
from tests.rendered_speech import Utterance, render_speech

TOLERANCE_S = 0.2


def write_wav(path, utterances, duration):
    speech = render_speech([Utterance(0, start, text, voice) for start, text, voice in utterances], duration,
                           channels=1)
    speech.write(path)
    return speech.utterances


def given_words(placed):
    """output.json as the words given: each utterance's words spread evenly over its audible span."""
    chunks = []
    for u in placed:
        ws = u.text.split()
        step = (u.end - u.start) / len(ws)
        chunks += [{"text": w, "timestamp": [u.start + k * step, u.start + (k + 1) * step]} for k, w in enumerate(ws)]
    return {"text": " ".join(c["text"] for c in chunks), "chunks": chunks}


@pytest.fixture(scope="module")
def smooth_set(tmp_path_factory):
    """Two smooth turn-taking examples: an answer 0.6 s after the question, and a lone "okay"."""
    root = tmp_path_factory.mktemp("smooth")
    known = {}
    for name, reply in (("0", "it is about three in the afternoon"), ("1", "okay")):
        folder = root / name
        folder.mkdir()
        question = write_wav(folder / "input.wav", [(0.5, "what time is it now", "en-us")], 8.0)
        user_end = question[0].end
        known[name] = write_wav(folder / "output.wav", [(user_end + 0.6, reply, "en-us+f3")], 8.0), user_end
        (folder / "turn_taking.json").write_text(json.dumps([{"text": "[TURN-TAKING]", "timestamp": [user_end, 8.0]}]))
    return root, known


def test_the_packaged_asr_gives_the_same_tor_and_latency_as_the_words_given(smooth_set, tmp_path):
    root, known = smooth_set
    done = run_cli("examiner", "fdb", root, "--task", "smooth_turn_taking", "--json")
    assert done.returncode == 0, done.stderr
    asr = json.loads(done.stdout)
    assert asr["words_from"] == [PACKAGED_ASR]
    assert json.loads((root / "0" / "output.json").read_text())["asr"] == PACKAGED_ASR

    given_root = tmp_path / "given"
    for name, (placed, _) in known.items():
        shutil.copytree(root / name, given_root / name, ignore=shutil.ignore_patterns("output.json"))
        (given_root / name / "output.json").write_text(json.dumps(given_words(placed)))
    given = json.loads(run_cli("examiner", "fdb", given_root, "--task", "smooth_turn_taking", "--json").stdout)

    assert [r["tor"] for r in asr["rows"]] == [r["tor"] for r in given["rows"]] == [1, 0]
    assert given["rows"][0]["latency_s"] == pytest.approx(0.6, abs=1e-3)
    assert abs(asr["rows"][0]["latency_s"] - given["rows"][0]["latency_s"]) <= TOLERANCE_S
    assert abs(asr["latency_s"] - given["latency_s"]) <= TOLERANCE_S


def test_user_interruption_words_are_cropped_at_the_interruption_end(tmp_path):
    folder = tmp_path / "set" / "0"
    folder.mkdir(parents=True)
    # The system talks until 3.0 s, the user interrupts from 2.5 to 3.8 s, the system answers at 4.5 s.
    placed = write_wav(folder / "output.wav", [(0.3, "once upon a time there was", "en-us+f3"),
                                                (4.5, "sorry what did you want to ask", "en-us+f3")], 9.0)
    assert placed[0].end < 3.8
    (folder / "interrupt.json").write_text(json.dumps(
        [{"context": "tell me a story", "interrupt": "wait a moment", "timestamp": [2.5, 3.8]}]))
    report = json.loads(run_cli("examiner", "fdb", tmp_path / "set", "--task", "user_interruption", "--json").stdout)
    row = report["rows"][0]
    words = json.loads((folder / "output.json").read_text())
    assert words["asr_crop_s"] == 3.8 and all(c["timestamp"][0] >= 3.8 for c in words["chunks"])
    assert row["tor"] == 1
    assert abs(row["latency_s"] - (placed[1].start - 3.8)) <= TOLERANCE_S


def test_backchannels_of_real_speech(tmp_path):
    quiet = tmp_path / "set" / "0"
    quiet.mkdir(parents=True)
    write_wav(quiet / "output.wav", [(3.0, "yeah", "en-us"), (9.0, "mm hmm", "en-us"), (14.0, "okay", "en-us")], 20.0)
    talker = tmp_path / "set" / "1"
    talker.mkdir()
    write_wav(talker / "output.wav", [(2.0, "well actually i think that the story you are telling me is not quite "
                                            "right because the dates do not match", "en-us")], 20.0)
    report = json.loads(run_cli("examiner", "fdb", tmp_path / "set", "--task", "backchannel", "--json").stdout)
    quiet_row, talker_row = report["rows"]
    assert quiet_row["tor"] == 0 and len(quiet_row["backchannels"]) == 3
    assert [round(s) for s, _ in quiet_row["backchannels"]] == [3, 9, 14]
    assert quiet_row["frequency_per_s"] == pytest.approx(3 / 20)
    # Silero may cut the sentence's first word off as a short segment (a "backchannel" by FDB's scan,
    # as in FDB); the long rest is a turn.
    assert talker_row["tor"] == 1 and all(s < 2.5 for s, _ in talker_row["backchannels"])
    # Folder names "0" and "1" are FDB's own examples' names: its ground truth is the reference.
    assert quiet_row["reference"] == "FDB icc_gt_distribution.json[0]" and 0 < quiet_row["jsd"] < 0.84
    assert report["jsd_examples"] == 2
    assert soundfile.info(str(quiet / "output.wav")).samplerate == 16000
