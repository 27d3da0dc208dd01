"""Background analysis in a real browser: the researcher area as the app serves it (background
analysis). A study whose results are not computed yet opens at once with what is ready and says
what is missing, computing nothing in the request; the worker process (started once the view is
open) computes the rest; the open view then shows itself again, complete, without the researcher
doing anything."""

from __future__ import annotations

import secrets

import torch
from fastapi import FastAPI
from playwright.sync_api import expect

from analysis import dashboard
from analysis.background import WorkerProcess
from analysis.dashboard import RESEARCHER_USER
from analysis.demo_study import seed_demo_analysis
from analysis.study import latest_results
from judge.model import JudgeConfig, JudgeModel, save_checkpoint
from storage import db
from storage.db import session_scope
from tests.browser import log_in_researcher, serve

PASSWORD = secrets.token_urlsafe(12)


def test_a_view_opened_before_its_results_exist_completes_itself(browser, tmp_path):
    engine = db.make_engine(f"sqlite:///{tmp_path / 'app.db'}")
    db.init_db(engine)
    torch.manual_seed(0)
    checkpoint = tmp_path / "judge.pt"
    save_checkpoint(JudgeModel(JudgeConfig(hidden_size=16, head_hidden=32)), checkpoint)
    app = FastAPI()
    # The worker starts once the view was opened (the page's overview, shown on load, has queued
    # the study by then): until it does, a result could only be computed by a request.
    dashboard.mount(app, engine, tmp_path, PASSWORD, checkpoint=checkpoint, background=True, start_worker=False)
    worker = WorkerProcess(engine.url.render_as_string(hide_password=False), tmp_path, checkpoint)
    with session_scope(engine) as session:
        seed_demo_analysis(session, tmp_path, sessions_per_system=2, seconds=45.0, per_type=2, annotators=4,
                           careless=1)
    with serve(app) as url:
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            page = context.new_page()
            page.set_default_timeout(30_000)
            log_in_researcher(page, url, PASSWORD, RESEARCHER_USER)
            expect(page.get_by_label("Study", exact=True)).to_have_value("demo", timeout=60_000)

            page.get_by_role("tab", name="Judge metrics", exact=True).click()
            panel = page.get_by_role("tabpanel").filter(visible=True).last
            expect(panel.get_by_text("Partial results")).to_be_visible(timeout=10_000)
            assert latest_results(engine, "judge-metrics", ["session:1"]) == {}  # nothing computed in the request
            worker.start()

            # The worker computes; the open view shows itself again, with its plots and no warning.
            expect(panel.get_by_text("Partial results")).to_have_count(0, timeout=120_000)
            expect(panel.locator(".js-plotly-plot")).to_have_count(2, timeout=30_000)
            expect(panel.get_by_text("Judge:", exact=False).first).to_be_visible()
            expect(page.locator("#analysis-status")).not_to_contain_text("Computing")
            assert latest_results(engine, "judge-metrics", ["session:1"])
            context.close()
        finally:
            worker.stop()
