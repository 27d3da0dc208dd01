"""SID-bench FIR / IRL / APT on a small table worked out by hand (50 ms tolerance).

en split:
  c1 break 1.0, 4 s, pred 1.03   true positive, |error| 0.03, penalty 0
  c2 break 2.0, 5 s, pred 2.5    late, penalty 0.5
  c3 break 1.5, 3 s, no pred     miss, penalty 3.0 - 1.5 = 1.5
  c4 break 2.0, 6 s, pred 1.0    early: penalty 1.0 (absolute) or 6.0 (false_alarm)
  c5 break 0.5, 2 s, pred 0.45   true positive at the tolerance edge, |error| 0.05
  c6 no break, 3 s, pred 1.2     false alarm, penalty 3.0
  c7 no break, 2 s, no pred      penalty 0
silence_noise split:
  s1 no break, 10 s, no pred     penalty 0
  s2 no break, 4 s, pred 0.5     false alarm, penalty 4.0
Overall: FIR 2/4; IRL (0.03 + 0.05) / 2 = 0.04; APT (0.5 + 1.5 + 1.0 + 3.0 + 4.0) / 9 = 10/9.
"""

import io
from contextlib import redirect_stderr, redirect_stdout
from types import SimpleNamespace
import json
import subprocess
import sys

import pytest

from predictorbench.sid.data import SidClip
from predictorbench.sid.metrics import report, score

EN = [("c1", 1.0, 4.0, 1.03), ("c2", 2.0, 5.0, 2.5), ("c3", 1.5, 3.0, None), ("c4", 2.0, 6.0, 1.0),
      ("c5", 0.5, 2.0, 0.45), ("c6", None, 3.0, 1.2), ("c7", None, 2.0, None)]
SILENCE = [("s1", None, 10.0, None), ("s2", None, 4.0, 0.5)]


def in_process(*args):
    """The CLI in this process (same parser and handlers as `python -m predictorbench ...`)."""
    from predictorbench.__main__ import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    return SimpleNamespace(returncode=code, stdout=out.getvalue(), stderr=err.getvalue())


def annotation(name, brk, dur, silence=False):
    return {"audio": f"{name}.wav", "total_nonbreak": brk is None, "duration": dur,
            "break_time": (dur if silence else -1) if brk is None else brk,
            "text_with_break": None if silence else "so <break> what"}


def prediction(name, pred):
    return {"audio": f"{name}.wav", "total_nonbreak": pred is None, "break_time": -1 if pred is None else pred}


def clips(rows, split):
    return [SidClip(f"{n}.wav", split, b is None, d, -1 if b is None else b) for n, b, d, _ in rows]


PREDS = {f"{n}.wav": {"total_nonbreak": p is None, "break_time": p} for n, _, _, p in EN + SILENCE}


def test_fir_irl_apt_by_hand():
    r = report({"en": clips(EN, "en"), "silence_noise": clips(SILENCE, "silence_noise")}, PREDS)
    assert r["FIR"] == 0.5 and r["IRL"] == pytest.approx(0.04) and r["APT"] == pytest.approx(10 / 9)
    assert r["outcomes"] == {"true_positive": 2, "late": 1, "early": 1, "miss": 1, "false_alarm": 2, "true_negative": 2}
    en, sil = r["per_split"]["en"], r["per_split"]["silence_noise"]
    assert (en["FIR"], en["IRL"], en["APT"]) == (0.5, pytest.approx(0.04), pytest.approx(6 / 7))
    assert (sil["FIR"], sil["IRL"], sil["APT"]) == (0.5, None, 2.0)
    # an early detection treated as a false alarm costs the whole clip instead
    assert score(clips(EN, "en"), PREDS, early_penalty="false_alarm")["APT"] == pytest.approx(11 / 7)
    # a tighter tolerance turns c5 (50 ms off) into an early detection
    tight = score(clips(EN, "en"), PREDS, tolerance=0.04)
    assert tight["IRL"] == pytest.approx(0.03) and tight["APT"] == pytest.approx(6.05 / 7)


def test_cli_metrics_on_sid_bench_files(tmp_path):
    (tmp_path / "en_test_lines.jsonl").write_text("".join(json.dumps(annotation(n, b, d)) + "\n" for n, b, d, _ in EN))
    (tmp_path / "silence_noise_test.jsonl").write_text(
        "".join(json.dumps(annotation(n, b, d, silence=True)) + "\n" for n, b, d, _ in SILENCE))
    (tmp_path / "pred.jsonl").write_text("".join(json.dumps(prediction(n, p)) + "\n" for n, _, _, p in EN + SILENCE))
    cmd = [sys.executable, "-m", "predictorbench", "sid", "metrics", "--annotations", str(tmp_path / "en_test_lines.jsonl"),
           str(tmp_path / "silence_noise_test.jsonl"), "--predictions", str(tmp_path / "pred.jsonl")]
    r = subprocess.run(cmd + ["--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert (out["FIR"], out["IRL"], out["APT"]) == (0.5, pytest.approx(0.04), pytest.approx(10 / 9))
    assert set(out["per_split"]) == {"en", "silence_noise"} and out["early_penalty"] == "absolute"

    (tmp_path / "short.jsonl").write_text(json.dumps(prediction("c1", 1.0)) + "\n")
    r = in_process(*cmd[3:-1], str(tmp_path / "short.jsonl"))
    assert r.returncode == 2 and r.stderr.startswith("error: 8 annotated clip(s) have no prediction")
    (tmp_path / "bad.jsonl").write_text('{"audio": "c1.wav"}\n')
    r = in_process(*cmd[3:-1], str(tmp_path / "bad.jsonl"))
    assert r.returncode == 2 and "bad.jsonl:1: needs audio, total_nonbreak" in r.stderr
