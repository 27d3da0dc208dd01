"""The audit trail: who did what to the study data, when, from where, and to which object.

One append-only table (storage.models.AuditEvent; migration 0015 makes the database refuse to
change or delete its rows), never touched by an erasure or a retention period: a data-protection
officer's "who had access to what, and when". An event names no participant: its object is a
session id, a study, an erasure record.

    record(engine, "ana", "opened_audio", object="session 12", address="10.0.0.7", study="demo")
    events(engine, since=...)            # newest first
    write_csv(engine, "audit.csv")       # what an owner downloads; python -m storage audit --out F
"""

from __future__ import annotations

import csv
import getpass
import os
from datetime import datetime
from pathlib import Path

from sqlmodel import select

from storage.db import session_scope
from storage.models import AuditEvent

# What is recorded (an event's `action`); the researcher area and the command lines use these.
ACTIONS = (
    "login", "failed_login",
    "opened_audio", "opened_session", "exported_report", "exported_dataset", "exported_payments",
    "exported_audit", "changed_study", "erased", "retention_applied", "withdrawn",
    "account_added", "account_disabled", "password_reset", "refused",
    "backup", "restore",
)
CSV_COLUMNS = ("id", "at", "actor", "address", "action", "object", "detail")


def command_line_actor() -> str:
    """Who runs a command: the machine's user (whoever has the shell and the database is an owner)."""
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):
        return "cli:unknown"


def entry(actor: str, action: str, object: str | None = None, address: str | None = None, **detail) -> AuditEvent:
    """One event, for a caller's own transaction (an erasure and its event commit together)."""
    if action not in ACTIONS:
        raise ValueError(f"unknown audit action {action!r}")
    return AuditEvent(actor=actor, action=action, object=object, address=address, detail=detail)


def record(engine, actor: str, action: str, object: str | None = None, address: str | None = None,
           **detail) -> None:
    """One event, written at once in its own transaction."""
    with session_scope(engine) as session:
        session.add(entry(actor, action, object, address, **detail))


def events(engine, since: datetime | None = None, actor: str | None = None, limit: int | None = None
           ) -> list[AuditEvent]:
    """Events, newest first."""
    with session_scope(engine) as session:
        query = select(AuditEvent).order_by(AuditEvent.id.desc())
        if since is not None:
            query = query.where(AuditEvent.at >= since)
        if actor is not None:
            query = query.where(AuditEvent.actor == actor)
        if limit is not None:
            query = query.limit(limit)
        rows = list(session.exec(query))
        session.expunge_all()
        return rows


def rows(engine, limit: int | None = None) -> list[list]:
    """The events as table rows (CSV_COLUMNS), newest first."""
    return [[e.id, e.at.isoformat(timespec="seconds"), e.actor, e.address or "", e.action, e.object or "",
             ", ".join(f"{k}={v}" for k, v in sorted(e.detail.items()))] for e in events(engine, limit=limit)]


def write_csv(engine, path: Path | str) -> int:
    """Every event into `path` (readable by this user only), oldest first; how many."""
    path = Path(path)
    table = rows(engine)[::-1]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # a file that was there keeps its old mode through O_CREAT
    with open(fd, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(CSV_COLUMNS)
        writer.writerows(table)
    return len(table)
