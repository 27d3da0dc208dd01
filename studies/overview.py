"""What the public areas show of the studies in the database: their systems and topics."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlmodel import Session, select

from storage.models import DialogueSystem, Study


@dataclass
class StudyOverview:
    """What the public areas show of a study: its systems and conversation topics."""

    name: str
    title: str
    systems: list[tuple[str, str]] = field(default_factory=list)  # (name, kind)
    topics: list[str] = field(default_factory=list)


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
    """The studies as Markdown, with their dialogue systems and topics (the participant area)."""
    if not overviews:
        return "No study is set up yet."
    parts = []
    for study in overviews:
        topics = "\n".join(f"- {topic}" for topic in study.topics) or "- none yet"
        listed = "\n".join(f"- {name} ({kind})" for name, kind in study.systems) or "- none yet"
        parts.append(f"### {study.title}\n\n**Dialogue systems**\n\n{listed}\n\n**Topics**\n\n{topics}")
    return "\n\n".join(parts)
