"""The web app in a real browser: landing page, the two public areas, the researcher login, and
the corpus statistics of a real two-channel recording (espeak-ng speech, Silero, Whisper).

The app runs on a free localhost port against a fresh SQLite file; headless Debian Chromium
drives it. The analyze page with its results is saved as a screenshot: into the test's temporary
folder, or as docs/screenshot-app.png (the README's) when TURNTAKING_UPDATE_DOCS=1, so that a test
run leaves the checkout as it found it.
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import expect

from analysis.dashboard import RESEARCHER_USER
from app import AREAS, PASSWORD_ENV, ConfigError, build_app, resolve_researcher_password
from storage.demo import DEMO_STUDY, DEMO_SYSTEMS, DEMO_TOPICS
from studies.overview import study_overviews
from tests.browser import serve
from tests.rendered_speech import SAMPLE_RATE, Utterance, render_speech, speak
from turntaking.reference import PIPELINE_REFERENCE_FILE, REFERENCE_FILE, switchboard_reference

SCREENSHOT = Path(__file__).resolve().parent.parent / "docs" / "screenshot-app.png"
PASSWORD = secrets.token_urlsafe(12)
# Slow steps (first page load, statistics with model loading) get this long.
SLOW_MS = 120_000


@pytest.fixture(scope="module")
def served_app(tmp_path_factory):
    data_root = tmp_path_factory.mktemp("data")
    app = build_app(database_url=f"sqlite:///{data_root / 'app.db'}", data_root=data_root, researcher_password=PASSWORD)
    with serve(app) as base_url:
        yield app, base_url


@pytest.fixture(scope="module")
def base_url(served_app):
    return served_app[1]


@pytest.fixture()
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(30_000)
    yield page
    context.close()


def log_in(page, base_url, password):
    page.goto(f"{base_url}/analyze/")
    page.get_by_label("username").fill(RESEARCHER_USER)
    page.get_by_label("password").fill(password)
    page.get_by_role("button", name="Login").click()


def test_landing_page_links_the_three_areas(page, base_url):
    page.goto(base_url + "/")
    expect(page.get_by_role("heading", name="Turn-taking studies")).to_be_visible()
    hrefs = [link.get_attribute("href") for link in page.get_by_role("link").all()]
    assert hrefs == [f"/{path}/" for path, _, _ in AREAS]

    page.get_by_role("link", name="Participate").click()
    expect(page.get_by_role("heading", name="Participate", exact=True)).to_be_visible()
    assert page.url == f"{base_url}/participate/"


@pytest.mark.parametrize("area", ["participate", "annotate"])
def test_public_area_shows_the_demo_study(page, served_app, area):
    app, base_url = served_app
    # Start-up seeded the demo study into the empty database; the page reads it from there.
    [demo] = study_overviews(app.state.engine)
    assert demo.name == DEMO_STUDY
    assert demo.topics == list(DEMO_TOPICS)
    assert demo.systems == [(name, kind) for name, kind, _ in DEMO_SYSTEMS]

    page.goto(f"{base_url}/{area}/")
    expect(page.get_by_role("heading", name=area.capitalize(), exact=True)).to_be_visible()
    if area == "annotate":
        # Annotators judge clips blind and the topics are the participants' part: the page lists
        # only studies with clips to judge, and the seeded study has none yet.
        expect(page.get_by_text("No listening study has clips to judge yet.")).to_be_visible()
        expect(page.get_by_text("Dialogue systems")).to_have_count(0)
        expect(page.get_by_text("Topics")).to_have_count(0)
    else:  # participants see their topics and how many systems, under neutral labels in the study's order
        expect(page.get_by_role("heading", name=demo.title)).to_be_visible()
        for topic in DEMO_TOPICS:
            expect(page.get_by_text(topic, exact=True)).to_be_visible()
        expect(page.get_by_text("Dialogue systems", exact=True)).to_be_visible()
        for k in range(1, len(DEMO_SYSTEMS) + 1):
            expect(page.get_by_text(f"System {k}", exact=True)).to_be_visible()
    # never which systems are compared: no name, no kind anywhere on the public page
    shown = page.locator("body").inner_text()
    for name, kind, _ in DEMO_SYSTEMS:
        assert name not in shown and kind not in shown, (name, kind, shown)
    if area == "annotate":
        assert not any(topic in shown for topic in DEMO_TOPICS), shown
    # Gradio's footer (its "Use via API" link) is for developers: the public areas have none; the
    # researcher area keeps it, which shows this locator finds it where it is drawn.
    expect(page.locator("footer")).to_have_count(0)
    expect(page.get_by_text("Use via API")).to_have_count(0)


def test_the_researcher_area_keeps_gradios_footer(page, base_url):
    log_in(page, base_url, PASSWORD)
    expect(page.get_by_text("Use via API")).to_be_visible()


def test_the_icon_and_the_shared_stylesheet_are_served(base_url):
    with httpx.Client(base_url=base_url) as client:
        icon = client.get("/favicon.ico")
        assert icon.status_code == 200 and icon.headers["content-type"] == "image/x-icon"
        assert icon.content[:4] == b"\x00\x00\x01\x00"  # an ICO file
        css = client.get("/static/app.css")
        assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
        assert ":focus-visible" in css.text
        # the plain pages use it
        for path in ("/", "/annotate/session", "/participate/study/demo"):
            assert '<link rel="stylesheet" href="/static/app.css">' in client.get(path).text.replace("'", '"')
        script = client.get("/static/steps.js")
        assert script.status_code == 200 and "function renderStepList" in script.text
        for path in ("/annotate/session", "/participate/study/demo"):  # both draw their steps with it
            assert '<script src="/static/steps.js"></script>' in client.get(path).text
        script = client.get("/static/withdrawn.js")
        assert script.status_code == 200 and "function fillWithdrawn" in script.text
        for path in ("/annotate/session", "/participate/study/demo", "/participate/withdraw/demo"):
            assert '<script src="/static/withdrawn.js"></script>' in client.get(path).text


def test_the_call_page_shows_its_steps(page, base_url):
    page.goto(f"{base_url}/participate/study/demo?pid=steps-check")
    # the browser and connection check, consent, one step per call of the demo's three systems, the
    # default questionnaire's questions after the last call (a ranking of the three), done
    expect(page.locator("#steps li")).to_have_text(["Check", "Consent", "Call 1 of 3", "Call 2 of 3", "Call 3 of 3",
                                                    "Last questions", "Done"])
    expect(page.locator("#steps li[aria-current=step]")).to_have_text("Check")


def test_analyze_refuses_requests_without_login(base_url):
    with httpx.Client(base_url=base_url) as client:
        assert client.get("/analyze/config").status_code == 401
        # The data API is closed too, not only the page.
        assert client.get("/analyze/gradio_api/info").status_code == 401
        assert client.post("/analyze/login", data={"username": RESEARCHER_USER, "password": "wrong"}).status_code == 400
        # The public areas need no login.
        assert client.get("/participate/config").status_code == 200
        assert client.get("/annotate/config").status_code == 200


def test_analyze_login_page_refuses_a_wrong_password(page, base_url, caplog):
    caplog.set_level("WARNING", logger="webguard.login_throttle")
    page.goto(f"{base_url}/analyze/")
    expect(page.get_by_text("Researcher area: log in with your account (or the shared password as 'researcher').")).to_be_visible()
    expect(page.get_by_role("tab", name="Corpus statistics")).to_have_count(0)

    log_in(page, base_url, PASSWORD + "x")
    expect(page.get_by_text(re.compile("Incorrect credentials", re.IGNORECASE))).to_be_visible()
    expect(page.get_by_role("tab", name="Corpus statistics")).to_have_count(0)
    # the log names the user the page sent (in a multipart form), not an empty name
    failed = [r.getMessage() for r in caplog.records if r.getMessage().startswith("failed researcher login")]
    assert failed and f"user '{RESEARCHER_USER}' from 127.0.0.1" in failed[-1], failed


@pytest.fixture(scope="module")
def one_gap_recording(tmp_path_factory) -> Path:
    """6.0 s, two channels: A speaks, 0.75 s of silence, then B answers. One gap, no overlap."""
    first, second = ("hello there how are you today", "en-us"), ("i am fine thank you very much", "en-us+f3")
    a_end = 0.5 + len(speak(*first)) / SAMPLE_RATE
    speech = render_speech(
        [Utterance(0, 0.5, first[0], first[1]), Utterance(1, round(a_end + 0.75, 3), second[0], second[1])],
        duration=6.0,
    )
    return speech.write(tmp_path_factory.mktemp("upload") / "one-gap.wav")


def table_row(page, measure: str) -> list[str]:
    """The cells of the statistics table's row `measure` (Gradio's grid of ARIA rows)."""
    row = page.get_by_role("row").filter(has=page.get_by_text(measure, exact=True)).first
    return [cell.strip() for cell in row.get_by_role("gridcell").all_inner_texts()]


def fonts_drawing(page, selector: str) -> list[str]:
    """The fonts Chromium drew the first element matching `selector` with (DevTools protocol)."""
    cdp = page.context.new_cdp_session(page)
    root = cdp.send("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
    node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
    cdp.send("CSS.enable")
    return [f["postScriptName"] for f in cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]]


def test_researcher_computes_corpus_statistics_of_a_recording(page, base_url, one_gap_recording, tmp_path):
    log_in(page, base_url, PASSWORD)
    expect(page.get_by_role("tab", name="Corpus statistics")).to_be_visible()
    expect(page.get_by_role("button", name="Compute statistics")).to_be_visible()
    # before an upload, no empty table with placeholder headers "1 2 3"
    expect(page.get_by_role("columnheader", name="1", exact=True)).to_have_count(0)
    expect(page.get_by_role("columnheader", name="measure")).to_have_count(0)

    page.locator("input[type=file]").first.set_input_files(str(one_gap_recording))
    # the uploaded file's row, by its cell's accessible name: Gradio may render the name's stem and
    # extension as separate text ("one-gap" ".wav"), which no text locator of the whole name matches
    expect(page.get_by_role("cell", name="one-gap.wav")).to_be_visible(timeout=SLOW_MS)
    page.get_by_role("button", name="Compute statistics").click()
    expect(page.get_by_text("gap /min", exact=True)).to_be_visible(timeout=SLOW_MS)

    # One gap and no overlap in 6.0 s: 10 gaps and 0 overlaps per minute; speaker B takes the gap.
    assert table_row(page, "gap /min")[:4] == ["gap /min", "10", "0", "10"]
    assert table_row(page, "overlap /min")[:4] == ["overlap /min", "0", "0", "0"]
    # The two Switchboard columns are the packaged reference tables, each labelled, and the tab
    # says which one was measured as this recording was.
    for column, file in ((4, REFERENCE_FILE), (5, PIPELINE_REFERENCE_FILE)):
        assert float(table_row(page, "gap /min")[column]) == round(switchboard_reference(file=file)["per_minute"]["gap"], 2)
    for label in ("Switchboard (word alignments)", "Switchboard (session pipeline)"):
        expect(page.get_by_role("columnheader", name=label)).to_be_visible()
    expect(page.get_by_text("Switchboard (session pipeline) is the like-with-like comparison")).to_be_visible()
    expect(page.locator(".js-plotly-plot").first).to_be_visible()

    # Each heading and button is drawn in one font (Gradio's packaged SemiBold has a few glyphs:
    # the first letter came out in it, the rest in a fallback font).
    for selector in ("h1", "button.primary", "button[role=tab]"):
        fonts = fonts_drawing(page, selector)
        assert len(fonts) == 1, (selector, fonts)

    target = SCREENSHOT if os.environ.get("TURNTAKING_UPDATE_DOCS") == "1" else tmp_path / SCREENSHOT.name
    page.screenshot(path=str(target), full_page=True)
    assert target.stat().st_size > 10_000


def test_a_bad_upload_is_refused_by_its_name_without_a_traceback(page, base_url, tmp_path, capfd):
    log_in(page, base_url, PASSWORD)
    expect(page.get_by_role("tab", name="Corpus statistics")).to_be_visible()
    not_audio = tmp_path / "notes.wav"
    not_audio.write_text("these are my notes, not a recording")
    mono = tmp_path / "mono.wav"
    render_speech([Utterance(0, 0.2, "hello there")], duration=1.5, channels=1).write(mono)
    for upload, said in ((not_audio, "cannot read “notes.wav” as audio"),
                         (mono, "“mono.wav” has 1 channel; two-channel audio with one speaker per channel is needed")):
        page.goto(f"{base_url}/analyze/")  # a fresh upload box (logged in still)
        page.locator("input[type=file]").first.set_input_files(str(upload))
        expect(page.get_by_role("cell", name=upload.name)).to_be_visible(timeout=SLOW_MS)
        page.get_by_role("button", name="Compute statistics").click()
        toast = page.get_by_text(said)
        expect(toast).to_be_visible(timeout=SLOW_MS)
        shown = toast.inner_text()
        assert "/tmp" not in shown and "--vad" not in shown and "gradio" not in shown, shown
    assert "Traceback" not in capfd.readouterr().err


def test_researcher_password_comes_from_the_environment_or_is_random(monkeypatch):
    monkeypatch.setenv(PASSWORD_ENV, "from-the-env")
    assert resolve_researcher_password() == ("from-the-env", False)
    assert resolve_researcher_password("given") == ("given", False)

    monkeypatch.delenv(PASSWORD_ENV)
    first, generated = resolve_researcher_password()
    second, _ = resolve_researcher_password()
    assert generated and first != second and len(first) >= 16

    monkeypatch.setenv(PASSWORD_ENV, "")
    with pytest.raises(ConfigError, match=f"{PASSWORD_ENV} is set but empty"):
        resolve_researcher_password()


def test_start_up_refuses_an_unusable_database_url_in_one_line(tmp_path):
    result = subprocess.run(
        [sys.executable, "app.py", "--database-url", "mysql://nobody@localhost/x"],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "TURNTAKING_DATA": str(tmp_path), "HF_HUB_OFFLINE": "1"},
    )
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: unsupported database 'mysql'")


def test_links_name_the_machine_when_the_app_listens_on_every_address():
    import socket

    from app import default_base_url

    assert default_base_url("127.0.0.1", 7860, tls=False) == "http://localhost:7860"
    on_all = default_base_url("0.0.0.0", 7860, tls=True)
    assert "localhost" not in on_all and on_all.startswith("https://") and on_all.endswith(":7860")
    assert on_all[len("https://"):-len(":7860")] in (socket.getfqdn(), socket.gethostname())
    assert default_base_url("::", 80, tls=False) == default_base_url("0.0.0.0", 80, tls=False)
    assert default_base_url("2001:db8::5", 80, tls=False) == "http://[2001:db8::5]:80"
