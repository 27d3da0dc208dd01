"""Run one function over many files as Ray tasks, resumably, with results written to Parquet.

    summary = run_items(paths, compute, params, run_dir, workers=2)   # local Ray, 2 workers
    rows = read_results(run_dir, summary.keys)                       # {item: result dict}
    summary, rows = run_corpus(paths, compute, params, args)         # both, for a command line

`compute(path: str, params: dict) -> dict` is a module-level function (Ray pickles it by name).
Each item's key is sha256(the file's sha256 + task name + params): a key already in the run folder's
results is skipped, so a rerun after a crash or with more files does only the new work. The run
folder holds `results/part-*.parquet` (columns key, item, seconds, result as JSON), flushed as
items finish, and `failures.jsonl` (key, item, one-line error) of the latest run; a failed item
does not stop the run and is tried again next time.

Local mode (`ray.init(num_cpus=workers)`) is the default, `ray_address` joins a cluster; at most
`workers` tasks are in flight either way, so 1 vs 2 workers compares like with like.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from storage.files import sha256_file
from turntaking.commands import one_line

FLUSH_ROWS = 32  # a part file per this many results ...
FLUSH_SECONDS = 10.0  # ... or per this long, so a killed run loses little work


@dataclass
class RunSummary:
    run_dir: Path
    computed: int = 0  # items computed by this run
    skipped: int = 0  # items whose results were already in the run folder
    failed: list[dict] = field(default_factory=list)  # {"item", "key", "error"}
    keys: dict[str, str] = field(default_factory=dict)  # item -> key, of every item asked for

    def line(self) -> str:
        return (f"{self.computed} computed, {self.skipped} already done, {len(self.failed)} failed; "
                f"results in {self.run_dir / 'results'}")

    def as_dict(self) -> dict:
        """What a command's report says of the run."""
        return {"run_dir": str(self.run_dir), "computed": self.computed, "skipped": self.skipped,
                "failed": self.failed}


def corpus_items(source, suffixes: tuple[str, ...]) -> list[str]:
    """The files of a directory with one of `suffixes`, or the paths listed in a manifest file
    (one a line, relative to the manifest; blank lines and # comments skipped)."""
    source = Path(source)
    if source.is_dir():
        items = sorted(str(p) for p in source.iterdir() if p.is_file() and p.suffix.lower() in suffixes)
        if not items:
            raise ValueError(f"{source} holds no {' or '.join(suffixes)} files")
        return items
    if not source.is_file():
        raise FileNotFoundError(f"not found: {source}")
    lines = [line.strip() for line in source.read_text().splitlines()]
    items = [str((source.parent / line).resolve()) for line in lines if line and not line.startswith("#")]
    if not items:
        raise ValueError(f"manifest {source} lists no files")
    return items


def given_items(paths, suffixes: tuple[str, ...]) -> list[str]:
    """The files given, or the files of the one directory or manifest (.txt) given (`corpus_items`)."""
    if len(paths) == 1 and (Path(paths[0]).is_dir() or Path(paths[0]).suffix == ".txt"):
        return corpus_items(paths[0], suffixes)
    return [str(p) for p in paths]


def item_key(path, task: str, params: dict) -> str:
    task_params = json.dumps({"task": task, "params": params}, sort_keys=True, default=str)
    return hashlib.sha256(f"{sha256_file(path)}|{task_params}".encode()).hexdigest()


def _compute_one(compute, item: str, params: dict):
    """The Ray task: ("ok", result JSON, seconds) or ("error", one-line message, seconds)."""
    start = time.perf_counter()
    try:
        result = json.dumps(compute(item, params), default=float)
        return "ok", result, time.perf_counter() - start
    except Exception as exc:  # a bad item is reported, never stops the run
        return "error", f"{exc.__class__.__name__}: {one_line(exc)}", time.perf_counter() - start


def _done_keys(results_dir: Path) -> set[str]:
    if not any(results_dir.glob("part-*.parquet")):
        return set()
    return set(pq.read_table(results_dir, columns=["key"]).column("key").to_pylist())


def _write_part(results_dir: Path, rows: list[dict]) -> None:
    if not rows:
        return
    table = pa.Table.from_pylist(rows, schema=pa.schema([("key", pa.string()), ("item", pa.string()),
                                                         ("seconds", pa.float64()), ("result", pa.string())]))
    tmp = results_dir / f".part-{uuid.uuid4().hex}.tmp"
    pq.write_table(table, tmp)
    tmp.rename(results_dir / f"part-{time.time_ns()}-{uuid.uuid4().hex[:8]}.parquet")  # whole files only
    rows.clear()


def _start_ray(workers: int | None, address: str | None) -> bool:
    """Start (or join) Ray unless this process already has; True when this call started it."""
    import ray

    if ray.is_initialized():
        return False
    if address:
        ray.init(address=address, log_to_driver=False)
    else:
        ray.init(num_cpus=workers or 1, include_dashboard=False, log_to_driver=False)
    return True


