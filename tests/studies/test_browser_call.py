"""A real browser call: headless Chromium with a fake microphone playing espeak-ng speech with
pauses goes through the participant flow (connection check, consent, topic, instructions, call) and
talks to the cascaded system over WebRTC. The stored two-channel recording has the participant's speech at
the right times and the system's replies on the other channel; session and recording rows are
in the database. Also: denied microphone, unknown study link, a second simultaneous call, the step
indicator over two systems. (Lost calls, which time nothing: tests/studies/test_lost_calls.py.)

Runs alone on the machine's cores if it can: a saturated machine delays the mic stream.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import numpy as np
import pytest
import soundfile
from playwright.sync_api import expect, sync_playwright
from sqlmodel import select

from app import build_app
from speech.audio import resample
from storage.db import session_scope
from storage.files import resolve
from storage.models import ConversationSession, Participant, Recording
from studies.config import apply_config, parse_config
from studies.sessions import call_relpath
from studies.timing import clock_fit
from tests.browser import CHROMIUM, CHROMIUM_ARGS, serve
from tests.studies.conftest import espeak_16k
from tests.waiting import wait_until

# The mic-clock health check needs the machine to itself: make test runs these tests after the
# parallel run, alone (tests/conftest.py, marker `alone`).
pytestmark = pytest.mark.alone

LINES = ["Hello, I would like to talk about hiking.", "What should I bring for a day hike?"]
CALL_S = 26


@pytest.fixture(scope="module")
def fake_mic(tmp_path_factory):
    """48 kHz mono WAV: 1 s silence, line 1, 4.5 s silence, line 2, 4.5 s silence (Chromium loops it).
    Returns (path, samples at 16 kHz, onsets of the lines in s)."""
    work = tmp_path_factory.mktemp("mic")
    parts, onsets, position = [np.zeros(16000, dtype=np.float32)], [], 16000
    for k, line in enumerate(LINES):
        speech = espeak_16k(line, work / f"line{k}.wav")
        onsets.append((position + np.flatnonzero(np.abs(speech) > 0.01)[0]) / 16000)
        parts += [speech, np.zeros(int(4.5 * 16000), dtype=np.float32)]
        position += len(speech) + int(4.5 * 16000)
    samples = np.concatenate(parts)

    path = work / "mic.wav"
    soundfile.write(str(path), resample(samples, 16000, 48000), 48000, subtype="PCM_16")
    return path, samples, onsets


@pytest.fixture(scope="module")
def served(tmp_path_factory, cascade_components):
    data_root = tmp_path_factory.mktemp("data")
    app = build_app(database_url=f"sqlite:///{data_root / 'app.db'}", data_root=data_root, researcher_password="pw")
    engine = app.state.engine
    with session_scope(engine) as session:
        apply_config(session, parse_config({
            "name": "browser", "title": "Browser call test", "session_seconds": 60,
            "systems": [{"name": "cascaded", "kind": "cascaded"}],
            "questionnaire": {},  # the calls alone (the questions after them: test_questionnaire_page.py)
        }))
        apply_config(session, parse_config({  # two systems, one call each (the same models)
            # its calls end as soon as they connect: any length counts here
            "name": "two-systems", "title": "Two systems", "session_seconds": 60, "min_call_seconds": 0,
            "questionnaire": {},
            "systems": [{"name": "alpha", "kind": "cascaded"}, {"name": "beta", "kind": "cascaded"}],
        }))
    # The cascade's models, already loaded by the fixture, are shared with the app's calls.
    app.state.participant_calls.cascade_components({}, loaded=cascade_components)
    with serve(app) as base_url:
        yield app, base_url, data_root


def _context(playwright, tmp_path, mic_file=None):
    args = list(CHROMIUM_ARGS) + ["--autoplay-policy=no-user-gesture-required"]
    if mic_file is not None:
        args += ["--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
                 f"--use-file-for-fake-audio-capture={mic_file}"]
    context = playwright.chromium.launch_persistent_context(
        str(tmp_path / "profile"), executable_path=str(CHROMIUM), headless=True, args=args
    )
    context.set_default_timeout(60_000)
    return context


def _pass_check(page) -> None:
    """The page's first step: the browser and connection check, consent only once it passed."""
    expect(page.locator("#step-consent")).to_be_hidden()
    expect(page.locator("#check-result")).to_have_attribute("data-outcome", "ok", timeout=30_000)
    expect(page.locator("#step-consent")).to_be_visible()


