"""The automatic examiner's stored rows (`python -m examiner run --store`) for a study's systems,
and FDB v1.0's published rows beside them. Read only: the examiner computes them."""

from __future__ import annotations

import pandas as pd
from sqlmodel import Session, select

from analysis.study import StudyData
from examiner.table import PUBLISHED_FDB_V1, system_label
from storage.models import DialogueSystem
from storage.records import examiner_runs
from studies.systems import SystemError_, system_kind

FDB_COLUMNS = ("pause_tor", "backchannel_tor", "backchannel_frequency_per_s", "backchannel_jsd", "smooth_tor",
               "smooth_latency_s", "interruption_tor", "interruption_latency_s")
PROBE_COLUMNS = ("barge_in_stopped", "barge_in_stop_time_s", "false_barge_in_backchannel",
                 "false_barge_in_background", "false_barge_in_noise")
INTERVAL_COLUMNS = ("smooth_tor_ci95", "smooth_latency_ci95", "interruption_tor_ci95", "interruption_latency_ci95")


def _interval(value) -> str:
    return "" if not value else f"{value[0]:.3f}-{value[1]:.3f}"


def canonical_kind(kind: str) -> str:
    """The kind's registry name (a database row may carry an alias, e.g. the demo's "full-duplex")."""
    try:
        return system_kind(kind).name
    except SystemError_:
        return kind


def examiner_table(engine, data: StudyData) -> pd.DataFrame:
    """One row per study system: its latest stored examiner row (empty cells where none is stored)."""
    columns = ["system", "kind", "examined_as", "calls", "task_set_seed", *FDB_COLUMNS, *INTERVAL_COLUMNS,
               *PROBE_COLUMNS, "stored_at"]
    rows = []
    with Session(engine) as session:
        systems = session.exec(select(DialogueSystem).where(DialogueSystem.study_id == data.study_id)
                               .order_by(DialogueSystem.id)).all()
        for system in systems:
            label = system_label(canonical_kind(system.kind), dict(system.config or {}))
            stored = examiner_runs(session, label)
            row = {"system": system.name, "kind": system.kind, "examined_as": label}
            if stored:
                latest = stored[0]
                row.update({"calls": latest.calls, "task_set_seed": latest.task_set.get("seed"),
                            "stored_at": latest.updated_at.isoformat(timespec="seconds")})
                row.update({c: latest.summary.get(c) for c in (*FDB_COLUMNS, *PROBE_COLUMNS)})
                row.update({c: _interval(latest.summary.get(c)) for c in INTERVAL_COLUMNS})
            rows.append(row)
    return pd.DataFrame(rows, columns=columns)


def published_table() -> pd.DataFrame:
    return pd.DataFrame([{"system": f"{name} (FDB v1.0, published)", **row} for name, row in PUBLISHED_FDB_V1.items()],
                        columns=["system", *FDB_COLUMNS])
