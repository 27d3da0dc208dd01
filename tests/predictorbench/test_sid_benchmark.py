"""SID-bench end to end on a small benchmark in its exact layout (test_wavs/*.jsonl + WAV folders),
made of espeak-ng speech with breaks at known times, a backchannel-only clip, and silence/noise."""

import io
from contextlib import redirect_stderr, redirect_stdout
from types import SimpleNamespace
import json
import subprocess
import sys

import numpy as np
import pytest
import soundfile

from predictorbench.sid.data import SidDataError, load_benchmark
from predictorbench.sid.run import VadBreakDetector, run_split
from tests.predictorbench.speech_fixtures import SR, place

BREAKS = {"b1.wav": (0.8, "Wait, I have a question about that"), "b2.wav": (1.6, "Sorry, can I stop you there"),
          "b3.wav": (0.4, "Actually that is not what I meant")}


def in_process(*args):
    """The CLI in this process (same parser and handlers as `python -m predictorbench ...`)."""
    from predictorbench.__main__ import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    return SimpleNamespace(returncode=code, stdout=out.getvalue(), stderr=err.getvalue())


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    root = tmp_path_factory.mktemp("sid") / "SID-bench" / "Semantic_Interaption"
    wavs = root / "test_wavs"
    (wavs / "en").mkdir(parents=True)
    (wavs / "silence_or_noise").mkdir()
    lines = []
    for name, (at, text) in BREAKS.items():
        audio, segs = place([at, (text, 0.7)])
        soundfile.write(wavs / "en" / name, audio, SR)
        lines.append({"audio": name, "total_nonbreak": False, "duration": len(audio) / SR, "break_time": at,
                      "text_with_break": f"<break> {text}"})
    audio, _ = place([1.0, ("yeah", 1.0)])  # a backchannel: speech that should not interrupt
    soundfile.write(wavs / "en" / "n1.wav", audio, SR)
    lines.append({"audio": "n1.wav", "total_nonbreak": True, "duration": len(audio) / SR, "break_time": -1,
                  "text_with_break": "yeah"})
    (wavs / "en_test_lines.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))

    rng = np.random.default_rng(0)
    silence = {"quiet.wav": np.zeros(3 * SR, dtype=np.float32),
               "hiss.wav": (0.003 * rng.standard_normal(4 * SR)).astype(np.float32)}
    noise_lines = []
    for name, audio in silence.items():
        soundfile.write(wavs / "silence_or_noise" / name, audio, SR)
        noise_lines.append({"audio": name, "total_nonbreak": True, "duration": len(audio) / SR,
                            "break_time": len(audio) / SR, "text_with_break": None})
    (wavs / "silence_noise_test.jsonl").write_text("".join(json.dumps(x) + "\n" for x in noise_lines))
    return root.parent


def test_layout_and_vad_baseline(bench):
    splits = load_benchmark(bench)  # found under SID-bench/Semantic_Interaption/test_wavs
    assert {k: len(v) for k, v in splits.items()} == {"en": 4, "silence_noise": 2}
    lines = {x["audio"]: x for x in run_split(VadBreakDetector(), splits["en"])}
    for name, (at, _) in BREAKS.items():
        # the VAD notices speech onsets within one or two 32 ms frames
        assert at < lines[name]["break_time"] <= at + 0.07, (name, lines[name])
    assert lines["n1.wav"]["total_nonbreak"] is False  # it cannot tell a backchannel from a break
    quiet = run_split(VadBreakDetector(), splits["silence_noise"])
    assert [x["total_nonbreak"] for x in quiet] == [True, True]
    # the cascade's barge-in needs 500 ms of speech: late for breaks, deaf to the short backchannel
    cascade = {x["audio"]: x for x in run_split(VadBreakDetector(threshold=0.3, min_speech_ms=500.0, name="cascade"), splits["en"])}
    assert all(at + 0.45 < cascade[n]["break_time"] <= at + 0.6 for n, (at, _) in BREAKS.items())
    assert cascade["n1.wav"] == {"audio": "n1.wav", "total_nonbreak": True, "break_time": -1}


def test_cli_run_then_metrics(bench, tmp_path):
    out = tmp_path / "pred"
    r = subprocess.run([sys.executable, "-m", "predictorbench", "sid", "run", "--root", str(bench), "--detector", "vad",
                        "--out-dir", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    wavs = bench / "Semantic_Interaption" / "test_wavs"
    r = in_process("sid", "metrics", "--annotations", str(wavs / "en_test_lines.jsonl"),
                   str(wavs / "silence_noise_test.jsonl"), "--predictions", str(out / "en_test_lines.predictions.jsonl"),
                   str(out / "silence_noise_test.predictions.jsonl"), "--json")
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)
    en, noise = m["per_split"]["en"], m["per_split"]["silence_noise"]
    assert en["FIR"] == 1.0 and noise["FIR"] == 0.0 and m["FIR"] == pytest.approx(1 / 3)
    assert en["outcomes"]["miss"] == 0 and en["outcomes"]["early"] == 0
    # every break found within the tolerance or a few ms late; APT = (lateness + the backchannel clip) / n
    n1 = json.loads((wavs / "en_test_lines.jsonl").read_text().splitlines()[-1])["duration"]
    assert n1 / 6 <= m["APT"] <= (n1 + 3 * 0.07) / 6
    assert m["IRL"] is None or m["IRL"] <= 0.05


def test_layout_errors(tmp_path):
    with pytest.raises(SidDataError, match="no SID-bench annotations"):
        load_benchmark(tmp_path)
    (tmp_path / "en_test_lines.jsonl").write_text('{"audio": "a.wav", "total_nonbreak": false, "duration": 1.0, '
                                                  '"break_time": 3.0, "text_with_break": "x"}\n')
    with pytest.raises(SidDataError, match="break_time 3.0 outside the clip"):
        load_benchmark(tmp_path)
