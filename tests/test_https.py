"""The app over https, for participants on other computers: browsers give a page the microphone
only in a secure context (https, or localhost).

A test certificate for study.test (made here with openssl); Chromium reaches study.test at
127.0.0.1 (--host-resolver-rules) and accepts the self-made certificate
(--ignore-certificate-errors: the page stays a secure context). Over https a participant gets the
fake microphone and completes a call with the cascaded system; the same page over plain http says
it needs https and records nothing. The researcher's login cookies carry Secure over https. On the
command line: a half-given or mismatched certificate is one line and exit 2, a public address
without TLS prints a warning, and `--workers 2` puts HAProxy's TLS front before plain workers.
"""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np
import pytest
import soundfile
from playwright.sync_api import expect, sync_playwright
from sqlmodel import select

import app_workers
from app import build_app
from speech.audio import resample
from storage.db import session_scope
from storage.files import resolve
from storage.models import ConversationSession, Participant, Recording
from studies.config import apply_config, parse_config
from tests.browser import CHROMIUM, CHROMIUM_ARGS, free_port, serve
from tests.studies.conftest import espeak_16k
from tests.waiting import wait_until
from webguard.researcher_login import RESEARCHER_USER

ROOT = Path(__file__).resolve().parents[1]
HOST = "study.test"  # the certificate's name; Chromium maps it to 127.0.0.1
PASSWORD = "pw-over-https"
STUDY = "remote"
START_TIMEOUT_S = 300  # an app process's start (Gradio's import) on the suite's loaded machine


@dataclass(frozen=True)
class SelfSignedCertificate:
    cert: Path
    key: Path
    other_key: Path  # a key of no certificate here


@pytest.fixture(scope="module")
def certificate(tmp_path_factory) -> SelfSignedCertificate:
    work = tmp_path_factory.mktemp("tls")
    made = SelfSignedCertificate(work / "cert.pem", work / "key.pem", work / "other-key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={HOST}",
                    "-addext", f"subjectAltName=DNS:{HOST}", "-days", "2",
                    "-keyout", str(made.key), "-out", str(made.cert)], check=True, capture_output=True)
    subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                    "-out", str(made.other_key)], check=True, capture_output=True)
    return made


@dataclass(frozen=True)
class Served:
    app: object
    https_url: str  # https://study.test:PORT, as the browser reaches it
    http_url: str  # the same app, plain http, http://study.test:PORT2
    data_root: Path

    @staticmethod
    def local(url: str) -> str:
        """The URL by address, for clients that do not resolve study.test."""
        return url.replace(HOST, "127.0.0.1")


@pytest.fixture(scope="module")
def served(tmp_path_factory, certificate):
    """One app on a database with study `remote` (the cascaded system), served over https and,
    on a second port, over plain http (that server runs no start-up tasks: the first does)."""
    data_root = tmp_path_factory.mktemp("data")
    app = build_app(database_url=f"sqlite:///{data_root / 'app.db'}", data_root=data_root,
                    researcher_password=PASSWORD)
    with session_scope(app.state.engine) as session:
        # the call ends once the system has answered: any length counts here
        apply_config(session, parse_config({"name": STUDY, "title": "A call from elsewhere", "session_seconds": 60,
                                            "min_call_seconds": 0, "questionnaire": {},  # no questions after it
                                            "systems": [{"name": "cascaded", "kind": "cascaded"}]}))
    with serve(app, ssl_certfile=str(certificate.cert), ssl_keyfile=str(certificate.key)) as https_url, \
            serve(app, lifespan="off") as http_url:
        yield Served(app, https_url.replace("127.0.0.1", HOST), http_url.replace("127.0.0.1", HOST), data_root)


@pytest.fixture(scope="module")
def fake_mic(tmp_path_factory) -> Path:
    """48 kHz WAV for Chromium's fake microphone: two espeak-ng lines with pauses (it loops)."""
    work = tmp_path_factory.mktemp("mic")
    parts = [np.zeros(16000, dtype=np.float32)]
    for k, line in enumerate(["Hello, I would like to talk about hiking.", "What should I bring for a day hike?"]):
        parts += [espeak_16k(line, work / f"line{k}.wav"), np.zeros(4 * 16000, dtype=np.float32)]
    path = work / "mic.wav"
    soundfile.write(str(path), resample(np.concatenate(parts), 16000, 48000), 48000, subtype="PCM_16")
    return path


