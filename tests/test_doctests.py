"""The runnable examples in the project's docstrings: every module that carries one is run here,
so an example that no longer holds fails the suite like any other test."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[1]
PACKAGES = ("turntaking", "speech", "storage", "webguard", "jobs", "judge", "studies", "annotation", "examiner",
            "naturalness", "predictorbench", "analysis", "demo")


def modules_with_examples() -> list[str]:
    """Dotted names of the project's modules whose source holds a `>>> ` example."""
    found = []
    for package in PACKAGES:
        for path in sorted((PROJECT / package).rglob("*.py")):
            if ">>> " in path.read_text(encoding="utf-8"):
                found.append(".".join(path.relative_to(PROJECT).with_suffix("").parts))
    return found


def test_some_modules_carry_examples():
    assert len(modules_with_examples()) >= 2


@pytest.mark.parametrize("module", modules_with_examples())
def test_examples_hold(module):
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"no example of {module} was run"
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {module} failed"
