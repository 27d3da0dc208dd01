"""A task set run against a dialogue system, through the headless call path of
`python -m studies call` (`studies.offline_call`: real-time 20 ms blocks, the two-channel
recorder), then scored.

    RUN/set/...                       the task set (made here from --seed unless --set names one)
    RUN/<task>/<k>/input.wav          what the system heard (the recording's channel 0)
                  /output.wav         what it said (channel 1): sample-aligned, the same length
                  /pause.json ...     FDB's files; a scheduled event's times are where it was played
                  /call.json          the call's summary (done marker: a run resumes after it)
                  /call.jsonl         the call's timing log
                  /timeline.json      the example on one time axis, where its score was decided
                                      (examiner/timelines.py; stored per example with --store)
    RUN/scores.json                   FDB's scores per task, the overlap probes, and the monologues'
                                      backchannels against Switchboard's listeners
                                      (examiner/switchboard_backchannels.py)

Scheduled tasks place their event on the system's speech onset (examiner/scheduling.py). The
embedded systems' models load once and every call shares them.

With `workers` (or `ray_address`) the calls are Ray tasks (jobs/ray_runs.py: resumable, their
summaries also in RUN/ray/results/*.parquet), up to `workers` at once, each Ray worker process
loading an embedded system's models once. Calls at once share the machine: on the 2-core machine
an embedded system's answers come later than in calls one at a time, so many examples at once
suit a system served elsewhere (serve-realtime on other machines, a Moshi server per worker).
"""

from __future__ import annotations

import functools
import json
import shutil
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import soundfile
from tqdm import tqdm

from examiner.fdb_folders import TASKS as FDB_TASKS
from examiner.fdb_folders import score_folder
from examiner.output_words import fdb_speech_segments, output_signal
from examiner.overlap_events import event_response
from examiner.reply_report import REPLY_TASKS, reply_report
from examiner.scheduling import ScheduledFeed
from examiner.switchboard_backchannels import backchannel_timing_report
from examiner.table import system_label, table_row
from examiner.task_sets import SCHEDULED_TASKS, TASK_NAMES, make_task_set
from examiner.timelines import example_timeline
from jobs.ray_runs import run_items
from speech.audio import load_audio
from storage.db import init_db, make_engine, session_scope
from storage.records import save_examiner_examples, save_examiner_run
from studies.offline_call import FixedFeed, run_offline_feed
from studies.reply_quality import packaged_scorer
from systems import make_system, system_kind
from systems.stages import load_stages

SAMPLE_RATE = 16000
EVENT_FILES = {"user_interruption": "interrupt.json"}  # the others: FDB v1.5's metadata.json
KEPT_FILES = ("pause.json", "turn_taking.json", "backchannel_reference.json")


def system_maker(kind: str, config: dict):
    """A function that builds a fresh system for one call; an embedded kind's models load once, here."""
    spec = system_kind(kind)
    spec.parse(config)  # SystemError_ for a bad config before anything loads
    if not spec.embedded:
        return lambda: make_system(kind, config)
    components = load_stages(spec.parse(config))
    return lambda: make_system(kind, config, components=components)


def mono(path: Path) -> np.ndarray:
    samples, _ = load_audio(path, SAMPLE_RATE)
    return samples[0]


def feed_for(example: Path, facts: dict):
    user = mono(example / "input.wav")
    if facts["task"] not in SCHEDULED_TASKS:
        return FixedFeed(user)
    lead = user[:int(round(facts["turn_end"] * SAMPLE_RATE))]
    after = int(round(facts["schedule"]["after_system_onset_s"] * SAMPLE_RATE))
    return ScheduledFeed(lead, mono(example / facts["schedule"]["event"]), after)


def run_example(example: Path, out: Path, make_system_for_call, label: str) -> dict:
    """One call of one example; its summary (read back when the example was done before)."""
    done = out / "call.json"
    if done.exists():
        return json.loads(done.read_text())
    if out.exists():  # an interrupted call: start it again
        shutil.rmtree(out)
    out.mkdir(parents=True)
    began = time.monotonic()
    facts = json.loads((example / "example.json").read_text())
    feed = feed_for(example, facts)
    call = run_offline_feed(feed, out / "call.wav", system=make_system_for_call(), log_path=out / "call.jsonl")
    audio, _ = load_audio(out / "call.wav", SAMPLE_RATE, require_channels=2)
    soundfile.write(str(out / "input.wav"), audio[0], SAMPLE_RATE, subtype="PCM_16")
    soundfile.write(str(out / "output.wav"), audio[1], SAMPLE_RATE, subtype="PCM_16")
    (out / "call.wav").unlink()
    for name in KEPT_FILES:
        if (example / name).exists():
            shutil.copy(example / name, out / name)
    summary = {"system": label, "example": str(example), "duration_s": round(call.duration_s, 3),
               "late_blocks": call.late_blocks, "wall_s": None}
    if isinstance(feed, ScheduledFeed):
        start = feed.event_start / SAMPLE_RATE
        end = start + len(feed.event) / SAMPLE_RATE
        summary.update({"system_onset_s": None if feed.onset is None else feed.onset / SAMPLE_RATE,
                        "event": [round(start, 4), round(end, 4)], "onset_heard": feed.onset is not None})
        _write_event_files(out, facts, start, end)
    summary["wall_s"] = round(time.monotonic() - began, 3)  # the call and writing its files
    facts["run"] = summary
    (out / "example.json").write_text(json.dumps(facts, indent=1))
    done.write_text(json.dumps(summary, indent=1))
    return summary


