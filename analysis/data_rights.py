"""What the researcher area says about the study's personal data: how long it is kept (the study
file's `retention:`, studies.retention) and how many people were erased, and why."""

from __future__ import annotations

from collections import Counter

from storage.db import session_scope
from storage.erasure import erasure_records
from studies.config import RETENTION_KEYS, stored_settings

RETENTION_WORDS = {"identifiers_days": "Prolific IDs are dropped", "recordings_days": "recordings and transcripts "
                   "are deleted", "all_days": "everything of a person is erased"}
REASON_WORDS = {"withdrawn": "withdrew", "erased": "erased by a researcher", "retention": "expired"}


def retention_note(config: dict) -> str:
    """The study's retention periods in one sentence; says so when nothing expires."""
    periods = stored_settings("", "", config).retention
    if not periods:
        return ("Retention: this study file sets no `retention:` periods, so nothing expires: recordings and "
                "Prolific IDs are kept until someone erases them.")
    said = [f"{RETENTION_WORDS[key]} {periods[key]:g} days after consent" for key in RETENTION_KEYS if key in periods]
    return "Retention: " + "; ".join(said) + " (applied hourly by the background worker)."


def erasure_note(engine, study_id: int) -> str | None:
    """How many participants and annotators were erased, by reason; None when nobody was."""
    with session_scope(engine) as session:
        records = erasure_records(session, study_id)
    if not records:
        return None
    counts = Counter((r.subject, r.reason) for r in records)
    said = [f"{n} {subject}{'s' if n > 1 else ''} {REASON_WORDS.get(reason, reason)}"
            for (subject, reason), n in sorted(counts.items())]
    return "Erased: " + ", ".join(said) + " (their data is in no view, report or export)."
