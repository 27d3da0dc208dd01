"""The web app: three areas on one server.

    /             landing page linking the three areas
    /participate  participants talk to dialogue systems (public)
    /annotate     annotators judge natural vs timing-perturbed clips (public)
    /analyze      researchers see turn-taking statistics (login: user "researcher")

One FastAPI app with one Gradio Blocks mounted per area, so that only the researcher area gets
Gradio's login (`auth=` of `gr.mount_gradio_app`); the other two stay public. The researcher
password comes from TURNTAKING_RESEARCHER_PASSWORD, or is generated at start-up and printed.

    python app.py [--host 127.0.0.1] [--port 7860] [--database-url sqlite:///data/turntaking.db]
"""

from __future__ import annotations

import argparse
import html
import os
import secrets
import sys
from dataclasses import dataclass, field
from pathlib import Path

# Before gradio is imported: no usage statistics and no model hub (the network is closed).
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import gradio as gr  # noqa: E402
from fastapi import FastAPI  # noqa: E402
from fastapi.responses import HTMLResponse  # noqa: E402

from analysis.figures import statistics_figure  # noqa: E402
from analysis.pipeline import InputError, statistics_for_audio  # noqa: E402
from analysis.reference import switchboard_reference  # noqa: E402
from analysis.stats import COUNT_EVENTS, DURATION_EVENTS  # noqa: E402
from sqlmodel import Session, select  # noqa: E402
from storage import db, demo  # noqa: E402
from storage.files import default_data_root  # noqa: E402
from storage.models import DialogueSystem, Study  # noqa: E402

RESEARCHER_USER = "researcher"
PASSWORD_ENV = "TURNTAKING_RESEARCHER_PASSWORD"
DEFAULT_PORT = 7860
AUDIO_TYPES = [".wav", ".flac"]
# (path, title, what it is for); the order is the landing page's.
AREAS = [
    ("participate", "Participate", "Talk to spoken dialogue systems in your browser."),
    ("annotate", "Annotate", "Listen to pairs of dialogue clips and judge which sounds more natural."),
    ("analyze", "Analyze", "Researchers: turn-taking statistics of recordings and studies (login required)."),
]


class ConfigError(ValueError):
    """A start-up setting that cannot be used; the message names it."""


@dataclass
class StudyOverview:
    """What the public areas show of a study: its systems and conversation topics."""

    name: str
    title: str
    systems: list[tuple[str, str]] = field(default_factory=list)  # (name, kind)
    topics: list[str] = field(default_factory=list)


def resolve_researcher_password(given: str | None = None) -> tuple[str, bool]:
    """(password, generated): `given`, else $TURNTAKING_RESEARCHER_PASSWORD, else a random one."""
    if given is not None:
        if not given:
            raise ConfigError("researcher password is empty")
        return given, False
    from_env = os.environ.get(PASSWORD_ENV)
    if from_env is not None:
        if not from_env:
            raise ConfigError(f"{PASSWORD_ENV} is set but empty; unset it to get a generated password")
        return from_env, False
    return secrets.token_urlsafe(12), True


def open_database(database_url: str | None = None, data_root=None):
    """An engine on the app's database, created or upgraded, holding the demo study.

    The URL: `database_url`, else $DATABASE_URL, else the SQLite file in `data_root` (default:
    $TURNTAKING_DATA or ./data)."""
    if database_url is None:
        database_url = os.environ.get("DATABASE_URL") or (
            f"sqlite:///{(Path(data_root) / db.DATABASE_FILENAME).resolve()}" if data_root is not None else None
        )
    engine = db.make_engine(database_url or db.default_database_url())
    db.init_db(engine)
    with db.session_scope(engine) as session:
        demo.seed_demo_study(session)
    return engine


def study_overviews(engine) -> list[StudyOverview]:
    overviews = []
    with Session(engine) as session:
        for study in session.exec(select(Study).order_by(Study.id)):
            systems = session.exec(
                select(DialogueSystem).where(DialogueSystem.study_id == study.id).order_by(DialogueSystem.id)
            )
            overviews.append(
                StudyOverview(
                    name=study.name,
                    title=study.title or study.name,
                    systems=[(s.name, s.kind) for s in systems],
                    topics=list((study.config or {}).get("topics", [])),
                )
            )
    return overviews


