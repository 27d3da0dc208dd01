"""An annotator in a real headless Chromium: instructions, a practice trial, five trials (with an
artifact-control and an attention trial) interrupted by closing the page and opening the link
again, the completion code; the database then holds exactly what was clicked.

Audio really plays (Chromium with --autoplay-policy=no-user-gesture-required and its fake audio
output): the answer controls unlock only on the clips' `ended` events, so the test waits about
1.5 s per clip, as a person would.
"""

from __future__ import annotations

import math
import re
import secrets

import pytest
from playwright.sync_api import expect
from sqlmodel import select

from annotation.assignment import AssignmentSettings
from annotation.register import register_benchmark
from annotation.trials import create_annotators, get_study
from app import build_app
from storage.db import session_scope
from storage.demo import DEMO_STUDY
from storage.files import resolve
from storage.models import Annotator, Assignment, ClipPair, DialogueClip, Judgment, SkippedTrial
from tests.annotation.small_benchmark import write_small_benchmark
from tests.browser import chromium, serve

# What the annotator clicks in the trials, in order: choice, naturalness A and B, artifacts A and B.
CLICKS = [("A", 4, 2, 1, 3), ("B", 1, 5, 2, 2), ("A", 3, 3, 4, 1), ("B", 2, 4, 5, 5), ("A", 5, 1, 3, 4)]


@pytest.fixture(scope="module")
def audio_browser():
    with chromium("--autoplay-policy=no-user-gesture-required") as browser:
        yield browser


@pytest.fixture(scope="module")
def study_app(tmp_path_factory):
    root = tmp_path_factory.mktemp("annotate")
    bench = write_small_benchmark(root / "bench", pairs=3, controls=1)
    app = build_app(database_url=f"sqlite:///{root / 'app.db'}", data_root=root / "data",
                    researcher_password=secrets.token_urlsafe(12))
    settings = AssignmentSettings(judgments_per_pair=1, trials_per_annotator=4, attention_every=2)
    with session_scope(app.state.engine) as session:
        register_benchmark(session, bench, "listening", root / "data", settings, attention_checks=1, practice=1,
                           pause_s=1.0)
        [token] = create_annotators(session, get_study(session, "listening"), 1)
        # A second study, for Prolific arrivals: one trial each, Prolific's completion code and link.
        register_benchmark(
            session, bench, "prolific", root / "data", AssignmentSettings(judgments_per_pair=1, trials_per_annotator=1),
            attention_checks=0, practice=0,
            study_options={"prolific_study_id": "STUDY42", "completion_code": "C0MPL3TE",
                           "completion_url": "https://app.prolific.com/submissions/complete?cc={code}"},
        )
    with serve(app) as base_url:
        yield app, base_url, token


def one_annotator_study(app, name: str, tmp_path, pairs: int) -> str:
    """A study of `pairs` small pairs, each judged once, no practice or attention trials, and the
    token of its one annotator, who gets every pair."""
    bench = write_small_benchmark(tmp_path / "bench", pairs=pairs)
    with session_scope(app.state.engine) as session:
        register_benchmark(session, bench, name, app.state.data_root,
                           AssignmentSettings(judgments_per_pair=1, trials_per_annotator=pairs),
                           attention_checks=0, practice=0)
        [token] = create_annotators(session, get_study(session, name), 1)
    return token


def play_both(page):
    # Nothing can be answered before both clips were heard to the end.
    expect(page.get_by_label("Clip A", exact=True)).to_be_disabled()
    expect(page.get_by_label("clip B naturalness 3")).to_be_disabled()
    expect(page.locator("#submit")).to_be_disabled()
    for side in "AB":
        page.get_by_role("button", name=f"Play clip {side}").click()
        expect(page.locator(f"#status-{side}")).to_have_text("played to the end", timeout=15_000)
    expect(page.get_by_label("Clip A", exact=True)).to_be_enabled()


def answer(page, choice, rating_a, rating_b, artifact_a=None, artifact_b=None):
    page.get_by_label(f"Clip {choice}", exact=True).check()
    page.get_by_label(f"clip A naturalness {rating_a}").check()
    page.get_by_label(f"clip B naturalness {rating_b}").check()
    if artifact_a is not None:
        page.get_by_label(f"clip A artifacts {artifact_a}").check()
        page.get_by_label(f"clip B artifacts {artifact_b}").check()
    page.get_by_role("button", name="Submit answer").click()


