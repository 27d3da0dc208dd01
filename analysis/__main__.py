"""Command line: `python -m analysis stats | reference | backchannel-timing | fill | worker | report | export-dataset | payments | demo`.

    python -m analysis stats PATH [--vad silero|pyannote-onnx|rttm|words] [--rttm F] [--json]
    python -m analysis stats --corpus switchboard DIR [--split-list FILE | --split val] --json
    python -m analysis stats DIR|MANIFEST --run-dir RUN [--workers N | --ray-address A]   (Ray tasks,
        resumable; results in RUN/results/*.parquet, analysis/corpus_run.py)
    python -m analysis reference --corpus switchboard DIR [--out FILE]
    python -m analysis backchannel-timing --corpus switchboard DIR [--splits train] [--out FILE]
    python -m analysis reference --corpus switchboard DIR --through-pipeline [--conversations 40]
    python -m analysis pipeline-bias --corpus switchboard DIR [--fit] [--markdown FILE]
        (when listeners backchannel, by offset from the speaker's IPU end: turntaking/backchannel_timing.py)
The study commands:
    python -m analysis fill --study NAME     (bring the study's cached results up to date, progress bars)
    python -m analysis worker [--once]       (the background analysis worker: analysis/background.py)
    python -m analysis report --study NAME --out DIR [--checkpoint CKPT]   (HTML report, CSV/Parquet
        tables, headline JSON: analysis/report.py)
    python -m analysis export-dataset --study NAME --out DIR [--share-level researchers|public]
                                                              (Hugging Face dataset saved to disk, with manifest.json)
    python -m analysis payments --study NAME --out FILE.csv   (pseudonyms with Prolific IDs: the one table naming people)
    python -m analysis demo [--study NAME] [--sessions-per-system N] [--switchboard DIR]   (seed a study
        with SIMULATED data: analysis/demo_study.py)
The database of the study commands is $DATABASE_URL, else the SQLite file in the data root
($TURNTAKING_DATA or ./data), as for the app; --database-url and --data-root choose others. The
judge is the packaged default checkpoint unless --checkpoint names another.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from tqdm import tqdm

from analysis.background import fill_study, run_worker
from analysis.corpus_run import stats_run
from analysis.demo_study import seed_demo_analysis
from analysis.payments import payments_table, write_payments
from analysis.pipeline_bias import pipeline_bias_report, report_markdown
from analysis.pipeline_reference import build_pipeline_reference
from analysis.study import StudyNotFound
from analysis.study_sessions import (
    JudgeUnavailable,
    load_study_judge,
    store_judge_reference,
)
from jobs.ray_runs import add_ray_options, check_ray_options
from speech.malloc import keep_freed_memory
from speech.pipeline import VAD_BACKENDS, InputError, statistics_for_path
from storage import audit_trail, db
from storage.db import session_scope
from storage.files import default_data_root
from studies.config import SHARE_LEVELS
from turntaking.backchannel_timing import BackchannelTiming, fit_backchannel_timing, save_backchannel_timing
from turntaking.events import add_event_options, detect_events, event_params_from_options
from turntaking.reference import (
    PIPELINE_REFERENCE_FILE,
    build_switchboard_reference,
    save_reference,
    switchboard_corpus_statistics,
)
from turntaking.floor_transfer import offset_distribution
from turntaking.stats import COUNT_EVENTS, DURATION_EVENTS
from turntaking.switchboard import CorpusError, conversation_ids, load_conversation

CORPORA = ("switchboard",)

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _format_table(stats: dict) -> str:
    rows = [f"{'':18}{'all':>10}" + "".join(f"{name:>10}" for name in stats.get("speakers", {}))]
    views = [stats] + list(stats.get("speakers", {}).values())

    def fmt(v):
        return f"{v:10.2f}" if v is not None else f"{'-':>10}"

    for name in COUNT_EVENTS:
        rows.append(f"{name + ' /min':18}" + "".join(fmt(v["per_minute"][name]) for v in views))
    for name in DURATION_EVENTS:
        rows.append(f"{name + ' %':18}" + "".join(fmt(v["percent"][name]) for v in views))
    for key, label in (("speaking_rate_wpm", "words /min"), ("backchannel_rate_wpm", "bc words /min")):
        rows.append(f"{label:18}" + "".join(fmt(v.get(key)) for v in views))
    fto = stats.get("floor_transfer_offset") or offset_distribution(stats.get("floor_transfer_offsets_s", []))
    if fto["n"]:
        p = {k: round(1000 * v) for k, v in fto["percentiles_s"].items()}
        rows.append(f"floor-transfer offsets: {fto['n']}, median {p['50']} ms (quartiles {p['25']} to {p['75']} ms), "
                    f"{100 * fto['overlapped_share']:.0f}% in overlap")
    head = f"{stats.get('source') or stats.get('name')}: {stats['duration_s'] / 60:.2f} min"
    if "conversations" in stats:
        head += f", {stats['conversations']} conversations"
    return head + "\n" + "\n".join(rows)


def cmd_stats(args) -> dict:
    params = event_params_from_options(args)
    check_ray_options(args)
    if args.run_dir:
        if args.corpus or not args.path:
            raise InputError("--run-dir takes a PATH: a directory of recordings or a manifest (one path a line)")
        report, args.exit_status = stats_run(args, params)
        return report
    if args.corpus:
        if args.path:
            raise InputError("give either PATH or --corpus NAME DIR, not both")
        _, root = args.corpus
        ids = conversation_ids(root, split=args.split, split_list=args.split_list)
        if not ids:
            raise InputError(f"no conversations found in {root}")
        return switchboard_corpus_statistics(root, ids, params, progress=not args.quiet)
    if not args.path:
        raise InputError("give a PATH (audio, Switchboard conversation, voice-activity JSON) or --corpus")
    stats = statistics_for_path(
        args.path, vad=args.vad, params=params, rttm=args.rttm, transcript=args.transcript, transcribe=not args.no_asr
    )
    if args.no_events:
        stats.pop("events", None)
    return stats


def cmd_reference(args) -> dict:
    _, root = args.corpus
    if args.through_pipeline:
        table = build_pipeline_reference(root, args.work_dir, args.conversations, args.seconds,
                                         event_params_from_options(args), progress=not args.quiet)
        path = save_reference(table, args.out, PIPELINE_REFERENCE_FILE)
        print(f"wrote {path}", file=sys.stderr)
        return table
    table = build_switchboard_reference(
        root, splits=tuple(args.splits), params=event_params_from_options(args), progress=not args.quiet
    )
    path = save_reference(table, args.out)
    print(f"wrote {path}", file=sys.stderr)
    return table


def cmd_pipeline_bias(args) -> None:
    _, root = args.corpus

    def progress(items, name):
        return tqdm(items, desc=name, unit="conv", disable=args.quiet)

    report = pipeline_bias_report(root, args.work_dir, args.seconds, args.conversations, args.fit, progress)
    text = report_markdown(report)
    if args.markdown:
        Path(args.markdown).write_text(text)
    print(json.dumps(report, indent=1) if args.json else text)


def cmd_backchannel_timing(args) -> dict:
    _, root = args.corpus
    params = event_params_from_options(args)
    ids = [i for split in args.splits for i in conversation_ids(root, split)]
    if not ids:
        raise InputError(f"no conversations of {', '.join(args.splits)} found in {root}")
    events = [detect_events(load_conversation(root, conv_id), params)
              for conv_id in tqdm(ids, desc="conversations", unit="conv", disable=args.quiet)]
    timing = fit_backchannel_timing(
        events, f"Switchboard-1 {'+'.join(args.splits)}, ISIP MS-98 word alignments", params)
    path = save_backchannel_timing(timing, args.out)
    print(f"wrote {path}", file=sys.stderr)
    return timing.as_dict()


def _format_backchannel_timing(table: dict) -> str:
    rates = BackchannelTiming.from_dict(table).rates()
    rows = [f"{label:>14} {int(n):6d} onsets {s:9.1f} s {rate:7.4f} /s"
            for label, n, s, rate in zip(table["bins"], table["onsets"], table["exposure_s"], rates)]
    seconds = sum(table["exposure_s"])
    total = f"{sum(table['onsets']) / seconds:.4f}" if seconds else "-"  # a corpus without any turn
    return (f"{table['source']}: {table['conversations']} conversations, listener backchannels {total} per "
            f"second of the speaker's turns; by offset from the speaker's IPU end (s):\n" + "\n".join(rows))


def _corpus_arg(values):
    name, directory = values
    if name not in CORPORA:
        raise argparse.ArgumentTypeError(f"unknown corpus {name!r} (known: {', '.join(CORPORA)})")
    return values


# -- the study commands ------------------------------------------------------------------------


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
    analysis = _analysis(args, bars)
    path = write_report(analysis, args.out)
    bars.close()
    audit_trail.record(analysis.engine, audit_trail.command_line_actor(), "exported_report", object=args.study,
                       out=str(args.out))
    print(f"wrote {path}, {path.parent / 'headline.json'} and {path.parent / 'tables'}/")


def cmd_export_dataset(args) -> None:
    from analysis.dataset import export_dataset

    # checked here, not by argparse's choices: one line, before the study is loaded
    if args.share_level is not None and args.share_level not in SHARE_LEVELS:
        raise StudyCommandError(f"unknown --share-level {args.share_level!r}: one of {', '.join(SHARE_LEVELS)} "
                                "(none: the study team's own export)")
    analysis = _analysis(args)
    out = export_dataset(analysis, args.out, args.share_level)
    audit_trail.record(analysis.engine, audit_trail.command_line_actor(), "exported_dataset", object=args.study,
                       out=str(out), share_level=args.share_level)
    manifest = json.loads((Path(out) / "manifest.json").read_text())
    shared = (f"; speech of {manifest['participants_with_audio']} of {manifest['participants']} participants "
              f"({', '.join(f'{n} left out: {why}' for why, n in manifest['left_out'].items()) or 'none left out'})"
              if args.share_level else "")
    print(f"wrote the dataset to {out} (datasets.load_from_disk){shared}; its manifest: {Path(out) / 'manifest.json'}")


def cmd_payments(args) -> None:
    engine = _engine(args)
    try:
        table = payments_table(engine, args.study)
    except LookupError as exc:  # an unknown study
        raise StudyCommandError(str(exc)) from None
    write_payments(table, args.out)
    audit_trail.record(engine, audit_trail.command_line_actor(), "exported_payments", object=args.study,
                       out=str(args.out))
    print(f"wrote {len(table)} rows to {args.out}: pseudonyms with their Prolific IDs (mode 0600; keep it out of "
          "shared folders and exports)")


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


def _study_options(p, study_default: str | None = None, study: bool = True) -> None:
    if not study:
        pass
    elif study_default is None:
        p.add_argument("--study", required=True, help="the study's name")
    else:
        p.add_argument("--study", default=study_default, help=f"the study's name (default {study_default})")
    p.add_argument("--database-url", help="SQLAlchemy URL (default: $DATABASE_URL or SQLite in the data root)")
    p.add_argument("--data-root", help="folder of the recordings (default: $TURNTAKING_DATA or ./data)")
    p.add_argument("--checkpoint", help="judge checkpoint (default: the packaged one)")


def _add_study_commands(sub) -> None:
    p = sub.add_parser("fill", help="compute and cache every result of a study's views now (progress bars)")
    _study_options(p)
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=cmd_fill)

    p = sub.add_parser("worker", help="the background analysis worker: fills the caches of queued studies")
    _study_options(p, study=False)
    p.add_argument("--once", action="store_true", help="stop when no study is queued")
    p.add_argument("--nice", type=int, default=0, help="lower the worker's CPU priority by this much (app.py: 10)")
    p.add_argument("--parent-pid", type=int, help="stop when this process (the server that started it) is gone")
    p.set_defaults(func=cmd_worker)

    p = sub.add_parser("report", help="a study's HTML report, tables (CSV, Parquet) and headline JSON")
    _study_options(p)
    p.add_argument("--out", required=True, help="output folder")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("export-dataset", help="a study's sessions, pairs and judgments as a Hugging Face dataset")
    _study_options(p)
    p.add_argument("--out", required=True, help="output folder (datasets.load_from_disk)")
    p.add_argument("--share-level", metavar="|".join(SHARE_LEVELS),
                   help="audio and words only of participants who agreed to share at this level, the others' "
                        "sessions as measures (default: the study team's own export, everyone's)")
    p.set_defaults(func=cmd_export_dataset)

    p = sub.add_parser("payments", help="pseudonyms with their Prolific IDs, completion codes and time taken: "
                                        "the one table that names people")
    _study_options(p)
    p.add_argument("--out", required=True, help="CSV file to write")
    p.set_defaults(func=cmd_payments)

    p = sub.add_parser("demo", help="seed a study with SIMULATED sessions, pairs and judgments")
    _study_options(p, study_default="demo")
    p.add_argument("--sessions-per-system", type=int, default=6)
    p.add_argument("--seconds", type=float, default=90.0, help="length of each simulated session")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-audio", action="store_true", help="voice activity only, no synthetic recordings")
    p.add_argument("--switchboard", help="Switchboard folder: also score the judge's human reference on it")
    p.add_argument("--reference-conversations", type=int, default=20)
    p.set_defaults(func=cmd_demo)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m analysis", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p):
        add_event_options(p)
        p.add_argument("--corpus", nargs=2, metavar=("NAME", "DIR"), help="a corpus: switchboard DIR")
        p.add_argument("--json", action="store_true", help="print JSON")
        p.add_argument("--quiet", action="store_true", help="no progress bar")

    stats = sub.add_parser("stats", help="turn-taking statistics of a recording or a corpus")
    stats.add_argument("path", nargs="?", help="audio file, Switchboard conversation dir/word file, or voice-activity JSON")
    stats.add_argument("--vad", choices=VAD_BACKENDS, help="voice activity backend (default: silero for audio)")
    stats.add_argument("--rttm", help="RTTM file with the speakers of a mono mixture")
    stats.add_argument("--transcript", help="voice-activity JSON with 'words' to use instead of ASR")
    stats.add_argument("--no-asr", action="store_true", help="skip ASR (no speaking or backchannel rates)")
    stats.add_argument("--no-events", action="store_true", help="leave the event lists out of the JSON")
    stats.add_argument("--split", help="named split of the corpus (train, val)")
    stats.add_argument("--split-list", help="file of conversation ids, one a line")
    add_ray_options(stats)
    common(stats)
    stats.set_defaults(func=cmd_stats)

    ref = sub.add_parser("reference", help="build the packaged human-human reference table")
    ref.add_argument("--splits", nargs="+", default=["train", "val"])
    ref.add_argument("--out", help="where to write the JSON (default: the packaged table)")
    ref.add_argument("--through-pipeline", action="store_true",
                     help="the like-with-like reference: validation conversations rendered as speech and "
                          "measured as a session is")
    ref.add_argument("--conversations", type=int, default=40, help="with --through-pipeline: the first N")
    ref.add_argument("--seconds", type=float, default=120.0, help="with --through-pipeline: the first S seconds of each")
    ref.add_argument("--work-dir", default="switchboard-renderings",
                     help="with --through-pipeline: where renderings are kept (a rerun reuses them)")
    common(ref)
    ref.set_defaults(func=cmd_reference)

    bias = sub.add_parser("pipeline-bias", help="how far the session pipeline moves each statistic: Switchboard "
                          "rendered as speech in several voices, before and after the packaged corrections")
    bias.add_argument("--work-dir", default="switchboard-renderings", help="where renderings are kept (reused)")
    bias.add_argument("--seconds", type=float, default=120.0, help="the first S seconds of each conversation")
    bias.add_argument("--conversations", type=int, help="at most N conversations per condition (a quick look)")
    bias.add_argument("--fit", action="store_true", help="also choose the settings on the fitting conditions")
    bias.add_argument("--markdown", help="write the bias tables as Markdown here")
    common(bias)
    bias.set_defaults(func=cmd_pipeline_bias)

    timing = sub.add_parser("backchannel-timing",
                            help="fit the packaged table of when listeners backchannel (Switchboard train)")
    timing.add_argument("--splits", nargs="+", default=["train"])
    timing.add_argument("--out", help="where to write the JSON (default: the packaged table)")
    common(timing)
    timing.set_defaults(func=cmd_backchannel_timing)

    _add_study_commands(sub)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    keep_freed_memory()  # a one-shot command: fewer page faults (7 s of system time an hour of audio)
    if getattr(args, "corpus", None):
        try:
            _corpus_arg(args.corpus)
        except argparse.ArgumentTypeError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    elif args.command in ("reference", "backchannel-timing", "pipeline-bias"):
        print(f"error: {args.command} needs --corpus switchboard DIR", file=sys.stderr)
        return 2
    try:
        result = args.func(args)
        if result is None:  # the study commands print their own output
            return 0
    except (InputError, CorpusError, ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        json.dump(result, sys.stdout, indent=1)
        print()
    elif "bins" in result:  # backchannel-timing
        print(_format_backchannel_timing(result))
    elif "run_dir" in result:  # a --run-dir run: one table a recording
        print("\n\n".join(_format_table(stats) for stats in result["results"].values()))
    else:
        print(_format_table(result))
    return getattr(args, "exit_status", 0)


if __name__ == "__main__":
    sys.exit(main())
