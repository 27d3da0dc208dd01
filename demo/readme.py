"""The README's figures of the built demo, written from the build rather than typed in: the text
between two marker lines of README.md is replaced by what `pairs_markdown` makes of the build's
pair counts (`python -m demo readme`, after `python -m demo build`).
"""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
BEGIN = "<!-- demo pairs: written by `python -m demo readme` from the built demo -->"
END = "<!-- end of demo pairs -->"
_BLOCK = re.compile(re.escape(BEGIN) + r"\n(.*?)\n" + re.escape(END), re.DOTALL)


class ReadmeError(ValueError):
    """The README has no block to write (one line)."""


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def pairs_markdown(counts: dict[str, int]) -> str:
    """The sentence on the demo's clip pairs, from the build's counts (demo.build.pair_counts)."""
    judged = counts["formal"] + counts["artifact_control"]
    controls = _plural(counts["artifact_control"], "artifact control", "artifact controls")
    attention = _plural(counts["attention"], "attention check", "attention checks")
    return (f"{counts['formal']} formal, {controls}, {attention}, {counts['practice']} practice, "
            f"{counts['all']} in all; the {judged} formal and control pairs take judgments.")


def readme_block(text: str) -> str:
    """The text between the README's markers."""
    found = _BLOCK.search(text)
    if found is None:
        raise ReadmeError(f"the README has no block between '{BEGIN}' and '{END}'")
    return found.group(1)


def with_pairs(text: str, counts: dict[str, int]) -> str:
    """`text` (the README) with its block replaced by the sentence of `counts`."""
    readme_block(text)  # says so when the markers are missing
    return _BLOCK.sub(lambda _: f"{BEGIN}\n{pairs_markdown(counts)}\n{END}", text, count=1)
