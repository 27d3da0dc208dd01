"""Judgments of a study as a table, one row per judgment: CSV or Parquet.

The columns `analysis.agreement` reads come first (annotator, pair_id, type, choice as
natural/perturbed, rating_natural, rating_perturbed, artifact_natural, artifact_perturbed,
trial, attention_passed, duration_s); then the raw record as the annotator saw it (sides A/B,
which side held the natural clip, plays, listening times, timestamps). Annotators are named
`annotator-N` (storage.erasure.annotator_pseudonym), as in every view; their Prolific IDs leave the
app only in the payments table (analysis.payments).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from sqlmodel import Session, select

from storage.erasure import annotator_pseudonym
from storage.models import Annotator, Assignment, ClipPair, Judgment, Study

COLUMNS = [
    "annotator", "pair_id", "type", "choice", "rating_natural", "rating_perturbed", "artifact_natural",
    "artifact_perturbed", "trial", "attention_passed", "duration_s",
    "study", "position", "natural_side", "choice_side", "rating_a", "rating_b",
    "artifact_rating_a", "artifact_rating_b", "plays_a", "plays_b", "listened_s_a", "listened_s_b",
    "presented_at", "submitted_at",
]
FORMATS = (".csv", ".parquet")


class ExportError(ValueError):
    pass


def trial_kind(pair: ClipPair) -> str:
    if pair.is_attention_check:
        return "attention"
    if pair.is_artifact_control:
        return "artifact_control"
    return "formal"


def judgment_rows(session: Session, study: Study) -> pd.DataFrame:
    rows = session.exec(
        select(Judgment, ClipPair, Annotator, Assignment)
        .join(ClipPair, ClipPair.id == Judgment.clip_pair_id)
        .join(Annotator, Annotator.id == Judgment.annotator_id)
        .outerjoin(Assignment, (Assignment.annotator_id == Judgment.annotator_id)
                   & (Assignment.clip_pair_id == Judgment.clip_pair_id))
        .where(ClipPair.study_id == study.id)
        .order_by(Judgment.id)
    ).all()
    records = []
    for j, pair, annotator, assignment in rows:
        natural_a = j.natural_side == "A"
        kind = trial_kind(pair)
        choice = "natural" if j.choice == j.natural_side else "perturbed"
        records.append({
            "annotator": annotator_pseudonym(annotator.id),  # never their Prolific ID (the payments table has it)
            "pair_id": pair.pair_id,
            "type": pair.edit.get("control_of", pair.perturbation) if kind == "artifact_control" else pair.perturbation,
            "choice": choice,
            "rating_natural": j.rating_a if natural_a else j.rating_b,
            "rating_perturbed": j.rating_b if natural_a else j.rating_a,
            "artifact_natural": j.artifact_rating_a if natural_a else j.artifact_rating_b,
            "artifact_perturbed": j.artifact_rating_b if natural_a else j.artifact_rating_a,
            "trial": kind,
            "attention_passed": (choice == "natural") if kind == "attention" else None,
            "duration_s": j.response_s,
            "study": study.name,
            "position": assignment.position if assignment is not None else None,
            "natural_side": j.natural_side,
            "choice_side": j.choice,
            "rating_a": j.rating_a,
            "rating_b": j.rating_b,
            "artifact_rating_a": j.artifact_rating_a,
            "artifact_rating_b": j.artifact_rating_b,
            "plays_a": j.plays_a,
            "plays_b": j.plays_b,
            "listened_s_a": j.listened_s_a,
            "listened_s_b": j.listened_s_b,
            "presented_at": j.presented_at,
            "submitted_at": j.submitted_at,
        })
    frame = pd.DataFrame(records, columns=COLUMNS)
    for name in ("rating_natural", "rating_perturbed", "artifact_natural", "artifact_perturbed",
                 "rating_a", "rating_b", "artifact_rating_a", "artifact_rating_b", "duration_s"):
        frame[name] = frame[name].astype(float)
    frame["attention_passed"] = frame["attention_passed"].astype(object)
    return frame


def export_judgments(session: Session, study: Study, path) -> int:
    """Write the study's judgments to `path` (.csv or .parquet); returns the number of rows."""
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise ExportError(f"export file {path.name} must end in .csv or .parquet")
    frame = judgment_rows(session, study)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path, index=False)
    return len(frame)