def overview_markdown(overviews: list[StudyOverview]) -> str:
    if not overviews:
        return "No study is set up yet."
    parts = []
    for study in overviews:
        systems = "\n".join(f"- {name} ({kind})" for name, kind in study.systems) or "- none yet"
        topics = "\n".join(f"- {topic}" for topic in study.topics) or "- none yet"
        parts.append(f"### {study.title}\n\n**Dialogue systems**\n\n{systems}\n\n**Topics**\n\n{topics}")
    return "\n\n".join(parts)


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


def landing_page() -> str:
    links = "\n".join(
        f'<li><a href="/{path}/">{title}</a> — {html.escape(about)}</li>' for path, title, about in AREAS
    )
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Turn-taking studies</title>"
        "<style>body{font-family:sans-serif;max-width:40em;margin:3em auto;line-height:1.5}</style></head>"
        "<body><h1>Turn-taking studies</h1>"
        "<p>A platform for user studies of turn-taking in spoken dialogue systems.</p>"
        f"<ul>{links}</ul></body></html>"
    )


def participate_blocks(engine) -> gr.Blocks:
    with gr.Blocks(title="Participate") as blocks:
        gr.Markdown(
            "# Participate\n\nYou will talk with spoken dialogue systems about a given topic, in your "
            "browser, and rate each conversation. (The conversation interface comes here.)"
        )
        overview = gr.Markdown()
        blocks.load(lambda: overview_markdown(study_overviews(engine)), outputs=overview)
    return blocks


def annotate_blocks(engine) -> gr.Blocks:
    with gr.Blocks(title="Annotate") as blocks:
        gr.Markdown(
            "# Annotate\n\nYou will listen to pairs of short dialogue clips and choose the one whose "
            "turn-taking sounds more natural. (The listening interface comes here.)"
        )
        overview = gr.Markdown()
        blocks.load(lambda: overview_markdown(study_overviews(engine)), outputs=overview)
    return blocks


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


def build_app(database_url: str | None = None, data_root=None, researcher_password: str | None = None) -> FastAPI:
    """The whole app; `app.state.researcher_password` (and `.password_generated`) tell the login."""
    password, generated = resolve_researcher_password(researcher_password)
    engine = open_database(database_url, data_root)

    app = FastAPI(title="Turn-taking studies")
    app.state.engine = engine
    app.state.data_root = Path(data_root) if data_root is not None else default_data_root()
    app.state.researcher_password = password
    app.state.password_generated = generated

    @app.get("/", response_class=HTMLResponse)
    def landing():
        return landing_page()

    gr.mount_gradio_app(app, participate_blocks(engine), path="/participate")
    gr.mount_gradio_app(app, annotate_blocks(engine), path="/annotate")
    gr.mount_gradio_app(
        app,
        analyze_blocks(engine),
        path="/analyze",
        auth=(RESEARCHER_USER, password),
        auth_message=f"Researcher area: log in as '{RESEARCHER_USER}'.",
    )
    return app


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Turn-taking study platform (web app)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    parser.add_argument("--database-url", default=None, help="SQLAlchemy URL (default: $DATABASE_URL or SQLite under the data root)")
    args = parser.parse_args(argv)

    import uvicorn

    try:
        app = build_app(database_url=args.database_url)
    except (ConfigError, db.DatabaseError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    shown_host = "localhost" if args.host in ("127.0.0.1", "0.0.0.0", "::") else args.host
    base = f"http://{shown_host}:{args.port}"
    print(f"Turn-taking studies: {base}/")
    for path, title, _ in AREAS:
        print(f"  {title:12} {base}/{path}/")
    if app.state.password_generated:
        print(
            f"Researcher login: user '{RESEARCHER_USER}', password {app.state.researcher_password} "
            f"(generated; set {PASSWORD_ENV} to choose one)"
        )
    else:
        print(f"Researcher login: user '{RESEARCHER_USER}', password from {PASSWORD_ENV}")
    sys.stdout.flush()
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
