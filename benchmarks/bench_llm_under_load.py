"""The cascade's LLM (CTranslate2, SmolLM2-135M) a token at a time, with and without other work on
the machine, for each OpenMP wait policy: why `speech` sets OMP_WAIT_POLICY=PASSIVE.

    .venv/bin/python benchmarks/bench_llm_under_load.py [--threads 2] [--busy 1] [--replies 5]

Each policy runs in a fresh process (libgomp reads the policy once, when CTranslate2 loads) and
answers the same question `--replies` times (40 tokens, greedy); `--busy N` keeps N other
processes spinning on the cores meanwhile, as a second call or the analysis worker would. Prints
ms per token (median over replies) and the CPU seconds the process used.

Measured on the 2-core machine (24 Nov 2026; other jobs running at load 1.3-3.8, so the "0
busy" rows are not a quiet machine), 2 threads, ms a token and CPU s for 5 replies:

    libgomp setting           0 busy          1 busy
    ACTIVE (spin)             28.6 ms  16 s   101 ms  42 s   (513 ms, 148 s seen at load ~2 + a call)
    PASSIVE (sleep)           45.7 ms  18 s    72 ms  16 s
    GOMP_SPINCOUNT=20000      26.0 ms  15 s   416 ms  58 s
    GOMP_SPINCOUNT=2000       26.8 ms  15 s   127 ms  22 s
    1 thread (default spin)      -              50 ms  16 s

Spinning wins by 17 ms a token only when nothing else runs; with anything else on the cores it
loses several-fold and burns the CPU the other work needs. In a 33 s scripted call (`python -m
studies call`, load ~2) the first reply came 8.7 s after the turn end with the spin (the call was
judged "no answer from the system") and 0.29 s with PASSIVE; 42 against 13 CPU s.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MESSAGES = [{"role": "system", "content": "You are a friendly assistant. Answer briefly."},
            {"role": "user", "content": "What should I bring for a day hike in the mountains?"}]

ONE_POLICY = """
import json, resource, sys, time
from systems.language_models import CTranslate2LLM
threads, replies, messages = int(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3])
llm = CTranslate2LLM(None, threads=threads)
llm.warm(messages[:1])
per_token = []
for _ in range(replies):
    started, pieces = time.perf_counter(), 0
    for _piece in llm.stream(messages, 40):
        pieces += 1
    per_token.append((time.perf_counter() - started) / max(pieces, 1))
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"ms_per_token": 1000 * sorted(per_token)[len(per_token) // 2],
                  "cpu_s": usage.ru_utime + usage.ru_stime}))
"""


def spin(stop) -> None:
    while not stop.is_set():
        pass


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--busy", type=int, default=1, help="other processes keeping a core busy meanwhile")
    ap.add_argument("--replies", type=int, default=5)
    ap.add_argument("--policies", nargs="+", default=["OMP_WAIT_POLICY=ACTIVE", "OMP_WAIT_POLICY=PASSIVE"],
                    help="libgomp settings to compare, each NAME=VALUE[,NAME=VALUE]")
    args = ap.parse_args(argv)
    stop = multiprocessing.Event()
    spinners = [multiprocessing.Process(target=spin, args=(stop,), daemon=True) for _ in range(args.busy)]
    for p in spinners:
        p.start()
    try:
        for policy in args.policies:
            env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
            env.update(dict(setting.split("=", 1) for setting in policy.split(",")), HF_HUB_OFFLINE="1")
            done = subprocess.run([sys.executable, "-c", ONE_POLICY, str(args.threads), str(args.replies),
                                   json.dumps(MESSAGES)], cwd=ROOT, env=env, capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit(f"error: {policy}: {done.stderr.strip().splitlines()[-1:]}")
            result = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"{args.threads} threads, {policy:40s}, {args.busy} busy: {result['ms_per_token']:6.1f} ms a token, "
                  f"{result['cpu_s']:6.1f} CPU s")
    finally:
        stop.set()
        for p in spinners:
            p.join()
    print(f"load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
