"""Fixtures shared by every test folder: keep small; folder-specific ones live in their conftest."""

import os

import pytest

from tests.rendered_speech import dialogue, dialogue_wav  # noqa: F401  (espeak-ng speech for every folder)

# No model hub here: everything loads from packaged files.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for the whole run (pages and contexts are per test)."""
    from tests.browser import chromium

    with chromium() as launched:
        yield launched
