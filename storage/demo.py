"""The demo study the app seeds at start-up: two dialogue systems and the paper's six topics."""

from __future__ import annotations

from sqlmodel import Session, select

from storage.models import DialogueSystem, Study
from storage.records import get_or_create_study, get_or_create_system

DEMO_STUDY = "demo"
DEMO_TOPICS = (
    "pronunciation feedback",
    "places to eat in Manhattan",
    "sightseeing in New York",
    "learning Python",
    "preparing for a hike",
    "a topic of your choice",
)
DEMO_SESSION_SECONDS = 300
# Short annotation clips (the builder's default is 20-25 s): a demo trial takes under a minute.
DEMO_CLIP_SECONDS = [10.0, 15.0]
DEMO_SYSTEMS = (
    (
        "cascaded",
        "cascaded",
        {
            "vad": "silero",
            "asr": "faster-whisper tiny.en",
            "llm": "SmolLM2-135M-Instruct",
            "tts": "piper en_US-joe-medium",
        },
    ),
    ("cascade-backchannel", "cascade-backchannel", {}),
    ("predictive", "predictive", {}),
)
# The names a demo system was seeded under before: the cascade with timers was
# "full-duplex-baseline" (kind "full-duplex", an alias of its kind now). A database seeded then
# keeps that row, rather than gaining a second system that no one has called.
DEMO_FORMER_NAMES = {"cascade-backchannel": ("full-duplex-baseline",)}


def seed_demo_study(session: Session) -> Study:
    """Create whatever of the demo study is missing; existing rows are left as they are.

    Calling it again (or on every start-up) changes nothing. Flushes, does not commit.
    """
    study = get_or_create_study(
        session,
        DEMO_STUDY,
        title="Demo: talk to a spoken dialogue system",
        config={"topics": list(DEMO_TOPICS), "session_seconds": DEMO_SESSION_SECONDS,
                "clip_seconds": DEMO_CLIP_SECONDS},
    )
    for name, kind, config in DEMO_SYSTEMS:
        demo_system(session, study, name, kind, config)
    return study


def demo_system(session: Session, study: Study, name: str, kind: str, config: dict) -> DialogueSystem:
    """The study's row for the demo system `name`: the row under a former name where the database
    has one, else the one under `name` (created if missing)."""
    for former in DEMO_FORMER_NAMES.get(name, ()):
        row = session.exec(select(DialogueSystem).where(DialogueSystem.study_id == study.id,
                                                        DialogueSystem.name == former)).first()
        if row is not None:
            return row
    return get_or_create_system(session, study, name, kind, dict(config))
