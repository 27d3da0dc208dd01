"""The commit a result was made with, for its provenance."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git_commit(where: Path, dirty: bool = False) -> str | None:
    """The commit checked out at `where` (None outside git); with `dirty`, '+dirty' appended when
    tracked files differ from it."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True,
                              check=True, timeout=10).stdout.strip()
        changed = dirty and subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=where,
                                           capture_output=True, text=True, check=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return (head + ("+dirty" if changed else "")) or None