def test_annotator_completes_trials_with_a_resume(audio_browser, study_app):
    app, base_url, token = study_app
    link = f"{base_url}/annotate/session?token={token}"
    context = audio_browser.new_context()
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.goto(link)
    expect(page.get_by_role("heading", name="Instructions")).to_be_visible()
    # The step indicator (static/steps.js, shared with the call page) marks where the annotator is.
    expect(page.locator("#steps li")).to_have_text(["Instructions", "Practice", "Trials", "Done"])
    expect(page.locator("#steps li[aria-current=step]")).to_have_text("Instructions")
    page.get_by_role("button", name="Start").click()

    # Practice: feedback, nothing stored.
    expect(page.locator("#trial-title")).to_have_text("Practice 1 of 1")
    play_both(page)
    answer(page, "A", 3, 3)
    expect(page.locator("#feedback")).to_contain_text("had the natural turn-taking")
    page.get_by_role("button", name="Next").click()

    clicked = {}  # trial id -> what was clicked
    artifact_trials = set()
    for n, (choice, ra, rb, aa, ab) in enumerate(CLICKS):
        if n == 2:
            # Close the tab in the middle of trial 3 (one clip heard), then open the link again.
            trial_before = page.locator("#trial").get_attribute("data-trial")
            page.get_by_role("button", name="Play clip A").click()
            context.close()
            context = audio_browser.new_context()
            page = context.new_page()
            page.set_default_timeout(30_000)
            page.goto(link)
            expect(page.locator("#progress-text")).to_have_text("2 of 5 trials done")
            page.get_by_role("button", name="Continue").click()
            expect(page.locator("#trial")).to_have_attribute("data-trial", trial_before)
        expect(page.locator("#trial-title")).to_have_text(f"Trial {n + 1} of 5")
        trial = int(page.locator("#trial").get_attribute("data-trial"))
        asks_artifact = page.locator("#artifacts").is_visible()
        play_both(page)
        if asks_artifact:
            artifact_trials.add(trial)
            answer(page, choice, ra, rb, aa, ab)
            clicked[trial] = (choice, ra, rb, aa, ab)
        else:
            answer(page, choice, ra, rb)
            clicked[trial] = (choice, ra, rb, None, None)
        expect(page.locator("#progress")).to_have_attribute("value", str(n + 1))
        # a short confirmation that the answer was stored
        expect(page.get_by_role("status")).to_have_text(f"Saved — trial {n + 1} of 5 done.")

    expect(page.get_by_role("heading", name="Thank you!")).to_be_visible()
    expect(page.locator("#steps li[aria-current=step]")).to_have_text("Done")
    expect(page.locator("#steps li:not(.done)")).to_have_count(1)  # every step before it is done
    code = page.locator("#code").inner_text()
    context.close()

    with session_scope(app.state.engine) as session:
        annotator = session.exec(select(Annotator).where(Annotator.external_id.is_(None))).one()
        assert annotator.completion_code == code and annotator.practice_done_at is not None
        rows = session.exec(
            select(Assignment, Judgment, ClipPair)
            .join(Judgment, (Judgment.annotator_id == Assignment.annotator_id)
                  & (Judgment.clip_pair_id == Assignment.clip_pair_id))
            .join(ClipPair, ClipPair.id == Assignment.clip_pair_id)
        ).all()
        stored = {
            a.id: (j.choice, j.rating_a, j.rating_b, j.artifact_rating_a, j.artifact_rating_b) for a, j, _ in rows
        }
        assert stored == clicked
        assert len(session.exec(select(Judgment)).all()) == 5
        kinds = sorted((p.is_artifact_control, p.is_attention_check, p.is_practice) for _, _, p in rows)
        assert kinds == [(False, False, False)] * 3 + [(False, True, False), (True, False, False)]
        assert artifact_trials == {a.id for a, _, p in rows if p.is_artifact_control}
        for a, j, pair in rows:
            assert j.natural_side == a.natural_side
            assert (j.plays_a, j.plays_b) == (1, 1)
            # each clip heard to its end, less the last step the page saw (timeupdate: every 250 ms or
            # more); the perturbed clip of a pair can be under 1 s long
            natural, perturbed = (session.get(DialogueClip, i) for i in (pair.natural_clip_id, pair.perturbed_clip_id))
            a_clip, b_clip = (natural, perturbed) if j.natural_side == "A" else (perturbed, natural)
            assert j.listened_s_a > a_clip.duration_s - 0.4 and j.listened_s_b > b_clip.duration_s - 0.4
            assert j.response_s > 2.0
        # The resumed trial: clip A was started before closing, but the judgment counts the new page's plays.


