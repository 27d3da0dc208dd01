"""The researcher area of the web app (mounted by app.py at /analyze, behind the login).

Every number shown is computed by a function in `analysis`; this module only lays them out.
"""

from __future__ import annotations

from pathlib import Path

import gradio as gr
from fastapi import FastAPI

from analysis.figures import statistics_figure
from analysis.pipeline import InputError, statistics_for_audio
from analysis.reference import switchboard_reference
from analysis.stats import COUNT_EVENTS, DURATION_EVENTS
from studies.overview import overview_markdown, study_overviews

RESEARCHER_USER = "researcher"
AUDIO_TYPES = [".wav", ".flac"]


def statistics_rows(stats: dict, reference: dict) -> list[list]:
    """The statistics table: one row per measure; the recording, each speaker, Switchboard.

    Only looks values up (every number is computed in `analysis`)."""
    speakers = list(stats.get("speakers", {}))
    views = [stats] + [stats["speakers"][s] for s in speakers] + [reference]

    def cell(value):
        return "–" if value is None else round(value, 2)

    rows = [[f"{name} /min"] + [cell(v["per_minute"].get(name)) for v in views] for name in COUNT_EVENTS]
    rows += [[f"{name} % of time"] + [cell(v["percent"].get(name)) for v in views] for name in DURATION_EVENTS]
    rows += [
        [label] + [cell(v.get(key)) for v in views]
        for key, label in (("speaking_rate_wpm", "words /min"), ("backchannel_rate_wpm", "backchannel words /min"))
    ]
    return rows


def statistics_headers(stats: dict) -> list[str]:
    return ["measure", "recording"] + [f"speaker {s}" for s in stats.get("speakers", {})] + ["Switchboard"]


def corpus_statistics_view(audio_path):
    """Upload handler of the "Corpus statistics" tab: table, figure and the full JSON."""
    if not audio_path:
        raise gr.Error("Upload a two-channel recording (WAV or FLAC) first.")
    try:
        stats = statistics_for_audio(audio_path, vad="silero")
    except InputError as exc:
        raise gr.Error(str(exc)) from None
    # The chart's legend names the upload, not Gradio's temporary copy of it.
    stats["name"] = Path(audio_path).name
    reference = switchboard_reference()
    table = gr.Dataframe(value=statistics_rows(stats, reference), headers=statistics_headers(stats))
    summary = {k: v for k, v in stats.items() if k != "events"}
    return table, statistics_figure(stats, reference), summary


def analyze_blocks(engine) -> gr.Blocks:
    with gr.Blocks(title="Analyze") as blocks:
        gr.Markdown("# Analyze\n\nTurn-taking statistics for researchers.")
        with gr.Tab("Corpus statistics"):
            gr.Markdown(
                "Upload a two-channel recording (one speaker per channel, WAV or FLAC). Voice activity "
                "(Silero) and words (Whisper) give the turn-taking events; the table and chart put them "
                "next to human-human conversation (Switchboard)."
            )
            audio = gr.File(label="Two-channel recording", file_types=AUDIO_TYPES, type="filepath")
            run = gr.Button("Compute statistics", variant="primary")
            table = gr.Dataframe(label="Turn-taking statistics", interactive=False, max_height=700)
            figure = gr.Plot(label="Compared with Switchboard")
            with gr.Accordion("All statistics (JSON)", open=False):
                details = gr.JSON()
            run.click(corpus_statistics_view, inputs=audio, outputs=[table, figure, details])
        with gr.Tab("Studies"):
            overview = gr.Markdown()
        blocks.load(lambda: overview_markdown(study_overviews(engine)), outputs=overview)
    return blocks


def mount(app: FastAPI, engine, data_root, password: str, path: str = "/analyze") -> None:
    """Serve the researcher area on `app` under `path`, behind Gradio's login."""
    gr.mount_gradio_app(
        app,
        analyze_blocks(engine),
        path=path,
        auth=(RESEARCHER_USER, password),
        auth_message=f"Researcher area: log in as '{RESEARCHER_USER}'.",
    )
