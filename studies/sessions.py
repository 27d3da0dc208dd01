"""Conversation sessions on disk and in the database: where a call's files go, finishing a call,
and the sweep that marks sessions left open by a killed server as incomplete.

Files of session N live under `sessions/N/` in the data root: `call.wav` (two channels:
participant, system), `timing.jsonl`, `network.jsonl` (both ends' network figures, once a second:
studies.network_figures), and `listener.webm` when the browser uploads what the participant heard.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import sqlalchemy as sa
from sqlmodel import select

from storage.analysis_queue import request_for_session
from storage.db import session_scope
from storage.files import default_data_root, session_dir
from speech.audio import AudioError
from storage.models import ConversationSession, DialogueSystem, Recording, Study, utc_now
from storage.records import add_recording, end_session
from studies.call_quality import NO_RECORDING, CallQuality, recording_quality
from studies.config import StudyConfig, study_settings
from studies.network_figures import NETWORK_FILE, network_summary
from studies.recorder import SYSTEM_CHANNEL, RecorderError, repair_wav

CALL_KIND = "two-channel"


def call_relpath(session_id: int) -> str:
    return f"{session_dir(session_id)}/call.wav"


def timing_relpath(session_id: int) -> str:
    return f"{session_dir(session_id)}/timing.jsonl"


def network_relpath(session_id: int) -> str:
    return f"{session_dir(session_id)}/{NETWORK_FILE}"


def session_settings(engine, session_id: int) -> StudyConfig:
    """The settings of the session's study (its study file's, with the defaults)."""
    with session_scope(engine) as session:
        study = session.exec(
            select(Study).join(DialogueSystem, DialogueSystem.study_id == Study.id)
            .join(ConversationSession, ConversationSession.system_id == DialogueSystem.id)
            .where(ConversationSession.id == session_id)
        ).one()
        return study_settings(study)


def session_quality(engine, session_id: int, wav: Path, network: dict | None = None) -> CallQuality:
    """Whether the ended call can be analysed (studies.call_quality), from its recording and its
    network figures: without a readable recording it cannot, and the reason says why."""
    if not wav.is_file():
        return CallQuality(False, NO_RECORDING)
    settings = session_settings(engine, session_id)
    try:
        return recording_quality(wav, SYSTEM_CHANNEL, settings.call_minimum_s, network, settings.call_network_limits)
    except AudioError as exc:
        return CallQuality(False, f"unreadable recording: {exc}")


def finish_session(engine, session_id: int, status: str, data_root: Path | str | None = None,
                   ended_at: datetime | None = None) -> Recording | None:
    """End the session with `status`, register its two-channel recording (if one was written),
    decide whether it can be analysed (no speech from the participant, no answer from the system,
    too short, a network too poor: studies.call_quality), store the call's network figures (when
    it wrote network.jsonl) and queue the study's background analysis."""
    data_root = Path(data_root if data_root is not None else default_data_root())
    network = network_summary(data_root / network_relpath(session_id))
    # Decided before the transaction: a few hundred ms of voice activity at most, no lock held.
    quality = session_quality(engine, session_id, data_root / call_relpath(session_id), network)
    with session_scope(engine) as session:
        conversation = session.get(ConversationSession, session_id)
        recording = None
        if (data_root / call_relpath(session_id)).is_file():
            recording = add_recording(
                session, call_relpath(session_id), kind=CALL_KIND, data_root=data_root,
                conversation=conversation, system_channel=SYSTEM_CHANNEL,
            )
        conversation.analysable, conversation.quality_reason = quality.analysable, quality.reason
        if network is not None:
            conversation.network = network
        end_session(session, conversation, status, ended_at=ended_at)
        # Its statistics, judge metrics and naturalness are computed now, before anyone looks.
        request_for_session(session, conversation)
        return recording


# A running call's owning process refreshes its heartbeat every HEARTBEAT_S; a call whose
# heartbeat is older than LEASE_S was left by a dead process (a live one, even a busy one, is
# far inside that), and only such a call is closed by another process. TURNTAKING_CALL_LEASE_S
# sets the lease for every process of a deployment (the test suite runs on a faster clock); the
# heartbeat keeps its fifth of it, so a live call misses four beats before it looks dead.


def _lease_from_environment() -> float:
    value = os.environ.get("TURNTAKING_CALL_LEASE_S", "10")
    try:
        lease = float(value)
    except ValueError:
        lease = float("nan")
    if not lease >= 1.0:  # a bad setting stops the process at start-up with one line, not later
        raise SystemExit(f"TURNTAKING_CALL_LEASE_S must be a number of seconds >= 1, not {value!r}")
    return lease


LEASE_S = _lease_from_environment()
HEARTBEAT_S = LEASE_S / 5


def renew_lease(engine, session_id: int) -> bool:
    """Refresh the heartbeat of a call this process runs; False when it is no longer active
    (another process judged it dead and closed it)."""
    with session_scope(engine) as session:
        done = session.execute(
            sa.update(ConversationSession)
            .where(ConversationSession.id == session_id, ConversationSession.status == "active")
            .values(heartbeat_at=utc_now())
        )
        return done.rowcount == 1


def _expired(now: datetime, lease_s: float):
    cutoff = now - timedelta(seconds=lease_s)
    return sa.or_(
        ConversationSession.heartbeat_at < cutoff,
        sa.and_(ConversationSession.heartbeat_at.is_(None), ConversationSession.started_at < cutoff),
    )


def _last_audio_at(conversation: ConversationSession, wav: Path) -> datetime:
    """When the crashed call last wrote audio: the file's last write, else the last heartbeat
    (not the time of the sweep, which may come hours later)."""
    known = conversation.heartbeat_at or conversation.started_at
    if wav.is_file():
        written = datetime.fromtimestamp(wav.stat().st_mtime, timezone.utc)
        return max(min(written, known + timedelta(seconds=LEASE_S)), conversation.started_at)
    return known


def mark_open_sessions_incomplete(engine, data_root: Path | str | None = None, keep: set[int] = frozenset(),
                                  lease_s: float = LEASE_S, now: datetime | None = None) -> list[int]:
    """Sessions still "active" whose heartbeat stopped more than `lease_s` ago (their server died
    mid-call) become "incomplete", ending at their last audio; the audio written up to the crash
    is repaired and registered. Calls of live processes (fresh heartbeat) and `keep` (sessions
    running in this process) are left alone, and so are their files."""
    data_root = Path(data_root if data_root is not None else default_data_root())
    now = now or utc_now()
    with session_scope(engine) as session:
        open_ids = [
            s.id for s in session.exec(select(ConversationSession).where(
                ConversationSession.status == "active", _expired(now, lease_s)))
            if s.id not in keep
        ]
    closed = []
    for session_id in open_ids:
        wav = data_root / call_relpath(session_id)
        with session_scope(engine) as session:
            conversation = session.get(ConversationSession, session_id)
            ended = _last_audio_at(conversation, wav)
            # Claim it: of several processes sweeping at once, exactly one closes each call.
            claimed = session.execute(
                sa.update(ConversationSession)
                .where(ConversationSession.id == session_id, ConversationSession.status == "active",
                       _expired(now, lease_s))
                .values(status="incomplete", ended_at=ended)
            ).rowcount == 1
        if not claimed:
            continue
        if wav.is_file():
            try:
                repair_wav(wav)
            except RecorderError:
                pass  # not our file: registration below reports it
        finish_session(engine, session_id, "incomplete", data_root, ended_at=ended)
        closed.append(session_id)
    return closed
