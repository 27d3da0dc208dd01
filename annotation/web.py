"""The annotator area of the web app.

    /annotate/                      overview and where to start (Gradio, like the other areas)
    /annotate/session?token=T       the listening test itself (a plain page, see static/session.html)
    /annotate/session?study=NAME&PROLIFIC_PID=..&STUDY_ID=..&SESSION_ID=..   the same, from Prolific
    /api/annotate/...               its JSON routes (annotation.api)

Prolific: give Prolific the second URL with {{%PROLIFIC_PID%}} etc. as its values; register the
study with --prolific-study-id (only that STUDY_ID gets in; a study without it lets no Prolific
arrival in), --completion-code (the study's code on Prolific) and --completion-url
"https://app.prolific.com/submissions/complete?cc={code}".

The listening page is plain HTML and JavaScript rather than Gradio: it needs its own audio
player (no seeking, "played to the end" events) and talks to the same JSON API that the
simulated annotators of benchmarks/bench_annotation.py use.
"""

from __future__ import annotations

from pathlib import Path

import gradio as gr
import sqlalchemy as sa
from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from sqlmodel import Session, select

from annotation.api import api_router
from annotation.assignment import settings_for
from annotation.trials import clip_length_range
from storage.models import ClipPair, Study

SESSION_PAGE = Path(__file__).resolve().parent / "static" / "session.html"


def annotate_blocks(engine) -> gr.Blocks:
    with gr.Blocks(title="Annotate") as blocks:
        gr.Markdown(
            "# Annotate\n\nYou will listen to pairs of short dialogue clips and choose the one whose "
            "turn-taking sounds more natural. Open the personal link you were given "
            "(`/annotate/session?token=...`, or the link from Prolific) to start or to continue."
        )
        overview = gr.Markdown()
        blocks.load(lambda: studies_markdown(engine), outputs=overview)
    return blocks


def studies_markdown(engine) -> str:
    """The studies that have clips to judge: how many pairs and how long their clips are. Neither
    their dialogue systems nor the participants' conversation topics: annotators judge clips
    blind (knowing the systems could bias them), and the topics are the participants' part."""
    parts = []
    with Session(engine) as session:
        for study in session.exec(select(Study).order_by(Study.id)):
            pairs = session.exec(
                select(sa.func.count()).select_from(ClipPair)
                .where(ClipPair.study_id == study.id, ClipPair.is_practice.is_(False))
            ).one()
            lengths = clip_length_range(session, study.id)
            if not pairs or lengths is None:
                continue
            shortest, longest = lengths
            seconds = f"{shortest}" if shortest == longest else f"{shortest} to {longest}"
            trials = trials_each(session, study)
            parts.append(f"### {study.title or study.name}\n\nUp to {trials} trial{'s' if trials != 1 else ''} "
                         f"for each annotator; in each you compare two clips of {seconds} seconds.")
    return "\n\n".join(parts) if parts else "No listening study has clips to judge yet."


def trials_each(session, study: Study) -> int:
    """How many trials one annotator of the study is given at most (its quota of formal and
    control pairs, no more than there are, and the attention checks among them): what a newcomer
    signs up for, not the study's number of pairs."""
    settings = settings_for(study)
    judged = session.exec(select(sa.func.count()).select_from(ClipPair).where(
        ClipPair.study_id == study.id, ClipPair.is_practice.is_(False), ClipPair.is_attention_check.is_(False))).one()
    checks = session.exec(select(sa.func.count()).select_from(ClipPair).where(
        ClipPair.study_id == study.id, ClipPair.is_attention_check.is_(True))).one()
    formal = min(settings.trials_per_annotator, judged)
    return formal + min(checks, -(-formal // settings.attention_every))


def mount(app: FastAPI, engine, data_root, path: str = "/annotate", theme=None) -> None:
    """Serve the annotator area on `app`: the JSON API, the listening page, the Gradio overview."""
    app.include_router(api_router(engine, data_root))
    page = SESSION_PAGE.read_text()

    # Registered before the Gradio mount, so this path is not handed to Gradio.
    @app.get(f"{path}/session", response_class=HTMLResponse)
    def session_page():
        return HTMLResponse(page, headers={"Cache-Control": "no-store"})

    # No footer: its "Use via API" link is for developers, not for annotators.
    gr.mount_gradio_app(app, annotate_blocks(engine), path=path, theme=theme, footer_links=[])
