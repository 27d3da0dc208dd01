"""Helpers of the scoring CLI tests: run `python -m judge` and a judge checkpoint to run it with.

`run_judge` calls the CLI's `main(argv)` in this process (the interpreter start and torch import
would otherwise dominate the tests); `run_judge_process` runs the real `python -m judge`.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_judge(*args) -> subprocess.CompletedProcess:
    from judge.__main__ import main

    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse usage errors
            code = exc.code
    return subprocess.CompletedProcess(["python", "-m", "judge", *argv], code, out.getvalue(), err.getvalue())


def run_judge_process(*args) -> subprocess.CompletedProcess:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    return subprocess.run([sys.executable, "-m", "judge", *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


def run_json(*args) -> dict:
    result = run_judge(*args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def one_line_error(result: subprocess.CompletedProcess, *fragments: str) -> str:
    """Assert exit status 2 and a single 'error: ...' line on stderr containing the fragments."""
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def write_checkpoint(directory: Path) -> Path:
    """A randomly initialised voice-activity judge (fixed seed), saved like a trained one."""
    import torch

    from judge.model import JudgeModel, save_checkpoint

    torch.manual_seed(0)
    path = Path(directory) / "judge.pt"
    save_checkpoint(JudgeModel(), path)
    return path
