"""The address people reach the app at, for the links the command lines print.

The app records where it listens (or its --base-url, e.g. behind a proxy) in the data root when it
starts; `python -m annotation annotators` reads it back, so its links point at the running app
whatever port it was given. TURNTAKING_BASE_URL overrides both.
"""

from __future__ import annotations

import os
from pathlib import Path

BASE_URL_ENV = "TURNTAKING_BASE_URL"
BASE_URL_FILE = "base-url.txt"
DEFAULT_BASE_URL = "http://localhost:7860"


def record_base_url(data_root: Path | str, url: str) -> None:
    root = Path(data_root)
    root.mkdir(parents=True, exist_ok=True)
    (root / BASE_URL_FILE).write_text(url.rstrip("/") + "\n")


def configured_base_url(data_root: Path | str) -> str:
    """$TURNTAKING_BASE_URL, else what the app last recorded in `data_root`, else the default."""
    if os.environ.get(BASE_URL_ENV):
        return os.environ[BASE_URL_ENV].rstrip("/")
    recorded = Path(data_root) / BASE_URL_FILE
    if recorded.is_file() and recorded.read_text().strip():
        return recorded.read_text().strip()
    return DEFAULT_BASE_URL
