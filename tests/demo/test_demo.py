"""The real demo, built from a fresh data root by `python -m demo build` (what `make run` runs):
speech from the packaged voices, clip pairs by `annotation build-pairs`, a headless call of each
embedded system. Then, in a real browser on that data root: an annotator of the demo does the
practice and one trial with the keyboard only, hearing clips whose transcription by the packaged
ASR has words; the researcher's demo views are drawn from the calls' real audio.

Screenshots of the trial page and the researcher's demo views go to the test's folder, or to
docs/ with TURNTAKING_UPDATE_DOCS=1 (the call page's: tests/studies/test_first_call.py).

The converted LLM is cached across test runs (TURNTAKING_MODELS, as in tests/studies); the data
root and the database are new.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile
from playwright.sync_api import expect
from sqlmodel import select

from analysis.dashboard import RESEARCHER_USER
from app import build_app
from demo.build import DEMO_LABEL
from demo.readme import README, pairs_markdown, readme_block, with_pairs
from speech.pipeline import load_conversation
from storage.db import session_scope
from storage.demo import DEMO_STUDY
from storage.files import resolve
from storage.models import (
    Annotator,
    ClipPair,
    ConversationSession,
    DialogueClip,
    DialogueSystem,
    Judgment,
    Participant,
    Recording,
    Study,
)
from tests.annotation.test_annotator_browser import audio_browser  # noqa: F401  (pytest fixture)
from tests.browser import serve

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PASSWORD = secrets.token_urlsafe(12)
SLOW_MS = 120_000
MODELS = os.environ.get("TURNTAKING_MODELS") or str(Path(tempfile.gettempdir()) / "turntaking-test-models")


def cli(*args, data_root: Path, timeout=900):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "TURNTAKING_BASE_URL")}
    env.update(TURNTAKING_MODELS=MODELS, HF_HUB_OFFLINE="1")
    return subprocess.run([sys.executable, "-m", *map(str, args), "--data-root", str(data_root)], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout, env=env)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(data root, build summary, seconds the first build took)."""
    data_root = tmp_path_factory.mktemp("fresh") / "data"
    started = time.monotonic()
    done = cli("demo", "build", data_root=data_root)
    seconds = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    print(f"demo built from a fresh data root in {seconds:.0f} s:\n{done.stdout}")
    return data_root, json.loads(done.stdout.strip().splitlines()[-1]), seconds


@pytest.fixture(scope="module")
def served(built):
    data_root = built[0]
    app = build_app(data_root=data_root, researcher_password=PASSWORD)
    with serve(app) as base_url:
        yield app, base_url
    app.state.engine.dispose()


def shot(page, name: str, tmp_path: Path) -> Path:
    target = DOCS / name if os.environ.get("TURNTAKING_UPDATE_DOCS") == "1" else tmp_path / name
    page.screenshot(path=str(target), full_page=True)
    assert target.stat().st_size > 10_000
    return target