def _write_event_files(out: Path, facts: dict, start: float, end: float) -> None:
    """FDB's interrupt.json / v1.5's metadata.json with the times the event was actually played."""
    stamp = [round(start, 4), round(end, 4)]
    if facts["task"] == "user_interruption":
        data = [{"context": facts["text"], "interrupt": facts["event_text"], "timestamp": stamp}]
        (out / "interrupt.json").write_text(json.dumps(data, indent=1))
    else:
        data = {"context_text": facts["text"], "current_turn_text": facts["event_text"], "timestamps": stamp}
        (out / "metadata.json").write_text(json.dumps(data, indent=1))


def overlap_report(task_dir: Path, task: str) -> dict:
    """The overlap probes over a task's examples (examiner/overlap_events.py)."""
    rows = []
    for folder in sorted((p for p in task_dir.iterdir() if (p / "call.json").exists()), key=lambda p: int(p.name)):
        call = json.loads((folder / "call.json").read_text())
        start, end = call["event"]
        response = event_response(fdb_speech_segments(output_signal(folder / "output.wav")), start, end)
        rows.append({"example": folder.name, "event": call["event"], "onset_heard": call["onset_heard"],
                     **asdict(response)})
    speaking = [r for r in rows if r["speaking"]]
    stops = [r["stop_time_s"] for r in speaking]
    return {"task": task, "examples": len(rows),
            "speaking_at_event": len(speaking) / len(rows) if rows else None,
            "stopped": (sum(r["stopped"] for r in speaking) / len(speaking)) if speaking else None,
            "stop_time_s": float(np.mean(stops)) if stops else None,
            "onsets_heard": sum(r["onset_heard"] for r in rows), "rows": rows}


def score_run(run: Path, tasks, progress: bool = True) -> dict:
    scores = {}
    for task in tasks:
        task_dir = run / task
        if not task_dir.is_dir():
            continue
        entry = {}
        if task in FDB_TASKS:
            entry["fdb"] = score_folder(task_dir, task, progress=progress)
        if task in SCHEDULED_TASKS:
            entry["overlap"] = overlap_report(task_dir, task)
        if task == "backchannel":
            entry["switchboard"] = backchannel_timing_report(task_dir, entry["fdb"]["rows"])
        if task in REPLY_TASKS:  # after FDB's scoring, which writes the answers' words
            entry["replies"] = reply_report(task_dir, packaged_scorer())
        scores[task] = entry
    return scores


def write_timelines(run: Path, scores: dict, progress: bool = True) -> int:
    """Each called example's timeline.json, from its files and its rows in `scores`; how many."""
    folders = [(task, folder) for task in scores for folder in sorted(
        (p for p in (run / task).iterdir() if (p / "call.json").exists()), key=lambda p: int(p.name))]
    for task, folder in tqdm(folders, desc="timelines", unit="example", disable=not progress):
        fdb_rows = {r["example"]: r for r in scores[task].get("fdb", {}).get("rows", [])}
        overlap_rows = {r["example"]: r for r in scores[task].get("overlap", {}).get("rows", [])}
        timeline = example_timeline(folder, fdb_rows.get(folder.name), overlap_rows.get(folder.name))
        (folder / "timeline.json").write_text(json.dumps(timeline))
    return len(folders)


def run_timelines(run_dir) -> list[dict]:
    """The timelines a run folder holds (written by `run_system`)."""
    return [json.loads(p.read_text()) for p in sorted(Path(run_dir).glob("*/*/timeline.json"))]


@functools.lru_cache(maxsize=2)
def _worker_system_maker(kind: str, config_json: str):
    """A Ray worker process's system maker: an embedded system's models load once per process."""
    return system_maker(kind, json.loads(config_json))