def _start_call(page, base_url, pid):
    page.goto(f"{base_url}/participate/study/browser?pid={pid}")
    _pass_check(page)
    expect(page.locator("#consent-text")).to_contain_text("recorded")
    # how many conversations and how long, before consent
    expect(page.locator("#plan")).to_contain_text("You will have 1 conversation with a spoken dialogue system, "
                                                  "each up to 1 minute long")
    page.click("#agree")
    page.get_by_label("preparing for a hike").check()
    page.click("#topic-next")
    expect(page.locator("#instructions")).to_contain_text("interrupt")
    expect(page.locator("#call-length")).to_contain_text("The call lasts up to 1 minute;")
    # how a call ends is said once, by the call-length line, not again by the instructions
    expect(page.locator("#step-instructions")).to_contain_text("End call")
    expect(page.locator("#instructions")).not_to_contain_text("End call")
    # the microphone check comes first: Start call waits for it
    expect(page.locator("#start")).to_be_disabled()
    page.click("#check-mic")
    expect(page.locator("#start")).to_be_enabled(timeout=15_000)
    page.click("#start")


def _wait_for_recorded_audio(engine, data_root: Path, pid: str, seconds: float, timeout_s: float = 60,
                             mic_peak_over: float | None = None) -> None:
    """Until the running call of participant `pid` has `seconds` of audio in its file (the recorder
    writes a valid WAV as the call goes), instead of sleeping a guess of how long that takes; with
    `mic_peak_over`, also until its microphone channel has a sample louder than that (the looping
    fake mic has 5.5 s of silence around its wrap, which a few seconds of a call can fall in)."""

    def recorded() -> bool:
        with session_scope(engine) as session:
            conversation = session.exec(select(ConversationSession).join(Participant)
                                        .where(Participant.external_id == pid)).first()
        if conversation is None:
            return False
        path = str(data_root / call_relpath(conversation.id))
        try:
            if soundfile.info(path).duration < seconds:
                return False
            if mic_peak_over is None:
                return True
            audio, _ = soundfile.read(path, dtype="float32", always_2d=True)
            return bool(np.abs(audio[:, 0]).max() > mic_peak_over)
        except (OSError, RuntimeError):  # not written yet
            return False

    wait_until(recorded, timeout_s, f"{seconds} s of audio recorded in the call of {pid}")


def _onsets(signal, threshold=0.01, min_gap_s=1.0):
    """Sample indices where sound starts after at least `min_gap_s` of quiet (the recording's
    first sound only if it has that much quiet before it: the looping fake mic may start
    mid-utterance)."""
    gap = min_gap_s * 16000
    loud = np.flatnonzero(np.abs(signal) > threshold)
    if not len(loud):
        return []
    starts = ([loud[0]] if loud[0] > gap else []) + [b for a, b in zip(loud[:-1], loud[1:]) if b - a > gap]
    return [int(s) for s in starts]


def _onset_errors_ms(found, source, period):
    """|error| of each found onset against the looped source's onsets, after aligning the first
    found onset with whichever source onset fits all of them best."""
    best = None
    for anchor in source:
        offset = found[0] - anchor
        expected = [s + offset + n * period for s in source for n in range(-1, 5)]
        errors = [min(abs(f - e) for e in expected) / 16.0 for f in found]
        if best is None or max(errors) < max(best):
            best = errors
    return [round(e, 2) for e in best]


