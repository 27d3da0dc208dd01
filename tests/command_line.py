"""Helpers of the command-line tests: run `python -m PACKAGE ...` (judge, naturalness,
predictorbench) and a judge checkpoint to run the judge-based commands with.

`run_cli` calls the package's `main(argv)` in this process (the interpreter start and torch import
would otherwise dominate the tests); `run_cli_process` runs the real `python -m PACKAGE`.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_cli(package: str, *args, env: dict[str, str] | None = None, unset=()) -> subprocess.CompletedProcess:
    """`main(argv)` of `package.__main__` with its output captured; `env` set and `unset` removed
    from the environment while it runs."""
    main = importlib.import_module(f"{package}.__main__").main
    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    with _environment(env or {}, unset), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse usage errors
            code = exc.code
    return subprocess.CompletedProcess(["python", "-m", package, *argv], code, out.getvalue(), err.getvalue())


@contextlib.contextmanager
def _environment(env: dict[str, str], unset):
    saved = dict(os.environ)
    for name in unset:
        os.environ.pop(name, None)
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def run_cli_process(package: str, *args) -> subprocess.CompletedProcess:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    return subprocess.run([sys.executable, "-m", package, *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


def run_cli_json(package: str, *args) -> dict:
    result = run_cli(package, *args, "--json")
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
