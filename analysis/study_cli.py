"""Study subcommands of `python -m analysis` (registered by analysis/__main__.py).

    fill --study NAME                    compute and cache every result the study's views read (progress bars)
    worker [--once]                      the background analysis worker (analysis.background)
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

from analysis.background import fill_study, run_worker
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


class _Bars:
    """tqdm bars, one per stage, fed by the (stage, done, total) progress of analysis.views."""

    def __init__(self, quiet: bool = False):
        self.quiet = quiet
        self.bars = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        from tqdm import tqdm

        bar = self.bars.get(stage)
        if bar is None:
            bar = self.bars[stage] = tqdm(total=total, desc=stage, unit="item", disable=self.quiet)
        bar.update(done - bar.n)

    def close(self) -> None:
        for bar in self.bars.values():
            bar.close()


def _analysis(args, progress=None):
    from analysis.views import StudyAnalysis

    try:
        return StudyAnalysis(_engine(args), args.study, _data_root(args), args.checkpoint, progress=progress)
    except StudyNotFound as exc:
        raise StudyCommandError(str(exc)) from None


def _threads():
    import torch

    torch.set_num_threads(1)


def cmd_report(args) -> None:
    from analysis.report import write_report

    _threads()
    bars = _Bars()  # what the cache lacks is computed first
    path = write_report(_analysis(args, bars), args.out)
    bars.close()
    print(f"wrote {path}, {path.parent / 'headline.json'} and {path.parent / 'tables'}/")


def cmd_export_dataset(args) -> None:
    from analysis.dataset import export_dataset

    out = export_dataset(_analysis(args), args.out)
    print(f"wrote the dataset to {out} (datasets.load_from_disk)")


def cmd_fill(args) -> None:
    _threads()
    bars = _Bars(args.quiet)
    try:
        computed = fill_study(_engine(args), args.study, _data_root(args), args.checkpoint, bars)
    except StudyNotFound as exc:
        raise StudyCommandError(str(exc)) from None
    bars.close()
    print(json.dumps({"study": args.study, "computed": computed}))


def cmd_worker(args) -> None:
    import logging

    logging.basicConfig(level=logging.INFO, format="%(asctime)s analysis worker: %(message)s")
    logging.getLogger("alembic").setLevel(logging.WARNING)  # not the migration chatter at each start
    if args.nice:
        os.nice(args.nice)
    _threads()
    passes = run_worker(_engine(args), _data_root(args), args.checkpoint, once=args.once, parent_pid=args.parent_pid)
    if args.once:
        print(json.dumps({"passes": passes}))


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


def _common(p, study_default: str | None = None, study: bool = True) -> None:
    if not study:
        pass
    elif study_default is None:
        p.add_argument("--study", required=True, help="the study's name")
    else:
        p.add_argument("--study", default=study_default, help=f"the study's name (default {study_default})")
    p.add_argument("--database-url", help="SQLAlchemy URL (default: $DATABASE_URL or SQLite in the data root)")
    p.add_argument("--data-root", help="folder of the recordings (default: $TURNTAKING_DATA or ./data)")
    p.add_argument("--checkpoint", help="judge checkpoint (default: the packaged one)")


def register(sub) -> None:
    p = sub.add_parser("fill", help="compute and cache every result of a study's views now (progress bars)")
    _common(p)
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=cmd_fill)

    p = sub.add_parser("worker", help="the background analysis worker: fills the caches of queued studies")
    _common(p, study=False)
    p.add_argument("--once", action="store_true", help="stop when no study is queued")
    p.add_argument("--nice", type=int, default=0, help="lower the worker's CPU priority by this much (app.py: 10)")
    p.add_argument("--parent-pid", type=int, help="stop when this process (the server that started it) is gone")
    p.set_defaults(func=cmd_worker)

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