def test_the_build_fills_the_demo_study_with_speech_pairs_and_calls(built, served):
    data_root, summary, seconds = built
    app, _ = served
    assert summary["study"] == DEMO_STUDY and len(summary["calls"]) == 3
    # the build's pair counts, each named for what it counts
    assert summary["clip_pairs"] == {"formal": 9, "artifact_control": 9, "attention": 2, "practice": 1, "all": 21}
    with session_scope(app.state.engine) as session:
        study = session.exec(select(Study).where(Study.name == DEMO_STUDY)).one()
        assert study.config["demo_data"] == DEMO_LABEL  # clearly marked
        pairs = session.exec(select(ClipPair).where(ClipPair.study_id == study.id)).all()
        formal = [p for p in pairs if not (p.is_artifact_control or p.is_attention_check or p.is_practice)]
        assert {p.perturbation for p in formal} == {"late_response", "early_entry", "hold_instead_of_shift",
                                                    "shift_instead_of_hold", "excessive_backchannel"}
        assert sum(p.is_practice for p in pairs) == 1 and sum(p.is_attention_check for p in pairs) == 2
        assert sum(p.is_artifact_control for p in pairs) == len(formal)
        for pair in pairs:  # every clip an annotator can get has its audio
            for clip_id in (pair.natural_clip_id, pair.perturbed_clip_id):
                clip = session.get(DialogueClip, clip_id)
                assert resolve(clip.audio_path, data_root).is_file()
        for pair in formal:  # the demo study's clip length, 10-15 s (a hold instead of shift cuts
            # a turn out of the perturbed clip; attention and practice pairs add a 4 s pause)
            natural = session.get(DialogueClip, pair.natural_clip_id)
            assert 9.95 <= natural.duration_s <= 15.05, natural.audio_path
        # one complete call of each embedded system, by a scripted demo caller, with its recording
        calls = session.exec(select(ConversationSession, DialogueSystem, Participant, Recording)
                             .join(DialogueSystem).join(Participant)
                             .join(Recording, Recording.session_id == ConversationSession.id)).all()
        assert sorted(system.name for _, system, _, _ in calls) == ["cascade-backchannel", "cascaded", "predictive"]
        for conversation, _, participant, recording in calls:
            assert conversation.status == "complete" and participant.external_id.startswith("demo-caller-")
            assert recording.channels == 2 and recording.system_channel == 1 and recording.duration_s > 20
            assert (data_root / f"sessions/{conversation.id}/timing.jsonl").is_file()
    # both sides of each call speak: the caller's lines and the system's replies have words
    for _, _, _, recording in calls:
        conversation = load_conversation(resolve(recording.path, data_root), vad="silero")
        assert len(conversation.words[0]) >= 10 and len(conversation.words[1]) >= 2, recording.path
        # and the system's replies do not clip: their peak is below -1 dBFS
        audio, _ = soundfile.read(str(resolve(recording.path, data_root)), dtype="float32")
        assert 20 * np.log10(np.abs(audio[:, recording.system_channel]).max()) < -1.0, recording.path
    # `make run` runs the build at every start: once built, it returns at once
    again_started = time.monotonic()
    again = cli("demo", "build", data_root=data_root)
    again_s = time.monotonic() - again_started
    assert again.returncode == 0 and json.loads(again.stdout)["skipped"] == "the demo is built already"
    print(f"first build {seconds:.0f} s; a second run {again_s:.1f} s")
    assert again_s < 30


def test_the_readme_states_the_pair_counts_the_build_makes(built, tmp_path):
    data_root, summary, _ = built
    assert readme_block(README.read_text()) == pairs_markdown(summary["clip_pairs"])
    # `python -m demo readme` writes that block from the built demo: given a copy whose block is
    # stale, it makes it the checkout's README again, and touches nothing else
    stale = tmp_path / "README.md"
    stale.write_text(with_pairs(README.read_text(), {key: 0 for key in summary["clip_pairs"]}))
    assert stale.read_text() != README.read_text()
    done = cli("demo", "readme", "--readme", stale, data_root=data_root)
    assert done.returncode == 0, done.stderr
    assert stale.read_text() == README.read_text()


def test_the_readme_block_is_written_only_from_a_built_demo(tmp_path):
    copy = tmp_path / "README.md"
    copy.write_text(README.read_text())
    done = cli("demo", "readme", "--readme", copy, data_root=tmp_path / "empty")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == "error: the demo is not built in this database: run `python -m demo build` first\n"
    assert copy.read_text() == README.read_text()


