"""tests.time_profile on a real pytest run: a test that computes for a known time shows its CPU
seconds under its file, and the machine's line follows the files."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.command_line import ROOT, run_cli_process

BUSY_TEST = '''
import time

def test_computes_for_a_third_of_a_second():
    until = time.process_time() + 0.3
    while time.process_time() < until:
        pass
'''


def test_a_computing_test_is_counted_under_its_file_and_the_machine_line_follows(tmp_path):
    (tmp_path / "test_busy.py").write_text(BUSY_TEST)
    env = {**os.environ, "TURNTAKING_TEST_PROFILE": str(tmp_path / "profile"), "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "tests.time_profile", "-p", "no:cacheprovider",
                          str(tmp_path / "test_busy.py")], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    rows = [row for path in (tmp_path / "profile").glob("main-*.json") for row in json.loads(path.read_text())]
    assert len(rows) == 1 and rows[0]["cpu_s"] >= 0.3 and rows[0]["wall_s"] >= rows[0]["cpu_s"] * 0.9
    shown = run_cli_process("tests.time_profile", tmp_path / "profile")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[1].split()[2:] == ["1", "test_busy.py"] and float(lines[1].split()[0]) >= 0.3
    assert lines[-1].startswith("the machine: ") and f"{os.cpu_count()} cores" in lines[-1]


def test_no_profile_is_one_line_and_a_non_zero_exit(tmp_path):
    shown = run_cli_process("tests.time_profile", tmp_path)
    assert shown.returncode == 2 and shown.stderr.count("\n") == 1 and shown.stderr.startswith("error: no profile")
