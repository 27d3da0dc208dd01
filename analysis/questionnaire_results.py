"""The slow part of the questionnaire views, computed in the background and cached: the
within-participant tests, the Bradley-Terry ranking (hundreds of refits) and the correlations of
the measures with the answers (thousands of resamples). The cache key is a digest of the answers,
the measures and the systems, so a new answer or a recomputed measure makes it out of date, and
the view says so until the background worker (analysis.background) has brought it up to date.

    found = questionnaire_statistics(engine, data, answers, measures, compute=False)   # None: not yet
"""

from __future__ import annotations

import hashlib
import json

import pandas as pd
from sqlmodel import delete

from analysis.measure_tracking import measure_rating_correlations
from analysis.questionnaire_answers import StudyAnswers
from analysis.questionnaire_views import correlations_table, ranking_table, tests_table
from analysis.study import StudyData, cached_results
from storage.db import session_scope
from storage.models import AnalysisResult, Study
from storage.records import params_hash, save_analysis_result

KIND = "questionnaire-statistics"
VERSION = 1  # bumped when what is computed changes


def _digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def statistics_parameters(answers: StudyAnswers, measures: dict[int, dict], systems: list[str]) -> dict:
    """What the cached statistics depend on, as digests."""
    rows = answers.rows.astype(object).where(answers.rows.notna(), None).to_dict("records")
    return {"version": VERSION, "systems": list(systems), "answers": _digest(rows),
            "questionnaire": _digest(answers.questionnaire.as_dict()),
            "measures": _digest({str(k): v for k, v in sorted(measures.items())})}


def _records(table: pd.DataFrame) -> list[dict]:
    """A table as JSON-ready rows (NaN as None)."""
    return json.loads(table.to_json(orient="records"))


def compute_statistics(answers: StudyAnswers, measures: dict[int, dict], systems: list[str]) -> dict:
    """The tests, the ranking and the measures' correlations, as JSON."""
    out = {"tests": _records(tests_table(answers)), "ranking": _records(ranking_table(answers, systems)),
           "tracking": None}
    if answers.ratings and measures:
        reverse = {item.id for item in answers.scale_items if item.reverse_keyed}
        result = measure_rating_correlations(measures, list(answers.ratings), reverse_keyed=reverse)
        out["tracking"] = {"correlations": _records(correlations_table(result)), "verdict": result.verdict,
                           "correction": result.correction, "n_boot": result.n_boot,
                           "sessions": result.n_sessions, "participants": result.n_participants}
    return out


def questionnaire_statistics(engine, data: StudyData, answers: StudyAnswers, measures: dict[int, dict],
                             compute: bool) -> dict | None:
    """The cached statistics of the current answers and measures; computed and cached when
    `compute` (the background worker), else None while they are out of date."""
    subject = f"study:{data.study_id}"
    parameters = statistics_parameters(answers, measures, list(data.systems["system"]))
    found = cached_results(engine, KIND, {subject: params_hash(parameters)}).get(subject)
    if found is not None or not compute:
        return found
    result = compute_statistics(answers, measures, list(data.systems["system"]))
    with session_scope(engine) as session:
        # one row per study: the statistics of older answers are of no further use
        session.exec(delete(AnalysisResult).where(AnalysisResult.kind == KIND, AnalysisResult.subject == subject))
        save_analysis_result(session, KIND, subject, parameters, result, session.get(Study, data.study_id))
    return result
