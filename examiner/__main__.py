"""Command line of the automatic examiner.

    python -m examiner fdb DIR --task pause_handling|smooth_turn_taking|user_interruption|backchannel [--json]
        # FDB v1/v1.5's scores of a folder of examples in its layout (output.json made by the
        # packaged ASR where missing)
    python -m examiner make-tasks OUT [--tasks all|pause_handling,...] [--per-task 6] [--seed 0]
                                      [--questions fitting|choosing|test|FILE]
                                      [--voices fitting|choosing|test[-noisy]] [--json]
        # task sets in FDB's layout spoken by the packaged voices, reproducible from the seed
    python -m examiner run --system cascaded [--config JSON] --tasks all --out RUN [--set SET | --per-task 2 --seed 0]
                           [--workers N | --ray-address A] [--store]
        # every example through the system on the headless call path of `python -m studies call`,
        # then scored, each example's timeline written (and stored with --store); a run folder
        # resumes where it stopped; --workers N: N calls at once as Ray tasks
    python -m examiner decision-cues RUN [RUN ...] [--slow-s 0.45] [--json OUT]
        # where the predictive system's answer latency comes from, cue by cue, in run folders
    python -m examiner compare FIRST SECOND [--late-s 0.6] [--json]
        # two runs on one task set (two systems, or two versions of one) paired example by example:
        # each run's TOR, mean latency and share of late answers with bootstrap intervals, and the
        # paired differences with theirs
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from examiner.decision_cues import decision_cues, format_decision_cues
from examiner.fdb_folders import TASKS, FdbLayoutError, format_report, score_folder
from examiner.paired_runs import LATE_S, PairedRunsError, compare_runs, format_comparison
from examiner.runs import format_run, run_system, store_run
from examiner.test_set import TestSetError, check_test_run, record_test_run
from examiner.task_sets import QUESTION_SETS, TASK_NAMES, make_task_set, parse_tasks, question_set
from examiner.voices import VOICE_SETS
from speech.audio import AudioError
from speech.models import ModelError
from storage.db import DatabaseError, default_database_url
from studies.offline_call import OfflineCallError
from systems import SystemError_
from systems.kinds import KIND_NAMES, system_kind
from turntaking.commands import REPORT_ERRORS, json_object_option, report_command


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examiner", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    fdb = commands.add_parser("fdb", help="score a folder of examples in Full-Duplex-Bench's layout")
    fdb.add_argument("dir", help="folder of example folders (input.wav, output.wav, *.json)")
    fdb.add_argument("--task", required=True, choices=TASKS)
    fdb.add_argument("--no-write", action="store_true",
                     help="do not write the packaged ASR's output.json into example folders that lack one")
    fdb.add_argument("--json", action="store_true", help="print the report as JSON")
    fdb.set_defaults(func=report_command(
        lambda args: score_folder(args.dir, args.task, write=not args.no_write),
        format_report, (FdbLayoutError, AudioError, *REPORT_ERRORS)))
    tasks = commands.add_parser("make-tasks", help="write task sets in FDB's layout from the packaged voices")
    tasks.add_argument("out", help="folder to write (OUT/<task>/<k>/input.wav, ...)")
    tasks.add_argument("--tasks", default="all", help=f"'all' or a comma list of {', '.join(TASK_NAMES)}")
    tasks.add_argument("--per-task", type=int, default=6, help="examples per task (default 6)")
    tasks.add_argument("--seed", type=int, default=0, help="the same seed writes the same set (default 0)")
    tasks.add_argument("--questions", metavar="SET|FILE", default="fitting",
                       help=f"smooth turn-taking's questions: a named set ({', '.join(QUESTION_SETS)}: the examiner's "
                            "six settings were fitted on, twelve that choose between settings, the test set's "
                            "24) or a file, one a line")
    tasks.add_argument("--voices", default="fitting", type=_voice_set, metavar="SET",
                       help="who speaks: the voices the systems' settings were fitted on (fitting, the default), "
                            "those that choose between settings (choosing; held-out is its earlier name), the test "
                            "set's (test), or any of them in a reverberant room with noise 15 dB below them (-noisy)")
    tasks.add_argument("--json", action="store_true", help="print the summary as JSON")
    tasks.set_defaults(func=report_command(
        _make_tasks,
        lambda r: f"{r['examples']} example(s) of {', '.join(r['tasks'])} (seed {r['seed']}, {r['voice_set']} voices) "
                  f"in {r['out']}"))
    run = commands.add_parser("run", help="run a task set against a dialogue system and score it")
    run.add_argument("--system", default="cascaded", help=f"system kind: {', '.join(KIND_NAMES)} (default: cascaded)")
    run.add_argument("--config", default="{}", help="the system's config as JSON (as `python -m studies call`)")
    run.add_argument("--tasks", default="all", help=f"'all' or a comma list of {', '.join(TASK_NAMES)}")
    run.add_argument("--out", required=True, help="run folder (resumes when it exists)")
    run.add_argument("--set", help="a task set made by make-tasks (default: made in RUN/set from --seed)")
    run.add_argument("--per-task", type=int, default=2, help="examples per task when the set is made here (default 2)")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--workers", type=int, default=1,
                     help="calls at once, as Ray tasks (default 1: one after another, in this process); on this "
                          "machine an embedded system answers later when its calls share the cores")
    run.add_argument("--ray-address", help="run the calls on this Ray cluster (e.g. auto) instead of locally")
    run.add_argument("--store", action="store_true", help="store the scores per system in the database")
    run.add_argument("--url", help="database URL for --store (default: DATABASE_URL, else SQLite in the data root)")
    run.add_argument("--final", action="store_true",
                     help="the settings are final: run the test set (once; recorded in examiner/data/test_set_runs.jsonl)")
    run.add_argument("--again", metavar="REASON", help="run the test set again for this system kind, and why")
    run.add_argument("--json", action="store_true", help="print the report as JSON")
    run.set_defaults(func=report_command(_run, format_run, (FdbLayoutError, AudioError, SystemError_, OfflineCallError,
                                                            ModelError, DatabaseError, TestSetError, *REPORT_ERRORS)))
    cues = commands.add_parser("decision-cues", help="the predictive system's latency parts and cues per answer")
    cues.add_argument("runs", nargs="+", metavar="RUN", help="run folders of `run --system predictive`")
    cues.add_argument("--slow-s", type=float, default=0.45, help="an answer later than this is slow (default 0.45)")
    cues.add_argument("--json", dest="json_out", metavar="OUT", help="write every answer's row here, by run")
    cues.set_defaults(func=report_command(lambda args: decision_cues(args.runs, args.slow_s, args.json_out),
                                          format_decision_cues))
    compare = commands.add_parser("compare", help="two runs on one task set, paired example by example")
    compare.add_argument("first", help="a run folder (e.g. the baseline's)")
    compare.add_argument("second", help="a run folder on the same task set (differences are second less first)")
    compare.add_argument("--late-s", type=float, default=LATE_S,
                         help=f"an answer later than this is late (default {LATE_S:g})")
    compare.add_argument("--json", action="store_true", help="print the report as JSON")
    compare.set_defaults(func=report_command(lambda args: compare_runs(args.first, args.second, args.late_s),
                                             format_comparison, (PairedRunsError, *REPORT_ERRORS)))
    args = parser.parse_args(argv)
    return args.func(args)


def _make_tasks(args) -> dict:
    name, questions = question_set(args.questions)
    return make_task_set(args.out, parse_tasks(args.tasks), args.per_task, args.seed, questions=questions,
                         voices=args.voices, question_set_name=name)


def _voice_set(name: str):
    if name not in VOICE_SETS:
        raise argparse.ArgumentTypeError(f"invalid choice: {name!r} (fitting, choosing or test, each also -noisy)")
    return VOICE_SETS[name]


def _run(args) -> dict:
    config = json_object_option(args.config)
    if args.workers < 1:
        raise ValueError(f"--workers must be at least 1, got {args.workers}")
    manifest_file = Path(args.set) / "manifest.json" if args.set else None
    manifest = json.loads(manifest_file.read_text()) if manifest_file and manifest_file.exists() else {}
    kind = system_kind(args.system).name
    check_test_run(manifest, kind, args.final, args.again)
    report = run_system(args.out, args.system, config, parse_tasks(args.tasks), args.set, args.per_task, args.seed,
                        workers=args.workers, ray_address=args.ray_address)
    if manifest and args.final:
        report["test_set_record"] = record_test_run(report, manifest, args.again)
    if args.store:
        report["stored"] = {"examiner_run_id": store_run(report, args.url or default_database_url())}
    return report


if __name__ == "__main__":
    sys.exit(main())
