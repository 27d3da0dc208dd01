"""Study subcommands of `python -m analysis` (registered by analysis/__main__.py).

    report --study NAME --out DIR        HTML report, CSV/Parquet tables, headline JSON (analysis.report)
    export-dataset --study NAME --out DIR   Hugging Face dataset saved to disk (analysis.dataset)
    demo [--study demo]                  seed a study with SIMULATED data (analysis.demo_study)

The database is $DATABASE_URL, else the SQLite file in the data root ($TURNTAKING_DATA or ./data),
as for the app; --database-url and --data-root choose others. The judge is the packaged default
checkpoint unless --checkpoint names another.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from analysis.demo_study import seed_demo_analysis
from analysis.study import StudyNotFound
from analysis.study_sessions import (
    JudgeUnavailable,
    load_study_judge,
    store_judge_reference,
)
from storage import db
from storage.db import session_scope
from storage.files import default_data_root

os.environ.setdefault("HF_HUB_OFFLINE", "1")


class StudyCommandError(ValueError):
    """A study command that cannot run; the message says why (printed as one line)."""


def _engine(args):
    url = args.database_url or (f"sqlite:///{(Path(args.data_root) / db.DATABASE_FILENAME).resolve()}"
                                if args.data_root else db.default_database_url())
    try:
        engine = db.make_engine(url)
        db.init_db(engine)
    except db.DatabaseError as exc:
        raise StudyCommandError(str(exc)) from None
    return engine


def _data_root(args) -> Path:
    return Path(args.data_root) if args.data_root else default_data_root()


def _analysis(args):
    from analysis.views import StudyAnalysis

    try:
        return StudyAnalysis(_engine(args), args.study, _data_root(args), args.checkpoint)
    except StudyNotFound as exc:
        raise StudyCommandError(str(exc)) from None


def _threads():
    import torch

    torch.set_num_threads(1)


def cmd_report(args) -> None:
    from analysis.report import write_report

    _threads()
    path = write_report(_analysis(args), args.out)
    print(f"wrote {path}, {path.parent / 'headline.json'} and {path.parent / 'tables'}/")


def cmd_export_dataset(args) -> None:
    from analysis.dataset import export_dataset

    out = export_dataset(_analysis(args), args.out)
    print(f"wrote the dataset to {out} (datasets.load_from_disk)")


def cmd_demo(args) -> None:
    engine = _engine(args)
    with session_scope(engine) as session:
        summary = seed_demo_analysis(session, _data_root(args), sessions_per_system=args.sessions_per_system,
                                     seconds=args.seconds, audio=not args.no_audio, study_name=args.study,
                                     seed=args.seed)
    if args.switchboard:
        _threads()
        try:
            judge = load_study_judge(args.checkpoint)
        except JudgeUnavailable as exc:
            raise StudyCommandError(str(exc)) from None
        report = store_judge_reference(engine, judge, args.switchboard, args.reference_conversations)
        summary["judge_human_reference"] = f"{report['conversations']} Switchboard conversations"
    print(json.dumps(summary, indent=1))


def _common(p, study_default: str | None = None) -> None:
    if study_default is None:
        p.add_argument("--study", required=True, help="the study's name")
    else:
        p.add_argument("--study", default=study_default, help=f"the study's name (default {study_default})")
    p.add_argument("--database-url", help="SQLAlchemy URL (default: $DATABASE_URL or SQLite in the data root)")
    p.add_argument("--data-root", help="folder of the recordings (default: $TURNTAKING_DATA or ./data)")
    p.add_argument("--checkpoint", help="judge checkpoint (default: the packaged one)")


def register(sub) -> None:
    p = sub.add_parser("report", help="a study's HTML report, tables (CSV, Parquet) and headline JSON")
    _common(p)
    p.add_argument("--out", required=True, help="output folder")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("export-dataset", help="a study's sessions, pairs and judgments as a Hugging Face dataset")
    _common(p)
    p.add_argument("--out", required=True, help="output folder (datasets.load_from_disk)")
    p.set_defaults(func=cmd_export_dataset)

    p = sub.add_parser("demo", help="seed a study with SIMULATED sessions, pairs and judgments")
    _common(p, study_default="demo")
    p.add_argument("--sessions-per-system", type=int, default=6)
    p.add_argument("--seconds", type=float, default=90.0, help="length of each simulated session")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-audio", action="store_true", help="voice activity only, no synthetic recordings")
    p.add_argument("--switchboard", help="Switchboard folder: also score the judge's human reference on it")
    p.add_argument("--reference-conversations", type=int, default=20)
    p.set_defaults(func=cmd_demo)