def _scale_rows_fit_on_one_line(page, width: int) -> None:
    """Every 1-5 rating row shows its five answers on one line inside the viewport."""
    rows = page.locator(".ratings-row:visible").all()
    assert len(rows) >= 2
    for row in rows:
        boxes = [label.bounding_box() for label in row.locator("label").all()]
        assert len(boxes) == 5
        assert max(b["y"] for b in boxes) - min(b["y"] for b in boxes) < 1, boxes  # no "1 2 3 / 4 5"
        assert boxes[-1]["x"] + boxes[-1]["width"] <= width, boxes
    assert page.evaluate("document.documentElement.scrollWidth") <= width  # nothing sideways


def test_a_prolific_participant_arrives_by_url_and_gets_the_code_and_the_way_back(audio_browser, study_app):
    """On a phone (360 px wide: Prolific participants often are)."""
    app, base_url, _ = study_app
    page = audio_browser.new_page(viewport={"width": 360, "height": 740}, is_mobile=True, has_touch=True)
    page.set_default_timeout(30_000)
    page.goto(f"{base_url}/annotate/session?study=prolific&PROLIFIC_PID=5f0a1b2c3d4e5f6a7b8c9d0e"
              "&STUDY_ID=STUDY42&SESSION_ID=sess1")
    page.get_by_role("button", name="Start").click()
    expect(page.locator("#trial-title")).to_have_text("Trial 1 of 1")
    play_both(page)
    _scale_rows_fit_on_one_line(page, 360)
    # The one trial is drawn at random among the study's pairs; one of them is an artifact control.
    control = page.locator("#artifacts").is_visible()
    answer(page, "B", 2, 5, *((1, 4) if control else ()))
    expect(page.get_by_role("heading", name="Thank you!")).to_be_visible()
    expect(page.get_by_role("status")).to_have_text("Saved — trial 1 of 1 done.")
    expect(page.locator("#code")).to_have_text("C0MPL3TE")
    expect(page.get_by_role("link", name="Return to Prolific")).to_have_attribute(
        "href", "https://app.prolific.com/submissions/complete?cc=C0MPL3TE")
    # A wrong STUDY_ID is told so on the page.
    page.goto(f"{base_url}/annotate/session?study=prolific&PROLIFIC_PID=abc&STUDY_ID=OTHER&SESSION_ID=s2")
    expect(page.get_by_role("alert")).to_have_text("STUDY_ID OTHER does not belong to study 'prolific'")
    page.close()
    with session_scope(app.state.engine) as session:
        [annotator] = session.exec(select(Annotator).where(Annotator.external_id == "5f0a1b2c3d4e5f6a7b8c9d0e")).all()
        [judgment] = session.exec(select(Judgment).where(Judgment.annotator_id == annotator.id)).all()
        assert (annotator.prolific_study_id, annotator.prolific_session_id) == ("STUDY42", "sess1")
        assert (judgment.choice, judgment.rating_a, judgment.rating_b) == ("B", 2, 5)
        assert (judgment.artifact_rating_a, judgment.artifact_rating_b) == ((1, 4) if control else (None, None))


