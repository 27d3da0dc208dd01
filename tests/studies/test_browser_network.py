"""The call page's network samples, in real Chromium: a call over loopback (host candidates) to a
study system (a local OpenAI-Realtime server answering with a tone). Once a second the page sends
what `getStats()` gives over the data channel; the server writes each with the microphone clock
of its arrival beside its own samples, and the summary stored with the session has the page's
round trip, loss, concealment, playout delay and candidate type.
"""

from __future__ import annotations

import json

import numpy as np
import soundfile
from playwright.sync_api import expect, sync_playwright
from sqlmodel import select

from app import build_app
from storage.db import session_scope
from storage.models import ConversationSession, Participant
from studies.config import apply_config, parse_config
from studies.network_figures import read_network, summarise
from studies.sessions import network_relpath
from tests.browser import serve
from tests.studies.fake_servers import fake_realtime
from tests.studies.test_browser_call import _context, _start_call
from tests.waiting import wait_until

PAGE_SAMPLES = 4


def test_the_page_sends_its_network_figures_once_a_second(tmp_path, monkeypatch):
    monkeypatch.setenv("TEST_REALTIME_KEY", "test-key")
    t = np.arange(2 * 48000) / 48000
    mic = tmp_path / "tone.wav"  # Chromium loops it as the microphone
    soundfile.write(str(mic), 0.3 * np.sin(2 * np.pi * 440 * t) * (t < 1.0), 48000, subtype="PCM_16")
    app = build_app(database_url=f"sqlite:///{tmp_path / 'app.db'}", data_root=tmp_path, researcher_password="pw")
    with fake_realtime(reply_s=1.0) as (url, _), serve(app) as base_url:
        with session_scope(app.state.engine) as session:
            # as tests/studies/test_browser_call.py's study "browser" is shown (_start_call)
            apply_config(session, parse_config({
                "name": "browser", "session_seconds": 60, "topics": ["preparing for a hike"], "questionnaire": {},
                "systems": [{"name": "remote", "kind": "realtime",
                             "config": {"url": url, "api_key_env": "TEST_REALTIME_KEY"}}]}))
        with sync_playwright() as playwright:
            context = _context(playwright, tmp_path, mic)
            try:
                page = context.pages[0] if context.pages else context.new_page()
                _start_call(page, base_url, "net-1")
                expect(page.locator("#call-state")).to_have_text("Connected: talk now.", timeout=60_000)
                with session_scope(app.state.engine) as session:
                    session_id = session.exec(select(ConversationSession.id).join(Participant)
                                              .where(Participant.external_id == "net-1")).one()
                path = tmp_path / network_relpath(session_id)

                def page_rows():
                    rows = read_network(path) if path.is_file() else []
                    return [r for r in rows if r["side"] == "page"]

                wait_until(lambda: len(page_rows()) >= PAGE_SAMPLES, 30, f"{PAGE_SAMPLES} samples from the page")
                page.click("#end")
                expect(page.locator("#done-text")).to_be_visible(timeout=30_000)
            finally:
                context.close()
    rows = read_network(path)
    page_side = [r for r in rows if r["side"] == "page"]
    print("the page's last sample:", json.dumps(page_side[-1]))
    last = page_side[-1]
    assert last["candidate_type"] == "host" and last["relay_protocol"] is None  # loopback, no TURN
    assert 0 <= last["rtt_ms"] < 1000 and last["jitter_ms"] is not None  # loopback; a loaded machine answers late
    assert last["packets_received"] >= 40 and last["packets_lost"] == 0  # the system's 20 ms packets
    assert last["total_samples_received"] > 0 and last["concealed_samples"] is not None
    assert last["playout_delay_ms"] is not None and last["playout_delay_ms"] > 0
    times = [r["page_t_ms"] for r in page_side]
    assert times == sorted(times) and 800 <= times[1] - times[0] <= 1500  # once a second
    with session_scope(app.state.engine) as session:
        stored = session.get(ConversationSession, session_id).network
    assert stored == summarise(rows)
    assert stored["candidate_type"] == "host" and stored["loss_to_page"] == 0.0 and stored["loss_to_server"] == 0.0
    assert stored["rtt_ms_p50"] is not None and stored["page_samples"] >= PAGE_SAMPLES
    app.state.engine.dispose()
