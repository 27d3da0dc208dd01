"""The participant area of the web app (mounted by app.py at /participate)."""

from __future__ import annotations

import gradio as gr
from fastapi import FastAPI

from studies.overview import overview_markdown, study_overviews


def participate_blocks(engine) -> gr.Blocks:
    with gr.Blocks(title="Participate") as blocks:
        gr.Markdown(
            "# Participate\n\nYou will talk with spoken dialogue systems about a given topic, in your "
            "browser, and rate each conversation. (The conversation interface comes here.)"
        )
        overview = gr.Markdown()
        blocks.load(lambda: overview_markdown(study_overviews(engine)), outputs=overview)
    return blocks


def mount(app: FastAPI, engine, data_root, path: str = "/participate") -> None:
    """Serve the participant area (and any routes it needs) on `app` under `path`."""
    gr.mount_gradio_app(app, participate_blocks(engine), path=path)