def test_an_annotator_with_nothing_to_judge_is_told_so_and_gets_no_code(audio_browser, study_app):
    app, base_url, _ = study_app
    with session_scope(app.state.engine) as session:  # the demo study seeded at start-up has no pairs
        [token] = create_annotators(session, get_study(session, DEMO_STUDY), 1)
    page = audio_browser.new_page()
    page.goto(f"{base_url}/annotate/session?token={token}")
    expect(page.get_by_role("heading", name="No work right now")).to_be_visible()
    expect(page.get_by_text("there is no completion code")).to_be_visible()
    expect(page.get_by_role("heading", name="Thank you!")).to_be_hidden()
    expect(page.locator("#code")).to_have_text("")
    expect(page.locator("#no-work-prolific")).to_be_hidden()  # not a Prolific arrival
    page.close()


def test_a_trial_whose_clips_are_gone_says_so_and_is_skipped(audio_browser, study_app, tmp_path):
    app, base_url, _ = study_app
    token = one_annotator_study(app, "broken", tmp_path, pairs=2)
    with session_scope(app.state.engine) as session:
        study_id = get_study(session, "broken").id
        for clip in session.exec(select(DialogueClip).where(DialogueClip.study_id == study_id)).all():
            resolve(clip.audio_path, app.state.data_root).unlink()  # lost on the server
    page = audio_browser.new_page()
    page.set_default_timeout(30_000)
    page.goto(f"{base_url}/annotate/session?token={token}")
    expect(page.locator("#practice-note")).to_be_hidden()  # this study has no practice: none promised
    page.get_by_role("button", name="Start").click()
    for k in range(2):  # the player says so as soon as it cannot load a clip; skipped trials do not count
        expect(page.locator("#trial-title")).to_have_text("Trial 1 of 2")
        expect(page.locator("#clip-problem-text")).to_have_text(re.compile(
            r"^Clip [AB] of this trial cannot be played: its audio file is missing on the server\. Skip this "
            r"trial; it will be reported\.$"))
        expect(page.get_by_role("button", name="Play clip A")).to_be_disabled()
        skip = page.get_by_role("button", name="Skip this trial")
        if k == 0:
            # The skipped trial asked for its clips before its message showed; a clip asked for after
            # the click is the next trial's, so the page shows that trial when the next round checks
            # it (a loaded machine could otherwise still be showing the one just skipped).
            with page.expect_response(lambda r: "/api/annotate/audio/" in r.url):
                skip.click()
        else:
            skip.click()
    # both pairs skipped, nothing judged: no work, no code
    expect(page.get_by_role("heading", name="No work right now")).to_be_visible()
    page.close()
    with session_scope(app.state.engine) as session:
        annotator = session.exec(select(Annotator).where(Annotator.study_id == study_id)).one()
        skipped = session.exec(select(SkippedTrial).where(SkippedTrial.annotator_id == annotator.id)).all()
        assert len(skipped) == 2 and all(re.match(r"clip ([AB]): clip \1 of this trial cannot be played", s.reason)
                                         for s in skipped)
        assert annotator.completion_code is None


def test_a_jump_to_the_end_of_a_clip_is_not_heard(audio_browser, study_app, tmp_path):
    """Only time played counts as heard: a clip jumped through to its end must be played again;
    played from the start, it is heard (the page's heard time, which unlocks the questions)."""
    app, base_url, _ = study_app
    token = one_annotator_study(app, "seeking", tmp_path, pairs=1)
    page = audio_browser.new_page()
    page.set_default_timeout(30_000)
    try:
        page.goto(f"{base_url}/annotate/session?token={token}")
        page.get_by_role("button", name="Start").click()
        expect(page.locator("#trial-title")).to_have_text("Trial 1 of 1")
        duration = page.evaluate("current.durations.A")
        page.get_by_label("Position in clip A").fill(str(round(0.9 * duration, 1)))  # jump to 90 %
        page.get_by_role("button", name="Play clip A").click()
        expect(page.locator("#status-A")).to_have_text(re.compile(r"^heard \d+ of \d+ s: play the parts you skipped$"))
        expect(page.get_by_label("Clip A", exact=True)).to_be_disabled()
        page.get_by_role("button", name="Play clip A").click()  # from the start, to the end
        expect(page.locator("#status-A")).to_have_text("played to the end")
    finally:
        page.close()


