"""Corpus scoring as Ray tasks (jobs/ray_runs.py): 1 vs 2 local workers, and the projected
machine-hours per 1,000 hours of two-channel audio.

    .venv/bin/python benchmarks/bench_ray_scoring.py                       # stats of generated audio
    .venv/bin/python benchmarks/bench_ray_scoring.py --files 8 --minutes 2 --no-asr
    .venv/bin/python benchmarks/bench_ray_scoring.py --task naturalness --swb /tmp/swb --files 200

--task stats: `python -m analysis stats` (Silero VAD, Whisper ASR words unless --no-asr, events,
statistics) of FILES two-channel 16 kHz recordings of MINUTES each (espeak-ng dialogues, built by
bench_stats.build_recording and cached under /tmp). --task naturalness: `python -m naturalness
score` (timing-hazard) of FILES Switchboard conversations as voice-activity JSON.

Each worker count gets a fresh local Ray and a fresh run folder; timed is the run itself (all
items, results to Parquet), not Ray's start nor the workers' first import of torch and the
models (a warm-up task each). The target is 2 workers >= 1.8x one worker. The
machine has 2 cores shared with other users: the load averages (/proc/loadavg) before and after
each run are printed next to the timings, read them before trusting a speed-up.

Measured 2026-11-23 on the 2-core AMD EPYC VM, best of N runs.
Idle (load about 1: nothing else running; the run loop keeps two tasks a worker in flight and each
worker is warmed with two items):
    analysis stats --no-asr (Silero VAD), 8 x 8 min, --repeat 3:
        1 worker 9.7 s, 2 workers 4.7 s: 2.03x; 2.51 / 1.24 machine-hours per 1,000 h
        (again: 10.3 s / 5.2 s, 1.99x)
    analysis stats --no-asr, 16 x 2 min, --repeat 3: 5.4 s / 3.1 s: 1.75x (2.79 / 1.59 machine-h);
        shorter items, the same per-item costs of the run loop
    analysis stats with Whisper ASR, 8 x 2 min, --repeat 2:
        1 worker 26.2 s, 2 workers 13.1 s: 2.00x; 27.2 / 13.6 machine-hours per 1,000 h
Shared with other engineers' test suites (load 1.9-4.9, where 2 means both cores busy):
    naturalness score, 1,000 Switchboard conversations (110 h), --repeat 3, load 4.4 / 4.9:
        1 worker 16.5 s, 2 workers 8.0 s: 2.07x; 0.042 / 0.020 machine-hours per 1,000 h
    analysis stats --no-asr, 16 x 2 min: 1.49x; with Whisper ASR, 8 x 2 min: 1.15x
On a busy machine one worker already gets a core while the others' jobs hold the other, so a
second worker has little to gain there.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import soundfile

from analysis.corpus_run import stats_item
from bench_stats import build_recording
from naturalness.corpus_run import naturalness_item
from jobs.ray_runs import run_items
from turntaking.activity import conversation_to_json
from turntaking.events import EventParams
from turntaking.switchboard import conversation_ids, load_conversation


def load_averages() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def audio_corpus(files: int, minutes: float) -> list[str]:
    """FILES recordings of MINUTES each (different seeds: different dialogues), cached under /tmp."""
    root = Path(tempfile.gettempdir()) / f"bench_ray_scoring_audio_{minutes:g}min"
    paths = []
    for seed in range(files):
        path = root / f"dialogue{seed:03d}.wav"
        if not path.exists():
            build_recording(path, minutes, seed=seed)
        paths.append(str(path))
    return paths


def switchboard_corpus(swb: Path, files: int) -> list[str]:
    """FILES Switchboard conversations written as voice-activity JSON under /tmp."""
    root = Path(tempfile.gettempdir()) / "bench_ray_scoring_swb"
    root.mkdir(exist_ok=True)
    paths = []
    for conv_id in conversation_ids(swb, split="train")[:files]:
        path = root / f"{conv_id}.json"
        if not path.exists():
            path.write_text(json.dumps(conversation_to_json(load_conversation(swb, conv_id))))
        paths.append(str(path))
    return paths


def audio_hours(paths: list[str]) -> float:
    if paths[0].endswith(".json"):
        return sum(json.loads(Path(p).read_text())["duration"] for p in paths) / 3600
    return sum(soundfile.info(p).duration for p in paths) / 3600


def timed_run(paths, warm_up, compute, params, workers: int) -> tuple[float, str, str]:
    """(seconds, load averages before, after) of one fresh run with `workers` local Ray workers."""
    import ray

    ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    run_dir = Path(tempfile.mkdtemp(prefix=f"bench_ray_{workers}w_"))
    try:
        # Warm-up: each worker process imports torch and loads the models once (seconds) before
        # the clock starts; a corpus run pays this once per worker, not per item.
        run_items(warm_up, compute, {**params, "warm_up": True}, run_dir / "warm-up", workers=workers, progress=False)
        before = load_averages()
        start = time.perf_counter()
        summary = run_items(paths, compute, params, run_dir, workers=workers, progress=False)
        seconds = time.perf_counter() - start
        after = load_averages()
    finally:
        ray.shutdown()
        shutil.rmtree(run_dir)
    if summary.failed or summary.computed != len(set(summary.keys.values())):
        raise SystemExit(f"error: the run failed items: {summary.failed[:3]}")
    return seconds, before, after


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--task", choices=("stats", "naturalness"), default="stats")
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--minutes", type=float, default=2.0, help="length of each generated recording (stats)")
    ap.add_argument("--no-asr", action="store_true", help="stats without the Whisper words")
    ap.add_argument("--swb", default="/tmp/swb", help="Switchboard MS-98 directory (naturalness)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per worker count (the fastest is kept)")
    args = ap.parse_args(argv)

    if args.task == "stats":
        paths = audio_corpus(args.files, args.minutes)
        warm_up = audio_corpus(4, 0.2)
        compute = stats_item
        params = {"vad": "silero", "events": EventParams().as_dict(), "transcribe": not args.no_asr,
                  "no_events": True}
        what = f"analysis stats ({'Silero VAD' if args.no_asr else 'Silero VAD + Whisper ASR'})"
    else:
        if not (Path(args.swb) / "swb_ms98_transcriptions").is_dir():
            print(f"error: no Switchboard at {args.swb} (tar xzf .../swb-trainval.tar.gz -C {args.swb})",
                  file=sys.stderr)
            return 2
        paths = switchboard_corpus(Path(args.swb), args.files)
        warm_up = paths  # with other parameters (warm_up): other keys, computed again
        compute, params = naturalness_item, {"scorer": "timing-hazard", "scorer_model": None, "audio_cue": False}
        what = "naturalness score (timing-hazard, Switchboard voice activity)"
    hours = audio_hours(paths)
    print(f"{what}: {len(paths)} files, {hours * 60:.1f} min of two-channel audio")
    print(f"uptime: {load_averages()} (1, 5, 15 min load averages; 2 cores shared with other users)")
    seconds = {}
    for workers in (1, 2):
        runs = [timed_run(paths, warm_up[:2 * workers], compute, params, workers) for _ in range(args.repeat)]
        best, before, after = min(runs)
        seconds[workers] = best
        print(f"{workers} worker{'s' if workers > 1 else ' '}: {best:7.1f} s ({hours * 3600 / best:6.0f}x real time)"
              f"   load before {before}, after {after}   "
              f"-> {best / hours * 1000 / 3600:.3g} machine-hours per 1,000 h of audio")
    speedup = seconds[1] / seconds[2]
    print(f"speed-up 2 vs 1 worker: {speedup:.2f}x (target >= 1.8x: {'met' if speedup >= 1.8 else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