def run_items(items, compute, params: dict, run_dir, workers: int | None = None, ray_address: str | None = None,
              progress: bool = True, task: str | None = None) -> RunSummary:
    """Compute `compute(item, params)` of every item not done yet as Ray tasks (see the module doc)."""
    import ray

    run_dir = Path(run_dir)
    results_dir = run_dir / "results"
    results_dir.mkdir(parents=True, exist_ok=True)
    task = task or f"{compute.__module__}.{compute.__qualname__}"
    summary = RunSummary(run_dir)
    failures_file = run_dir / "failures.jsonl"
    failures_file.write_text("")  # the latest run's failures only: failed items are tried again

    def fail(item, key, error):
        summary.failed.append({"item": item, "key": key, "error": error})
        with failures_file.open("a") as f:
            f.write(json.dumps(summary.failed[-1]) + "\n")

    done = _done_keys(results_dir)
    todo = []
    for item in map(str, items):
        try:
            key = item_key(item, task, params)
        except OSError as exc:
            fail(item, None, f"{exc.__class__.__name__}: {one_line(exc)}")
            continue
        summary.keys[item] = key
        if key in done:
            summary.skipped += 1
        else:
            done.add(key)  # the same file listed twice is computed once
            todo.append((item, key))
    if not todo:
        return summary

    started = _start_ray(workers, ray_address)
    # Twice as many tasks in flight as workers: a worker that finishes finds its next task already
    # queued instead of waiting for this loop to hand one over.
    limit = 2 * (workers or max(1, int(ray.cluster_resources().get("CPU", 1))))
    remote = ray.remote(num_cpus=1, max_retries=0)(_compute_one)
    bar = tqdm(total=len(summary.keys) + len(summary.failed), initial=summary.skipped + len(summary.failed), unit="item",
               disable=not progress, desc=run_dir.name)
    rows, last_flush, pending, queue = [], time.monotonic(), {}, list(reversed(todo))
    try:
        while queue or pending:
            while queue and len(pending) < limit:
                item, key = queue.pop()
                pending[remote.remote(compute, item, params)] = (item, key)
            [ref], _ = ray.wait(list(pending), num_returns=1)
            item, key = pending.pop(ref)
            try:
                status, value, seconds = ray.get(ref)
            except Exception as exc:  # the worker died (out of memory, a crash in native code)
                status, value, seconds = "error", f"{exc.__class__.__name__}: {one_line(exc)}"[:500], 0.0
            if status == "ok":
                rows.append({"key": key, "item": item, "seconds": seconds, "result": value})
                summary.computed += 1
            else:
                fail(item, key, value)
            bar.update(1)
            bar.set_postfix(failed=len(summary.failed), refresh=False)
            if len(rows) >= FLUSH_ROWS or time.monotonic() - last_flush >= FLUSH_SECONDS:
                _write_part(results_dir, rows)
                last_flush = time.monotonic()
    finally:
        _write_part(results_dir, rows)
        bar.close()
        if started:
            ray.shutdown()
    return summary


def read_results(run_dir, keys: dict[str, str] | None = None) -> dict[str, dict]:
    """{item: result} of a run folder; with `keys` (item -> key, RunSummary.keys) just those items,
    in their order, leaving out items without a result (failed)."""
    results_dir = Path(run_dir) / "results"
    if not any(results_dir.glob("part-*.parquet")):
        return {}
    table = pq.read_table(results_dir, columns=["key", "item", "result"]).to_pylist()
    by_key = {row["key"]: row for row in table}
    if keys is None:
        return {row["item"]: json.loads(row["result"]) for row in sorted(table, key=lambda r: r["item"])}
    return {item: json.loads(by_key[key]["result"]) for item, key in keys.items() if key in by_key}


def run_corpus(items, compute, params: dict, args, progress: bool = True) -> tuple[RunSummary, dict[str, dict]]:
    """`run_items` with a command line's Ray options (`add_ray_options`): every failed item and the
    summary line go to stderr; returns the summary and {item: result} of the items that succeeded."""
    summary = run_items(items, compute, params, args.run_dir, workers=args.workers, ray_address=args.ray_address,
                        progress=progress)
    for failure in summary.failed:
        print(f"failed: {failure['item']}: {failure['error']}", file=sys.stderr)
    print(summary.line(), file=sys.stderr)
    return summary, read_results(args.run_dir, summary.keys)


def add_ray_options(parser) -> None:
    """--run-dir (turns the Ray run on), --workers, --ray-address."""
    group = parser.add_argument_group("corpus run on Ray (resumable, results in RUN_DIR/results/*.parquet)")
    group.add_argument("--run-dir", help="run the items as Ray tasks; results and failures.jsonl go here, "
                                         "items already done there are skipped")
    group.add_argument("--workers", type=int, help="local Ray workers (CPUs; default 1)")
    group.add_argument("--ray-address", help="join this Ray cluster (e.g. ray://head:10001 or auto) instead of "
                                             "starting Ray locally")


def check_ray_options(args) -> None:
    if (args.workers is not None or args.ray_address) and not args.run_dir:
        raise ValueError("--workers and --ray-address go with --run-dir DIR")
    if args.workers is not None and args.workers < 1:
        raise ValueError("--workers must be at least 1")