@pytest.fixture(scope="module")
def remote_browser(fake_mic):
    """Chromium that finds study.test at 127.0.0.1, takes the test certificate, and has a fake
    microphone that it gives without asking."""
    if not CHROMIUM.exists():
        raise RuntimeError(f"{CHROMIUM} not found: apt-get install -y chromium")
    args = [*CHROMIUM_ARGS, "--autoplay-policy=no-user-gesture-required",
            f"--host-resolver-rules=MAP {HOST} 127.0.0.1", "--ignore-certificate-errors",
            "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
            f"--use-file-for-fake-audio-capture={fake_mic}"]
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=args, headless=True)
        try:
            yield launched
        finally:
            launched.close()


def _participant(served: Served, pid: str):
    with session_scope(served.app.state.engine) as session:
        participant = session.exec(select(Participant).where(Participant.external_id == pid)).first()
        sessions = [] if participant is None else session.exec(
            select(ConversationSession).where(ConversationSession.participant_id == participant.id)).all()
        return participant, sessions


def _pass_connection_check(page) -> None:
    """The page's connection check before consent, where the page has one."""
    if page.locator("#step-check").count():
        expect(page.locator("#check-result")).to_have_attribute("data-outcome", "ok", timeout=60_000)


@pytest.mark.alone  # a real-time browser call, like tests/studies/test_browser_call.py
def test_a_call_over_https_gets_the_microphone(served, remote_browser, cascade_components):  # noqa: F811
    served.app.state.participant_calls.cascade_components({}, loaded=cascade_components)
    context = remote_browser.new_context()
    context.set_default_timeout(60_000)
    try:
        page = context.new_page()
        page.goto(f"{served.https_url}/participate/study/{STUDY}?pid=remote-1")
        assert page.evaluate("[location.protocol, window.isSecureContext]") == ["https:", True]
        _pass_connection_check(page)
        page.click("#agree")
        page.get_by_label("preparing for a hike").check()
        page.click("#topic-next")
        page.click("#check-mic")  # getUserMedia: refused outright on an insecure page
        expect(page.locator("#start")).to_be_enabled(timeout=15_000)
        page.click("#start")
        expect(page.locator("#call-state")).to_have_text("Connected: talk now.", timeout=60_000)
        # the system heard the participant and answered
        expect(page.locator("#system-speaking")).to_have_attribute("data-speaking", "true", timeout=40_000)
        page.click("#end")
        expect(page.locator("#done-text")).to_contain_text("all systems", timeout=30_000)
    finally:
        context.close()
    participant, sessions = _participant(served, "remote-1")
    assert participant is not None and [s.status for s in sessions] == ["complete"]
    with session_scope(served.app.state.engine) as session:
        recording = session.exec(select(Recording).where(Recording.session_id == sessions[0].id,
                                                         Recording.kind == "two-channel")).one()
        assert recording.channels == 2 and recording.system_channel == 1
    # the call is ended once the system speaks (2.9 s into the recording once): both channels hold sound
    audio, _ = soundfile.read(str(resolve(recording.path, served.data_root)), dtype="float32")
    assert len(audio) / 16000 > 2 and all(np.abs(audio[:, k]).max() > 0.01 for k in (0, 1))


def test_the_page_over_plain_http_says_it_needs_https_and_records_nothing(served, remote_browser):
    context = remote_browser.new_context()
    try:
        page = context.new_page()
        page.goto(f"{served.http_url}/participate/study/{STUDY}?pid=plain-1")
        assert page.evaluate("window.isSecureContext") is False
        expect(page.locator("#error")).to_contain_text("https")
        expect(page.locator("#agree")).to_be_hidden()
    finally:
        context.close()
    participant, sessions = _participant(served, "plain-1")
    assert participant is None and sessions == []


def _login(base_url: str) -> httpx.Response:
    with httpx.Client(verify=False, timeout=60) as client:  # the test certificate names study.test only
        return client.post(f"{base_url}/analyze/login", data={"username": RESEARCHER_USER, "password": PASSWORD})


def _cookie_has_secure(set_cookie: str) -> bool:
    return "secure" in [part.strip().lower() for part in set_cookie.split(";")[1:]]