def keyboard_trial(page, choice_key: str, rating_a_steps: int, rating_b_steps: int, artifacts=(0, 0)):
    """Play both clips with A and B, then answer with the keyboard only: the focus is on the first
    choice when the questions unlock; Space chooses clip A or the right arrow clip B; Tab and the
    right arrow pick each rating (from 1); Enter submits."""
    expect(page.locator("#unlock")).to_have_text("The questions unlock once you have heard both clips to the end.")
    # Played at 4x: what is tested is the keyboard and the heard-to-the-end accounting (which counts
    # played seconds at the element's rate), not listening in real time.
    page.evaluate("document.querySelectorAll('audio').forEach(a => { a.defaultPlaybackRate = 4; a.playbackRate = 4; })")
    for side in "AB":
        page.keyboard.press(side.lower())
        expect(page.locator(f"#play-{side}")).to_have_text(f"Pause clip {side}")
        expect(page.locator(f"#status-{side}")).to_have_text("played to the end", timeout=60_000)
    expect(page.locator("#unlock")).to_have_text("Both clips heard: answer the questions below.")
    expect(page.get_by_label("Clip A", exact=True)).to_be_focused()
    page.keyboard.press(choice_key)
    for steps in (rating_a_steps, rating_b_steps, *([a for a in artifacts] if artifacts != (0, 0) else [])):
        page.keyboard.press("Tab")
        page.keyboard.press("Space")
        for _ in range(steps):
            page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")


