"""The demo study the app seeds at start-up: two dialogue systems and the paper's six topics."""

from __future__ import annotations

from sqlmodel import Session

from storage.models import Study
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
    ("full-duplex-baseline", "full-duplex", {}),
)


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
        get_or_create_system(session, study, name, kind, dict(config))
    return study