def test_browser_call_with_the_cascaded_system(served, fake_mic, tmp_path):
    app, base_url, data_root = served
    mic_path, source, _ = fake_mic
    with sync_playwright() as playwright:
        context = _context(playwright, tmp_path, mic_path)
        try:
            page = context.pages[0] if context.pages else context.new_page()
            # the place in line is asked about until the offer takes it up, never after (a 404 in
            # the console at every call's start)
            line = []
            page.on("response", lambda r: line.append((r.request.method, r.status)) if "/api/queue" in r.url else None)
            _start_call(page, base_url, "browser-1")
            expect(page.locator("#call-state")).to_have_text("Connected: talk now.", timeout=60_000)
            assert line and all(status == 200 for _, status in line), line
            # A second call of the same participant at the same time is refused.
            pseudonym = page.evaluate("state.participant")
            secret = page.evaluate(f"sessionStorage.getItem('secret:{pseudonym}')")
            offer = {"participant": pseudonym, "system": "cascaded", "topic": "learning Python", "sdp": "x",
                     "type": "offer"}
            second = httpx.post(f"{base_url}/participate/api/offer", json=offer,
                                headers={"X-Participant-Secret": secret})
            assert second.status_code == 409 and "already have a call running" in second.json()["error"]
            # without the secret given at consent, nobody learns even that
            assert httpx.post(f"{base_url}/participate/api/offer", json=offer).status_code == 403
            # The page shows when the system speaks (from the level of the audio it plays): not
            # before the participant has said something, then while the system answers.
            speaking = page.locator("#system-speaking")
            expect(speaking).to_have_attribute("data-speaking", "false")
            expect(speaking).to_have_text("The system is silent")
            expect(speaking).to_have_attribute("data-speaking", "true", timeout=CALL_S * 1000)
            expect(speaking).to_have_text("The system is speaking")
            _wait_for_recorded_audio(app.state.engine, data_root, "browser-1", CALL_S, timeout_s=2 * CALL_S)
            page.click("#end")
            expect(page.locator("#done-text")).to_contain_text("all systems", timeout=30_000)
        finally:
            context.close()

    engine = app.state.engine
    with session_scope(engine) as session:
        participant = session.exec(select(Participant).where(Participant.external_id == "browser-1")).one()
        conversation = session.exec(
            select(ConversationSession).where(ConversationSession.participant_id == participant.id)
        ).one()
        recording = session.exec(
            select(Recording).where(Recording.session_id == conversation.id, Recording.kind == "two-channel")
        ).one()
        assert conversation.status == "complete" and conversation.topic == "preparing for a hike"
        assert recording.channels == 2 and recording.system_channel == 1 and recording.sample_rate == 16000
        assert CALL_S - 2 < recording.duration_s < CALL_S + 20
        path = resolve(recording.path, data_root)
    audio, _ = soundfile.read(str(path), dtype="float32")
    timing = (path.parent / "timing.jsonl").read_text()
    assert '"event": "turn_end"' in timing
    # The mic clock kept the server's pace. Also the test's own health check: a saturated
    # machine delivers the mic in bursts (arrival jitter p99 was 1.2-2.8 ms on a quiet machine in
    # the shared WebRTC notes; this test measured 126 ms with the 2 cores at load 5). Over a call
    # this short, bursts of ~100 ms move the fitted slope by up to ~2 % (1.018 seen in a clean-clone
    # run with the cascade busy on both cores); a wrong clock (e.g. 44.1 vs 48 kHz) is off by 9 %.
    fit = clock_fit(path.parent / "timing.jsonl")
    print("mic clock vs server clock:", fit)
    assert abs(fit.slope - 1.0) < 0.03 and fit.residual_p99_ms < 250, f"machine too busy for a browser call: {fit}"

    # Channel 0: the fake mic file (looped) on the mic clock. Its utterance onsets, relative to
    # the first one found, must match the file's within 20 ms.
    mic_onsets = _onsets(audio[:, 0])
    assert len(mic_onsets) >= 3, mic_onsets
    errors_ms = _onset_errors_ms(mic_onsets, _onsets(source), len(source))
    print("channel-0 onset errors (ms):", errors_ms)
    assert max(errors_ms) <= 20.0, errors_ms

    # What the participant heard, uploaded by the page, with the session's measured playback delay.
    with session_scope(engine) as session:
        listener = session.exec(
            select(Recording).where(Recording.session_id == conversation.id, Recording.kind == "listener")
        ).one()
        assert listener.channels == 2 and listener.duration_s > CALL_S - 5
    offsets = json.loads((path.parent / "listener.json").read_text())
    print("listener offsets:", offsets)
    # later than the server placed it: loopback here measured 0.2-0.4 s with the cores busy
    assert offsets["playback_delay_s"] is not None and 0.0 < offsets["playback_delay_s"] < 1.0, offsets

    # Channel 1: the system answered after the participant spoke.
    system_active = np.flatnonzero(np.abs(audio[:, 1]) > 0.01)
    assert len(system_active) > 0.3 * 16000
    assert system_active[0] > np.flatnonzero(np.abs(audio[:, 0]) > 0.01)[0]