def test_the_researcher_login_cookies_are_secure_over_https(served):
    over_https = _login(Served.local(served.https_url))
    assert over_https.status_code == 200, over_https.text
    cookies = over_https.headers.get_list("set-cookie")
    assert any(c.startswith("access-token-") for c in cookies), cookies
    assert cookies and all(_cookie_has_secure(c) for c in cookies), cookies
    # over plain http (this computer) Gradio's second login cookie stays without Secure, or the
    # browser would drop it
    over_http = _login(Served.local(served.http_url))
    assert over_http.status_code == 200 and not all(_cookie_has_secure(c) for c in over_http.headers.get_list("set-cookie"))


def _app_command(*args: str) -> list[str]:
    return [sys.executable, "app.py", *args]


def test_a_half_given_or_mismatched_certificate_is_one_line_and_exit_2(certificate):
    cases = [
        (["--tls-cert", str(certificate.cert)], "error: --tls-cert needs --tls-key too"),
        (["--tls-cert", str(certificate.cert), "--tls-key", str(certificate.other_key)],
         f"error: --tls-key {certificate.other_key} is not the private key of the certificate in --tls-cert"),
        (["--tls-cert", str(certificate.cert) + ".missing", "--tls-key", str(certificate.key)],
         f"error: cannot read --tls-cert {certificate.cert}.missing: No such file or directory"),
    ]
    for args, start in cases:
        done = subprocess.run(_app_command(*args), cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and done.stderr.startswith(start), (args, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr


class AppProcess:
    """`app.py ARGS` as a child process; its output lines are collected as they come."""

    def __init__(self, data_root: Path, *args: str):
        env = {**os.environ, "TURNTAKING_DATA": str(data_root), "TURNTAKING_RESEARCHER_PASSWORD": PASSWORD}
        self.process = subprocess.Popen(
            _app_command(*args, "--database-url", f"sqlite:///{data_root / 'app.db'}", "--no-model-preload",
                         "--no-background-analysis"),
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, pattern: str) -> re.Match:
        def found():
            assert self.process.poll() is None, "\n".join(self.lines)
            return next((m for line in list(self.lines) if (m := re.search(pattern, line))), None)
        return wait_until(found, timeout_s=START_TIMEOUT_S, what=f"a line matching {pattern!r}")

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=60)


def test_a_public_address_without_tls_is_warned_about(tmp_path):
    running = AppProcess(tmp_path, "--host", "0.0.0.0", "--port", str(free_port()))
    try:
        running.wait_for(r"^warning: listening on 0\.0\.0\.0:\d+ without TLS: participants' browsers will refuse "
                         r"the microphone \(give --tls-cert and --tls-key, or put a TLS proxy in front; "
                         r"see docs/deploy\.md\)$")
    finally:
        running.stop()


def test_two_workers_behind_a_tls_front(tmp_path, certificate):
    port = free_port()
    front = AppProcess(tmp_path, "--workers", "2", "--port", str(port),
                       "--tls-cert", str(certificate.cert), "--tls-key", str(certificate.key))
    try:
        front.wait_for(r"Researcher login: user 'researcher'")
        assert f"Turn-taking studies: https://localhost:{port}/" in front.lines
        assert not any(line.startswith("warning:") for line in front.lines), front.lines  # 127.0.0.1
        state_dir = Path(front.wait_for(r"config and stats socket in (\S+)\)")[1])
        pem = state_dir / "front.pem"
        assert stat.S_IMODE(pem.stat().st_mode) == 0o600
        assert pem.read_bytes() == certificate.cert.read_bytes() + certificate.key.read_bytes()
        with httpx.Client(verify=False, timeout=60) as client:
            page = client.get(f"https://127.0.0.1:{port}/")
            assert page.status_code == 200 and "Turn-taking studies" in page.text
            assert page.headers[app_workers.WORKER_HEADER] in ("w1", "w2")
            assert _cookie_has_secure(page.headers["set-cookie"])  # HAProxy's sticky cookie
        # the worker behind the front knows the browser came over https: its cookies carry Secure
        cookies = _login(f"https://127.0.0.1:{port}").headers.get_list("set-cookie")
        assert any(c.startswith("access-token-unsecure-") for c in cookies)
        assert all(_cookie_has_secure(c) for c in cookies), cookies
        # plain http on the https port gets no page: HAProxy closes the connection without a reply
        with pytest.raises(httpx.RemoteProtocolError):
            httpx.get(f"http://127.0.0.1:{port}/", timeout=30)
    finally:
        assert front.stop() == 0, "\n".join(front.lines)
    assert not pem.exists() and not state_dir.exists()

