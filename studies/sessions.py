"""Conversation sessions on disk and in the database: where a call's files go, finishing a call,
and the sweep that marks sessions left open by a killed server as incomplete.

Files of session N live under `sessions/N/` in the data root: `call.wav` (two channels:
participant, system), `timing.jsonl`, and `listener.webm` when the browser uploads what the
participant heard.
"""

from __future__ import annotations

from pathlib import Path

from sqlmodel import select

from storage.db import session_scope
from storage.files import default_data_root
from storage.models import ConversationSession, Recording
from storage.records import add_recording, end_session
from studies.recorder import SYSTEM_CHANNEL, RecorderError, repair_wav

CALL_KIND = "two-channel"


def session_dir(session_id: int) -> str:
    return f"sessions/{session_id}"


def call_relpath(session_id: int) -> str:
    return f"{session_dir(session_id)}/call.wav"


def timing_relpath(session_id: int) -> str:
    return f"{session_dir(session_id)}/timing.jsonl"


def finish_session(engine, session_id: int, status: str, data_root: Path | str | None = None) -> Recording | None:
    """End the session with `status` and register its two-channel recording (if one was written)."""
    data_root = Path(data_root if data_root is not None else default_data_root())
    with session_scope(engine) as session:
        conversation = session.get(ConversationSession, session_id)
        recording = None
        if (data_root / call_relpath(session_id)).is_file():
            recording = add_recording(
                session, call_relpath(session_id), kind=CALL_KIND, data_root=data_root,
                conversation=conversation, system_channel=SYSTEM_CHANNEL,
            )
        end_session(session, conversation, status)
        return recording


def mark_open_sessions_incomplete(engine, data_root: Path | str | None = None, keep: set[int] = frozenset()) -> list[int]:
    """Sessions still "active" (their server died mid-call) become "incomplete"; the audio written
    up to the crash is repaired and registered. `keep`: sessions running in this process."""
    data_root = Path(data_root if data_root is not None else default_data_root())
    with session_scope(engine) as session:
        open_ids = [
            s.id for s in session.exec(select(ConversationSession).where(ConversationSession.status == "active"))
            if s.id not in keep
        ]
    for session_id in open_ids:
        wav = data_root / call_relpath(session_id)
        if wav.is_file():
            try:
                repair_wav(wav)
            except RecorderError:
                pass  # not our file: registration below reports it
        finish_session(engine, session_id, "incomplete", data_root)
    return open_ids
