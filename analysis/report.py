"""A study's report on disk: one self-contained HTML page, every table as CSV and Parquet, and a
JSON of the headline numbers.

    python -m analysis report --study NAME --out DIR [--checkpoint CKPT]

    DIR/report.html                 the views' figures (plotly, its JS inlined once) and tables
    DIR/tables/VIEW__TABLE.csv      every table, also as .parquet
    DIR/headline.json               the headline numbers of every view
"""

from __future__ import annotations

import html
import json
import math
import re
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from analysis.examiner_results import example_choices
from analysis.study import analysable_session_ids
from analysis.views import STUDY_VIEWS, StudyAnalysis, View, examiner_example_figure, session_view, study_view

# Each session's timeline is about 0.2 MB of HTML: a study of a few hundred sessions shows the
# first ones, says so, and has every session's tables in tables/ and the dashboard's Session tab.
REPORT_SESSIONS_MAX = 40
# An examined example's timeline is smaller (about 0.05 MB); every one is in the dashboard's
# "Automatic benchmark" tab and in the dataset export.
REPORT_EXAMPLES_MAX = 40


def report_views(analysis: StudyAnalysis, sessions: bool = True) -> list[View]:
    """The study views, then one view per session with a recording (up to REPORT_SESSIONS_MAX, the
    first by id), a session left out of the numbers marked so with its reason, after a note of how
    many are shown. `sessions` False: the aggregates only (a viewer's report: no session's words)."""
    views = [study_view(analysis, key) for key in STUDY_VIEWS]
    if not sessions:
        return views + examiner_example_views(analysis)
    sessions = analysis.data.sessions
    counted = analysable_session_ids(analysis.data)
    recorded = [int(i) for i in sessions.loc[sessions["recording_id"].notna(), "session_id"]]
    shown = recorded[:REPORT_SESSIONS_MAX]
    excluded = sum(1 for i in recorded if i not in counted)
    note = View("sessions", "Sessions", headline={"sessions": len(sessions), "with_recording": len(recorded),
                                                  "analysable_with_recording": len(recorded) - excluded,
                                                  "shown": len(shown)})
    note.notes.append(f"{len(shown)} of {len(sessions)} sessions shown one by one below: "
                      + ("every session with a recording" if len(shown) == len(recorded) else
                         f"the first {len(shown)} of the {len(recorded)} with a recording (the others: the "
                         "dashboard's Session tab)")
                      + (f"; {excluded} of them are left out of every number, each marked with its reason"
                         if excluded else "")
                      + (f"; {len(sessions) - len(recorded)} without a recording (the overview lists them)."
                         if len(sessions) > len(recorded) else "."))
    views.append(note)
    for session_id in shown:
        view, _ = session_view(analysis, session_id)
        views.append(view)
    return views + examiner_example_views(analysis)


def examiner_example_views(analysis: StudyAnalysis) -> list[View]:
    """One view per stored examiner example of the study's systems (up to REPORT_EXAMPLES_MAX):
    its timeline, as the "Automatic benchmark" tab draws it."""
    choices = example_choices(analysis.engine, analysis.data)
    if not choices:
        return []
    shown = choices[:REPORT_EXAMPLES_MAX]
    note = View("examiner_examples", "Automatic benchmark: the examples",
                headline={"examples": len(choices), "shown": len(shown)})
    note.notes.append(f"{len(shown)} of {len(choices)} stored examiner examples of the study's systems, each on one "
                      "time axis: both channels, the system's words, the task's marks and where its score was decided"
                      + ("." if len(shown) == len(choices) else " (the others: the dashboard's Automatic benchmark "
                         "tab and the dataset export)."))
    views = [note]
    for label, example_id in shown:
        figure, _ = examiner_example_figure(analysis, example_id)
        views.append(View("examiner_example", f"Examiner example: {label}", figures={"timeline": figure}))
    return views


def _json_ready(value):
    if isinstance(value, dict):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _note_html(note: str) -> str:
    text = html.escape(note)
    text = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", text)
    return "<p>" + re.sub(r"`(.+?)`", r"<code>\1</code>", text) + "</p>"


def _table_html(name: str, table: pd.DataFrame) -> str:
    return (f"<h3>{html.escape(name)}</h3>"
            + table.to_html(index=False, float_format=lambda v: f"{v:.4g}", na_rep="–", border=0, classes="table"))


STYLE = """body{font-family:sans-serif;max-width:1200px;margin:2em auto;line-height:1.4;color:#222}
.table{border-collapse:collapse;font-size:13px;margin-bottom:1em}.table td,.table th{padding:3px 8px;
border-bottom:1px solid #ddd;text-align:right}.table th{background:#f4f4f4}h2{border-top:2px solid #444;
padding-top:.6em;margin-top:2em}details{margin:.5em 0}"""


def report_html(analysis: StudyAnalysis, views: list[View]) -> str:
    data = analysis.data
    made = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Study report: "
             f"{html.escape(data.title)}</title><style>{STYLE}</style></head><body>",
             f"<h1>Study report: {html.escape(data.title)}</h1><p>Study <code>{html.escape(data.name)}</code>, "
             f"made {made}.</p>"]
    plotly_js = True  # the first figure carries plotly.js, the others use it
    for view in views:
        parts.append(f"<h2>{html.escape(view.title)}</h2>")
        parts += [_note_html(n) for n in view.notes]
        for figure in view.figures.values():
            parts.append(figure.to_html(full_html=False, include_plotlyjs=plotly_js))
            plotly_js = False
        for name, table in view.tables.items():
            if len(table) > 60:
                parts.append(f"<details><summary>{html.escape(name)} ({len(table)} rows; all in "
                             f"tables/{view.key}__{name}.csv)</summary>{_table_html(name, table.head(60))}</details>")
            elif len(table):
                parts.append(_table_html(name, table))
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(analysis: StudyAnalysis, out_dir, sessions: bool = True) -> Path:
    """Write the report into `out_dir` (created); returns the HTML file's path. `sessions`: with
    one view per session (report_views)."""
    out = Path(out_dir)
    tables_dir = out / "tables"
    tables_dir.mkdir(parents=True, exist_ok=True)
    views = report_views(analysis, sessions)
    headline = {"study": analysis.data.name, "title": analysis.data.title}
    for view in views:
        if view.key not in ("session", "examiner_example"):
            headline[view.key] = view.headline
        for name, table in view.tables.items():
            if view.key == "session":
                name = f"{view.title.lower().replace(' ', '_')}__{name}"
            stem = tables_dir / f"{view.key}__{name}"
            table.to_csv(stem.with_suffix(".csv"), index=False)
            table.to_parquet(stem.with_suffix(".parquet"), index=False)
    (out / "headline.json").write_text(json.dumps(_json_ready(headline), indent=1, default=str) + "\n")
    path = out / "report.html"
    path.write_text(report_html(analysis, views))
    return path


def report_archive(analysis: StudyAnalysis, work_dir, sessions: bool = True) -> Path:
    """The report as one zip file (for the dashboard's download); `sessions`: as write_report."""
    work = Path(work_dir)
    folder = work / (f"report-{analysis.data.name}" if sessions else f"report-{analysis.data.name}-aggregates")
    if folder.exists():
        shutil.rmtree(folder)
    write_report(analysis, folder, sessions)
    return Path(shutil.make_archive(str(folder), "zip", folder))
