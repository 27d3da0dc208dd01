"""The annotator area of the web app (mounted by app.py at /annotate)."""

from __future__ import annotations

import gradio as gr
from fastapi import FastAPI

from studies.overview import overview_markdown, study_overviews


def annotate_blocks(engine) -> gr.Blocks:
    with gr.Blocks(title="Annotate") as blocks:
        gr.Markdown(
            "# Annotate\n\nYou will listen to pairs of short dialogue clips and choose the one whose "
            "turn-taking sounds more natural. (The listening interface comes here.)"
        )
        overview = gr.Markdown()
        blocks.load(lambda: overview_markdown(study_overviews(engine)), outputs=overview)
    return blocks


def mount(app: FastAPI, engine, data_root, path: str = "/annotate") -> None:
    """Serve the annotator area (and any routes it needs) on `app` under `path`."""
    gr.mount_gradio_app(app, annotate_blocks(engine), path=path)
