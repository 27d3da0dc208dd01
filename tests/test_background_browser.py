"""Background analysis in a real browser: the researcher area as the app serves it (background
analysis). A study whose results are not computed yet opens at once with what is ready and says
what is missing; the worker process started with the server computes the rest; the open view
then shows itself again, complete, without the researcher doing anything."""

from __future__ import annotations

import secrets

import torch
from fastapi import FastAPI
from playwright.sync_api import expect
from sqlmodel import select

from analysis import dashboard
from analysis.dashboard import RESEARCHER_USER
from analysis.demo_study import seed_demo_analysis
from analysis.study import latest_results
from judge.model import JudgeConfig, JudgeModel, save_checkpoint
from storage import db
from storage.db import session_scope
from storage.models import AnalysisRequest, Study
from tests.browser import log_in_researcher, serve
from tests.waiting import wait_until

PASSWORD = secrets.token_urlsafe(12)


def _passed(engine, study_name: str) -> bool:
    with session_scope(engine) as session:
        request = session.exec(select(AnalysisRequest).join(Study, AnalysisRequest.study_id == Study.id)
                               .where(Study.name == study_name)).first()
        return request is not None and request.finished_at is not None and request.worker is None


def test_a_view_opened_before_its_results_exist_completes_itself(browser, tmp_path):
    engine = db.make_engine(f"sqlite:///{tmp_path / 'app.db'}")
    db.init_db(engine)
    torch.manual_seed(0)
    checkpoint = tmp_path / "judge.pt"
    save_checkpoint(JudgeModel(JudgeConfig(hidden_size=16, head_hidden=32)), checkpoint)
    app = FastAPI()
    dashboard.mount(app, engine, tmp_path, PASSWORD, checkpoint=checkpoint, background=True)
    with session_scope(engine) as session:  # a study the starting worker queues (request_all) and passes
        session.add(Study(name="before-the-worker"))
    with serve(app) as url:
        # The study arrives after the worker started: nothing queues it until a view asks. (Its start
        # is seen by its pass over the study it found; under load it took longer than the seeding.)
        wait_until(lambda: _passed(engine, "before-the-worker"), timeout_s=120, what="the worker's first pass")
        with session_scope(engine) as session:
            study = session.exec(select(Study).where(Study.name == "before-the-worker")).one()
            session.delete(session.get(AnalysisRequest, study.id))
            session.flush()
            session.delete(study)
        with session_scope(engine) as session:
            seed_demo_analysis(session, tmp_path, sessions_per_system=2, seconds=45.0, per_type=2, annotators=4,
                               careless=1)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.set_default_timeout(30_000)
        log_in_researcher(page, url, PASSWORD, RESEARCHER_USER)
        expect(page.get_by_label("Study", exact=True)).to_have_value("demo", timeout=60_000)

        page.get_by_role("tab", name="Judge metrics", exact=True).click()
        panel = page.get_by_role("tabpanel").filter(visible=True).last
        expect(panel.get_by_text("Partial results")).to_be_visible(timeout=10_000)
        assert latest_results(engine, "judge-metrics", ["session:1"]) == {}  # nothing computed in the request

        # The worker computes; the open view shows itself again, with its plots and no warning.
        expect(panel.get_by_text("Partial results")).to_have_count(0, timeout=120_000)
        expect(panel.locator(".js-plotly-plot")).to_have_count(2, timeout=30_000)
        expect(panel.get_by_text("Judge:", exact=False).first).to_be_visible()
        expect(page.locator("#analysis-status")).not_to_contain_text("Computing")
        assert latest_results(engine, "judge-metrics", ["session:1"])
        context.close()
