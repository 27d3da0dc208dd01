"""What the public areas show of the studies in the database: how many systems, and the topics.
Participants must not learn which systems a study compares: the public page calls them System 1,
System 2, ... (their names and kinds stay with the researchers)."""

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


def neutral_system_labels(count: int) -> list[str]:
    """What a participant sees for a study's systems, in their order: never a name or a kind."""
    return [f"System {k}" for k in range(1, count + 1)]


def overview_markdown(overviews: list[StudyOverview]) -> str:
    """The studies as Markdown, with neutral labels for their dialogue systems, and their topics
    (the participant area)."""
    if not overviews:
        return "No study is set up yet."
    parts = []
    for study in overviews:
        topics = "\n".join(f"- {topic}" for topic in study.topics) or "- none yet"
        listed = "\n".join(f"- {label}" for label in neutral_system_labels(len(study.systems))) or "- none yet"
        parts.append(f"### {study.title}\n\n**Dialogue systems**\n\n{listed}\n\n**Topics**\n\n{topics}")
    return "\n\n".join(parts)
