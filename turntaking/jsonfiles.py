"""The one reader of the project's JSON and JSONL files, with one-line errors naming file and line.

    data = read_json(path, "thresholds file", ThresholdsError)       # a JSON object
    rows = read_jsonl(path, "manifest", ManifestError)               # one JSON object a line
    for n, row in numbered_jsonl(path, "manifest", ManifestError):   # ... with its line number

A missing file is `error("<what> not found: PATH")`, a bad line `error("PATH:N: not valid JSON (...)")`;
`error` is a ValueError subclass of the caller's (default `JsonFileError`). Blank lines of a JSONL
file are skipped.
"""

from __future__ import annotations

import json
from pathlib import Path


class JsonFileError(ValueError):
    """A JSON or JSONL file that is missing or cannot be read; the message is one line."""


def _text(path: Path, what: str, error: type[ValueError]) -> str:
    if not path.is_file():
        raise error(f"{what} not found: {path}")
    return path.read_text()


def read_json(path, what: str = "JSON file", error: type[ValueError] = JsonFileError) -> dict:
    """The JSON object in `path`."""
    path = Path(path)
    try:
        data = json.loads(_text(path, what, error))
    except json.JSONDecodeError as exc:
        raise error(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise error(f"{path}: expected a JSON object")
    return data


def numbered_jsonl(path, what: str = "JSONL file", error: type[ValueError] = JsonFileError) -> list[tuple[int, dict]]:
    """(line number, JSON object) of every non-blank line of `path`."""
    path = Path(path)
    out = []
    for n, line in enumerate(_text(path, what, error).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise error(f"{path}:{n}: not valid JSON ({exc.msg})") from None
        if not isinstance(item, dict):
            raise error(f"{path}:{n}: expected a JSON object")
        out.append((n, item))
    return out


def read_jsonl(path, what: str = "JSONL file", error: type[ValueError] = JsonFileError) -> list[dict]:
    """The JSON object of every non-blank line of `path`."""
    return [item for _, item in numbered_jsonl(path, what, error)]