def _steps(page) -> tuple[list[str], list[str], str]:
    """The call page's step indicator: every step, those marked done, the current one."""
    steps = page.locator("#steps li")
    return (steps.all_inner_texts(), page.locator("#steps li.done").all_inner_texts(),
            page.locator("#steps li[aria-current=step]").inner_text())


def test_the_step_indicator_over_a_two_system_study(served, fake_mic, tmp_path):
    """After call 1 of 2 the page offers the next system, and the indicator says so: call 1 done,
    call 2 up next, not "Done"; "Done" only after call 2."""
    app, base_url, _ = served
    mic_path, _, _ = fake_mic
    every = ["Check", "Consent", "Call 1 of 2", "Call 2 of 2", "Done"]
    with sync_playwright() as playwright:
        context = _context(playwright, tmp_path, mic_path)
        try:
            page = context.pages[0] if context.pages else context.new_page()
            page.goto(f"{base_url}/participate/study/two-systems?pid=two-1")
            expect(page.locator("#steps li")).to_have_text(every)
            _pass_check(page)
            assert _steps(page) == (every, ["Check"], "Consent")
            page.click("#agree")
            expect(page.locator("#steps li[aria-current=step]")).to_have_text("Call 1 of 2: topic")
            # what the page knows of the systems: neutral labels, never a name or a kind
            known = page.evaluate("JSON.stringify(state.info)")
            assert '"next_systems":["system-' in known, known
            assert not any(word in known for word in ("alpha", "beta", "cascaded")), known
            for k in (1, 2):
                page.get_by_label("preparing for a hike").check()
                page.click("#topic-next")
                expect(page.locator("#steps li[aria-current=step]")).to_have_text(f"Call {k} of 2: before the call")
                if k == 1:  # the microphone is checked once, before the first call
                    page.click("#check-mic")
                expect(page.locator("#start")).to_be_enabled(timeout=15_000)
                page.click("#start")
                expect(page.locator("#steps li[aria-current=step]")).to_have_text(f"Call {k} of 2")
                expect(page.locator("#call-state")).to_have_text("Connected: talk now.", timeout=60_000)
                assert _steps(page) == (every, every[:k + 1], f"Call {k} of 2")
                page.click("#end")
                expect(page.locator("#step-done")).to_be_visible(timeout=30_000)
                if k == 1:
                    expect(page.locator("#next")).to_be_visible()
                    expect(page.locator("#done-text")).to_contain_text("You can now talk to the next system.")
                    assert _steps(page) == (["Check", "Consent", "Call 1 of 2", "Call 2 of 2: up next", "Done"],
                                            ["Check", "Consent", "Call 1 of 2"], "Call 2 of 2: up next")
                    page.click("#next")
                    expect(page.locator("#steps li[aria-current=step]")).to_have_text("Call 2 of 2: topic")
            expect(page.locator("#done-text")).to_contain_text("You have talked to all systems")
            expect(page.locator("#next")).to_be_hidden()
            assert _steps(page) == (every, every[:4], "Done")
        finally:
            context.close()


def test_denied_microphone_and_unknown_link(served, tmp_path):
    app, base_url, _ = served
    with sync_playwright() as playwright:
        context = _context(playwright, tmp_path)  # no fake device, no auto-accept: the mic is refused
        try:
            page = context.pages[0] if context.pages else context.new_page()
            page.goto(f"{base_url}/participate/study/browser?pid=browser-denied")
            # the check before consent finds it: what happened, and how to allow the microphone
            expect(page.locator("#check-result")).to_have_attribute("data-outcome", "failed", timeout=30_000)
            expect(page.locator("#error")).to_contain_text("Microphone access was denied")
            expect(page.locator("#error")).to_contain_text("then press Check again")
            expect(page.locator("#check-again")).to_be_visible()
            expect(page.locator("#step-consent")).to_be_hidden()
            page.goto(f"{base_url}/participate/study/no-such-study")
            expect(page.locator("#message")).to_contain_text("no study called")
        finally:
            context.close()
    response = httpx.get(f"{base_url}/participate/study/no-such-study")
    assert response.status_code == 404
    bad = httpx.post(f"{base_url}/participate/api/offer", json={"participant": "nobody", "system": "x",
                                                                 "topic": "y", "sdp": "x", "type": "offer"})
    # an unknown participant and a known one without its secret get the same answer (no oracle)
    assert bad.status_code == 403 and "secret given at consent" in bad.json()["error"]
