"""The test set is run once: when a system's settings are final, and its result kept with the commit.

A task set spoken by the `test` voices or asking the `test` questions (examiner.voices,
examiner.task_sets) is the test set. A set checked again and again while settings change becomes
a set settings were chosen on, so `python -m examiner run` refuses it unless told `--final`, and
refuses a second final run of the same system kind unless told why (`--again REASON`). Every run
on it is appended to the ledger (`examiner/data/test_set_runs.jsonl`, committed with the code;
$EXAMINER_TEST_SET_LEDGER names another):
when, the commit, the system and its config, the set, the figures, and the reason for a rerun.

    check_test_run(manifest, "predictive", final=True, again=None)   # TestSetError if refused
    record_test_run(report, manifest, again=None)                    # after the run
"""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path

from turntaking.git_commit import git_commit

LEDGER = Path(__file__).parent / "data" / "test_set_runs.jsonl"
LEDGER_ENV = "EXAMINER_TEST_SET_LEDGER"  # another ledger file (the test suite's own)


def ledger_path() -> Path:
    return Path(os.environ.get(LEDGER_ENV) or LEDGER)


class TestSetError(ValueError):
    """A run of the test set that the discipline refuses; the message says what to do."""

    __test__ = False  # not a pytest test class


def is_test_set(manifest: dict) -> bool:
    """Whether a task set's manifest names the test voices or the test questions."""
    return str(manifest.get("voice_set", "")).startswith("test") or manifest.get("question_set") == "test"


def ledger_runs(ledger: Path | None = None) -> list[dict]:
    ledger = ledger or ledger_path()
    if not ledger.exists():
        return []
    return [json.loads(line) for line in ledger.read_text(encoding="utf-8").splitlines() if line.strip()]


def check_test_run(manifest: dict, kind: str, final: bool, again: str | None, ledger: Path | None = None) -> None:
    """Refuse a run of the test set that is not final, or a second one of `kind` with no reason."""
    if not is_test_set(manifest):
        if final or again:
            raise TestSetError("--final and --again are for the test set (make-tasks --voices test or --questions test)")
        return
    if not final:
        raise TestSetError("this is the test set, run once when the settings are final: add --final "
                           "(choose settings on --voices choosing / --questions choosing)")
    earlier = [run for run in ledger_runs(ledger) if run["kind"] == kind]
    if earlier and not (again or "").strip():
        first = earlier[0]
        raise TestSetError(f"the test set already ran {kind} (commit {first['commit'][:10]}, {first['date']}): "
                           "a second run needs --again REASON, which the ledger keeps")


def record_test_run(report: dict, manifest: dict, again: str | None, ledger: Path | None = None,
                    extra: dict | None = None) -> dict:
    """Append the run to the ledger (with `extra`, e.g. a paired comparison); the entry."""
    ledger = ledger or ledger_path()
    commit = git_commit(Path(__file__).resolve().parents[1], dirty=True) or "unknown"
    entry = {"date": datetime.date.today().isoformat(), "commit": commit, "kind": report["kind"],
             "system": report["system"], "config": report["config"], "voice_set": manifest.get("voice_set"),
             "question_set": manifest.get("question_set"), "seed": manifest.get("seed"),
             "tasks": manifest.get("tasks"), "per_task": manifest.get("per_task"), "calls": report["calls"],
             "figures": report["table"], "again": (again or "").strip() or None, **(extra or {})}
    ledger.parent.mkdir(parents=True, exist_ok=True)
    with ledger.open("a", encoding="utf-8") as out:
        out.write(json.dumps(entry) + "\n")
    return entry