def test_submit_with_a_question_left_open_says_which_and_stores_nothing(audio_browser, study_app, tmp_path):
    app, base_url, _ = study_app
    token = one_annotator_study(app, "unanswered", tmp_path, pairs=1)
    page = audio_browser.new_page()
    page.set_default_timeout(30_000)
    try:
        page.goto(f"{base_url}/annotate/session?token={token}")
        page.get_by_role("button", name="Start").click()
        expect(page.locator("#trial-title")).to_have_text("Trial 1 of 1")
        play_both(page)
        page.get_by_label("Clip A", exact=True).check()
        page.get_by_label("clip A naturalness 4").check()
        page.get_by_role("button", name="Submit answer").click()
        expect(page.locator("#unanswered")).to_have_text("Not sent yet: please answer “clip B naturalness”.")
        expect(page.get_by_label("clip B naturalness 1")).to_be_focused()  # where to answer it
        expect(page.get_by_role("radiogroup", name="Clip B naturalness")).to_have_attribute("aria-invalid", "true")
        expect(page.locator("#trial-title")).to_have_text("Trial 1 of 1")  # still on the trial
        with session_scope(app.state.engine) as session:
            study_id = get_study(session, "unanswered").id
            annotator = session.exec(select(Annotator).where(Annotator.study_id == study_id)).one()
            assert session.exec(select(Judgment).where(Judgment.annotator_id == annotator.id)).all() == []
        # answered: the message goes, and the same button sends the answer
        page.get_by_label("clip B naturalness 2").check()
        expect(page.locator("#unanswered")).to_be_hidden()
        page.get_by_role("button", name="Submit answer").click()
        expect(page.get_by_role("heading", name="Thank you!")).to_be_visible()
    finally:
        page.close()
    with session_scope(app.state.engine) as session:
        [judgment] = session.exec(select(Judgment).where(Judgment.annotator_id == annotator.id)).all()
        assert (judgment.choice, judgment.rating_a, judgment.rating_b) == ("A", 4, 2)


def test_the_instructions_and_the_overview_state_the_clips_lengths(audio_browser, study_app, tmp_path):
    """The lengths told are the study's clips' (shortest and longest, whole seconds around them),
    on the listening page and on the annotator area's overview; the overview lists studies with
    clips to judge, never a study's conversation topics."""
    app, base_url, _ = study_app
    token = one_annotator_study(app, "lengths", tmp_path, pairs=2)
    with session_scope(app.state.engine) as session:
        study = get_study(session, "lengths")
        lengths = session.exec(select(DialogueClip.duration_s).where(DialogueClip.study_id == study.id)).all()
        judged = select(ClipPair).where(ClipPair.study_id == study.id, ClipPair.is_practice.is_(False))
        pairs = len(session.exec(judged).all())
        demo = get_study(session, DEMO_STUDY)
        demo_topics = demo.config["topics"]
    shortest, longest = math.floor(min(lengths)), math.ceil(max(lengths))
    assert shortest < longest  # natural and late-response clips differ: a range, not one figure
    page = audio_browser.new_page()
    try:
        page.goto(f"{base_url}/annotate/session?token={token}")
        expect(page.locator("#trial-time")).to_contain_text(f"two clips of {shortest} to {longest} seconds each")
        expect(page.locator("#progress-text")).to_contain_text(" trials done")
        trials = int(page.locator("#progress-text").inner_text().split(" of ")[1].split()[0])
        page.goto(f"{base_url}/annotate/")
        heading = page.get_by_role("heading", name=study.title or study.name, exact=True)
        expect(heading).to_be_visible()
        # what an annotator signs up for: the trials their link gives, not the study's pairs
        expect(heading.locator("xpath=following-sibling::p[1]")).to_have_text(
            f"Up to {trials} trial{'s' if trials != 1 else ''} for each annotator; in each you compare two clips of "
            f"{shortest} to {longest} seconds.")
        assert trials <= pairs
        # the seeded study has no clips to judge: not listed
        expect(page.get_by_role("heading", name=demo.title or demo.name, exact=True)).to_have_count(0)
        shown = page.locator("body").inner_text()
        assert demo_topics and not any(topic in shown for topic in demo_topics), shown
    finally:
        page.close()
