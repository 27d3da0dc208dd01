"""The participant area of the web app (mounted by app.py at /participate).

    /participate/                      overview of the studies (Gradio)
    /participate/study/NAME[?pid=ID]   the study link: consent, topic, instructions, call, next system
    /participate/api/...               JSON used by that page; /api/offer starts a WebRTC call

Its routes are studies.participant_api; the calls of this process are studies.call_manager. The
call page is plain HTML with a small JS WebRTC client (Gradio's own audio streaming has seconds of
start-up and no timestamps); the server side is studies/webrtc.py.
"""

from __future__ import annotations

import asyncio
import logging

import gradio as gr
from fastapi import FastAPI

from studies.call_manager import CallManager
from studies.ice import NO_ICE_SERVERS, IceSettings
from studies.overview import overview_markdown, study_overviews
from studies.participant_api import participant_router
from studies.sessions import LEASE_S

log = logging.getLogger(__name__)


def participate_blocks(engine, path: str = "/participate") -> gr.Blocks:
    def overview() -> str:
        studies = study_overviews(engine)
        links = "\n".join(f"- [{s.title}]({path}/study/{s.name})" for s in studies)
        return overview_markdown(studies) + (f"\n\n**Study links**\n\n{links}" if links else "")

    with gr.Blocks(title="Participate") as blocks:
        gr.Markdown(
            "# Participate\n\nYou will talk with spoken dialogue systems about a given topic, in your "
            "browser. Open the study link you were given (`/participate/study/NAME`)."
        )
        shown = gr.Markdown()
        blocks.load(overview, outputs=shown)
    return blocks


def mount(app: FastAPI, engine, data_root, path: str = "/participate", prepare_models: bool = False,
          theme=None, call_slots: int | None = None, ice: IceSettings = NO_ICE_SERVERS) -> None:
    """Serve the participant area (its pages, JSON API and WebRTC signalling) on `app` under `path`.
    `prepare_models`: start loading every study system's models in the background now.
    `call_slots`: the calls of embedded systems this process carries at once (studies.call_slots).
    `ice`: the ICE servers of every call and connection check (studies.ice)."""
    calls = CallManager(engine, data_root, call_slots=call_slots)
    app.state.participant_calls = calls
    if prepare_models:
        calls.prepare_all()
    # Sessions left "active" by a server process killed mid-call are incomplete: those whose
    # lease expired now, and later ones by a sweep every LEASE_S while this server runs. Calls of
    # other live processes keep a fresh lease and are not touched.
    calls.sweep()

    async def sweep_periodically():
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(LEASE_S)
            try:
                await loop.run_in_executor(None, calls.sweep)
            except Exception:  # the database may be briefly unreachable: try again next time
                log.exception("sweeping calls of dead processes failed")

    sweeper: list[asyncio.Task] = []
    app.router.on_startup.append(lambda: sweeper.append(asyncio.ensure_future(sweep_periodically())))
    app.router.on_shutdown.append(lambda: [task.cancel() for task in sweeper])

    app.include_router(participant_router(engine, data_root, calls, path, ice=ice))  # before Gradio takes the rest of `path`
    # No footer: its "Use via API" link is for developers, not for participants.
    gr.mount_gradio_app(app, participate_blocks(engine, path), path=path, theme=theme, footer_links=[])