def call_item(input_wav: str, params: dict) -> dict:
    """One example's call as a Ray task (`run_items`): the example folder holding `input_wav`."""
    example = Path(input_wav).parent
    make = _worker_system_maker(params["kind"], json.dumps(params["config"], sort_keys=True))
    return run_example(example, Path(params["out"]) / example.parent.name / example.name, make, params["label"])


def _calls_on_ray(examples: list[Path], out: Path, kind: str, config: dict, label: str, workers, ray_address,
                  progress: bool) -> None:
    params = {"kind": kind, "config": config, "label": label, "out": str(out)}
    summary = run_items([str(e / "input.wav") for e in examples], call_item, params, out / "ray", workers=workers,
                        ray_address=ray_address, progress=progress)
    if summary.failed:
        first = summary.failed[0]
        raise ValueError(f"{len(summary.failed)} of {len(examples)} calls failed on Ray; the first, "
                         f"{Path(first['item']).parent}: {first['error']}")


def run_system(out, kind: str = "cascaded", config: dict | None = None, tasks=TASK_NAMES, task_set=None,
               per_task: int = 2, seed: int = 0, progress: bool = True, workers: int | None = None,
               ray_address: str | None = None, on_call=None) -> dict:
    """Every example of the task set through one system, then the scores; resumes a run folder.
    With `workers` > 1 or `ray_address`, the calls not done yet run as Ray tasks (module doc).
    `on_call(done, total)` hears of each example's call finished (or found done)."""
    config = dict(config or {})
    kind = system_kind(kind).name  # an alias runs and is stored as its kind
    system_kind(kind).parse(config)  # a bad config: refused before any work
    out = Path(out)
    if task_set is None:
        task_set = out / "set"
        if not (task_set / "manifest.json").exists():
            make_task_set(task_set, tasks, per_task, seed, progress)
    task_set = Path(task_set)
    examples = [p for task in tasks for p in sorted((task_set / task).glob("*/example.json"),
                                                      key=lambda p: int(p.parent.name))]
    if not examples:
        raise ValueError(f"{task_set} holds no examples of {', '.join(tasks)} (python -m examiner make-tasks)")
    label = system_label(kind, config)
    todo = [p.parent for p in examples if not (out / p.parent.parent.name / p.parent.name / "call.json").exists()]
    on_ray = bool(todo) and ((workers or 1) > 1 or bool(ray_address))
    if on_ray:
        _calls_on_ray(todo, out, kind, config, label, workers, ray_address, progress)
    make = system_maker(kind, config) if todo and not on_ray else None
    calls = []
    for example in tqdm([p.parent for p in examples], desc=f"{kind} calls", unit="call", disable=not progress):
        calls.append(run_example(example, out / example.parent.name / example.name, make, label))
        if on_call is not None:
            on_call(len(calls), len(examples))
    began = time.monotonic()
    scores = score_run(out, tasks, progress)
    write_timelines(out, scores, progress)
    score_wall = time.monotonic() - began
    walls = [c["wall_s"] for c in calls if c.get("wall_s") is not None]
    report = {"system": label, "kind": kind, "config": config, "task_set": str(task_set), "run_dir": str(out),
              "calls": len(calls), "ray_workers": (workers or 1) if on_ray and not ray_address else None,
              "ray_address": ray_address if on_ray else None,
              "late_blocks": sum(c["late_blocks"] for c in calls),
              "audio_s": round(sum(c["duration_s"] for c in calls), 3), "call_wall_s": round(sum(walls), 3),
              "score_wall_s": round(score_wall, 3),
              "scores": scores, "table": table_row(scores)}
    (out / "scores.json").write_text(json.dumps(report, indent=1))
    return report


def store_run(report: dict, url: str) -> int:
    """The run's scores and its examples' timelines in the database at `url` (migrated first); the row's id."""
    engine = make_engine(url)
    try:
        init_db(engine)
        manifest = json.loads((Path(report["task_set"]) / "manifest.json").read_text())
        with session_scope(engine) as session:
            row = save_examiner_run(session, report["system"], report["kind"], report["config"], manifest,
                                    report["calls"], report["table"], report["scores"], report["run_dir"])
            save_examiner_examples(session, row, run_timelines(report["run_dir"]))
            return row.id
    finally:
        engine.dispose()


def format_run(report: dict) -> str:
    lines = [f"{report['system']}: {report['calls']} call(s) from {report['task_set']} "
             f"({report['late_blocks']} late block(s))"]
    for key, value in report["table"].items():
        if isinstance(value, list):
            shown = "[" + ", ".join(f"{v:.3f}" for v in value) + "]"
        else:
            shown = "-" if value is None else f"{value:.3f}"
        lines.append(f"  {key:32s} {shown}")
    lines.append("  (interruption_judge: FDB's GPT-4 rating has no offline equal; left empty)")
    return "\n".join(lines)