def test_an_annotator_of_the_demo_hears_speech_and_works_with_the_keyboard_only(
        built, served, audio_browser, tmp_path):  # noqa: F811
    data_root, _, _ = built
    app, base_url = served
    made = cli("annotation", "annotators", "--study", DEMO_STUDY, "--count", "1", data_root=data_root)
    assert made.returncode == 0 and made.stderr == ""  # pairs with audio and open slots: no warning
    link = made.stdout.strip().replace("http://localhost:7860", base_url)
    context = audio_browser.new_context(viewport={"width": 1100, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(30_000)
    try:
        page.goto(link)
        expect(page.get_by_role("heading", name="Instructions")).to_be_visible()
        expect(page.locator("#practice-note")).to_have_text("You start with a practice trial; it is not recorded.")
        # how long the work takes: the demo's clips are 10-15 s, so a trial is under a minute
        trial_time = page.locator("#trial-time").text_content()
        print(trial_time)
        assert trial_time.startswith("A trial takes about ") and "12 trials: about " in trial_time
        assert 35 <= int(trial_time.split("about ")[1].split(" ")[0]) <= 45
        expect(page.locator("#time-left")).to_have_text(re.compile(r"About \d+ minutes left"))
        expect(page.get_by_role("button", name="Start")).to_be_focused()
        page.keyboard.press("Enter")

        # Practice: a natural clip against the same with a 4 s silence; feedback, then Next.
        expect(page.locator("#trial-title")).to_have_text("Practice 1 of 1")
        keyboard_trial(page, "Space", 3, 1)
        expect(page.locator("#feedback")).to_contain_text("had the natural turn-taking")
        expect(page.get_by_role("button", name="Next")).to_be_focused()
        page.keyboard.press("Enter")

        expect(page.locator("#trial-title")).to_have_text("Trial 1 of 12")
        trial = int(page.locator("#trial").get_attribute("data-trial"))
        asks_artifacts = page.locator("#artifacts").is_visible()
        # Hear (fetch) clip A as the page does, and transcribe it with the packaged ASR.
        clip = page.request.get(f"{base_url}/api/annotate/audio/{trial}/A?token={link.split('token=')[1]}")
        assert clip.status == 200 and clip.headers["content-type"] == "audio/wav"
        (tmp_path / "clip.wav").write_bytes(clip.body())
        words = [w.text for channel in load_conversation(tmp_path / "clip.wav", vad="silero").words for w in channel]
        print("clip A of trial 1 says:", " ".join(words))
        assert len(words) >= 10
        keyboard_trial(page, "ArrowRight", 1, 3, artifacts=(0, 2) if asks_artifacts else (0, 0))
        expect(page.locator("#progress-text")).to_have_text("1 of 12 trials done", timeout=SLOW_MS)
        expect(page.locator("#trial-title")).to_have_text("Trial 2 of 12")
        shot(page, "screenshot-trial.png", tmp_path)
    finally:
        context.close()
    with session_scope(app.state.engine) as session:
        annotator = session.exec(select(Annotator).where(Annotator.study_id == session.exec(
            select(Study.id).where(Study.name == DEMO_STUDY)).one())).one()
        [judgment] = session.exec(select(Judgment).where(Judgment.annotator_id == annotator.id)).all()
        assert annotator.practice_done_at is not None
        # ArrowRight chose clip B (from A); ratings 1 + steps
        assert (judgment.choice, judgment.rating_a, judgment.rating_b) == ("B", 2, 4)
        if asks_artifacts:
            assert (judgment.artifact_rating_a, judgment.artifact_rating_b) == (1, 3)
        pair = session.get(ClipPair, judgment.clip_pair_id)
        natural, perturbed = (session.get(DialogueClip, i) for i in (pair.natural_clip_id, pair.perturbed_clip_id))
        a, b = (natural, perturbed) if judgment.natural_side == "A" else (perturbed, natural)
        # both clips heard to the end, no more than played
        assert 0.9 * a.duration_s < judgment.listened_s_a < a.duration_s + 2
        assert 0.9 * b.duration_s < judgment.listened_s_b < b.duration_s + 2


def test_the_researcher_sees_the_demo_computed_on_real_audio(built, served, audio_browser, tmp_path):  # noqa: F811
    _, base_url = served
    context = audio_browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(30_000)
    try:
        page.goto(f"{base_url}/analyze/")
        page.get_by_label("username").fill(RESEARCHER_USER)
        page.get_by_label("password").fill(PASSWORD)
        page.get_by_role("button", name="Login").click()
        expect(page.get_by_label("Study", exact=True)).to_have_value(DEMO_STUDY, timeout=SLOW_MS)
        page.get_by_role("tab", name="Study overview", exact=True).click()
        panel = page.get_by_role("tabpanel").filter(visible=True).last
        expect(panel.get_by_text(DEMO_LABEL)).to_be_visible(timeout=SLOW_MS)
        expect(panel.get_by_text("judgment slot(s) open for new annotators")).to_be_visible()
        # the annotator of the test before is real: counted, not "no real annotators"
        expect(panel.get_by_text("Real data added since: 0 real participants, 1 real annotator")).to_be_visible()
        expect(panel.get_by_text("Clip pairs: 9 formal (the ones analysed), 9 artifact controls, 2 attention "
                                 "checks, 1 practice: 21 in all")).to_be_visible()
        shot(page, "demo-overview.png", tmp_path)
        page.get_by_role("tab", name="Statistics per system", exact=True).click()
        panel = page.get_by_role("tabpanel").filter(visible=True).last
        plots = panel.locator(".js-plotly-plot")
        expect(plots.first).to_be_visible(timeout=SLOW_MS)
        assert plots.first.locator("g.trace").count() > 0
        # both Switchboard references, labelled, and which one is measured as the demo's calls are
        for label in ("Switchboard (word alignments)", "Switchboard (session pipeline)"):
            expect(panel.get_by_role("columnheader", name=label).first).to_be_visible()
        expect(panel.get_by_text("Switchboard (session pipeline) is the like-with-like comparison")).to_be_visible()
        shot(page, "demo-statistics.png", tmp_path)
        page.get_by_role("tab", name="Session", exact=True).click()
        panel = page.get_by_role("tabpanel").filter(visible=True).last
        expect(panel.locator(".js-plotly-plot")).to_be_visible(timeout=SLOW_MS)
        legend = panel.locator(".js-plotly-plot .legendtext").evaluate_all("nodes => nodes.map(n => n.textContent)")
        print("session legend:", legend)
        # the channels of a real call by who speaks on them
        assert {"participant waveform", "system waveform", "participant voice activity",
                "system voice activity"} <= set(legend), legend
        shot(page, "demo-session.png", tmp_path)
    finally:
        context.close()
