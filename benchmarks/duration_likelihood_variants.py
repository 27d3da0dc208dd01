"""Development-time check: can any plain reading of "a context-free duration likelihood"
reproduce its reference row on hidden pairs (cut-out answer 82 %, shift instead of hold 99 %) on
the pairs of our three generators?

    PYTHONPATH=.:benchmarks .venv/bin/python benchmarks/duration_likelihood_variants.py
        [--swb /tmp/swb] [--comparator-conversations 600] PAIRS_FOLDER ...

PAIRS_FOLDER: a folder of `benchmarks/turnnat_validation.py` (OUT/GENERATOR-FORM, holding
manifest.jsonl). The events are turnnat_validation's (`clip_events`: gaps, pauses, overlaps and
IPUs joined across 0.2 s), counted on the first --comparator-conversations conversations of the
*train* split. Each kind's log-durations get a Gaussian kernel density (scipy, Scott's bandwidth,
20,000 events a kind at most, read off a grid of 2,000 points from 1 ms to 60 s). Variants:

    kde               -log p(log d | kind)
    kde+prior         ... - log P(kind)                    (turnnat_validation's, with a kernel)
    kde silence       gaps and pauses one kind, "silence"
    kde per second    -log p(d | kind) = -log p(log d | kind) + log d  (density per second, not per log-second)
    kde silence per second
    kde no ipu        silences and overlaps only
    kde turns         turn-level events instead: each floor holding between two floor transfers
                      (its log-duration) and each floor-transfer offset (signed, in seconds; a
                      density on a linear grid), from turntaking.floor_transfer on the clip's IPUs
    kde turns+pauses+ipus   the same plus pauses and IPUs
    kde turns+all     the same plus every kind above

each pooled as the mean per event ("/event") and as the sum per second of the clip ("/s"), 18 in
all. Printed: pair accuracy per type (a tie counts as wrong), as a Markdown table per folder.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from scipy.stats import gaussian_kde
from tqdm import tqdm

from turnnat_validation import TYPES, clip_events, clip_silences
from turntaking.activity import load_conversation_json
from turntaking.events import group_turns
from turntaking.floor_transfer import floor_transfers
from turntaking.switchboard import conversation_ids, load_conversation

GRID = np.linspace(np.log(1e-3), np.log(60.0), 2000)
OFFSET_GRID = np.linspace(-10.0, 10.0, 2000)  # floor-transfer offsets, signed seconds
BASE_KINDS = ("gap", "pause", "overlap", "ipu")
TURN_KINDS = ("floor", "fto")
MAX_FIT_EVENTS = 20_000
VARIANTS = {
    "kde": {},
    "kde+prior": {"prior_term": True},
    "kde silence": {"pool_silences": True},
    "kde per second": {"per_second_density": True},
    "kde silence per second": {"pool_silences": True, "per_second_density": True},
    "kde no ipu": {"kinds": ("gap", "pause", "overlap")},
    "kde turns": {"kinds": TURN_KINDS},
    "kde turns+pauses+ipus": {"kinds": (*TURN_KINDS, "pause", "ipu")},
    "kde turns+all": {"kinds": (*TURN_KINDS, *BASE_KINDS)},
}


def turn_events(conv) -> list[tuple[str, float]]:
    """Every floor-transfer offset of the clip and every floor holding between two transfers."""
    ipus = clip_silences(conv)[0]
    transfers = floor_transfers(tuple(group_turns(ipus[k], ipus[1 - k]) for k in (0, 1)))
    return ([("fto", t.offset_s) for t in transfers]
            + [("floor", after.previous_end - before.next_start) for before, after in zip(transfers, transfers[1:])])


def all_events(conv) -> list[tuple[str, float]]:
    return clip_events(conv) + turn_events(conv)


def grid_value(kind: str, d: float) -> float:
    """Where an event sits on its kind's grid: signed seconds for an offset, else log seconds."""
    return d if kind == "fto" else float(np.log(max(d, 1e-3)))


def fit_log_densities(conversations) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """Each kind's log-density on its grid (log-duration on GRID; an offset on OFFSET_GRID), and each
    kind's -log P(kind) among the four base kinds."""
    durations: dict[str, list[float]] = {}
    for conv in conversations:
        for kind, d in all_events(conv):
            durations.setdefault(kind, []).append(d)
    durations["silence"] = durations["gap"] + durations["pause"]
    rng = np.random.default_rng(0)
    densities = {}
    for kind, values in durations.items():
        x = np.array([grid_value(kind, d) for d in values])
        x = x[rng.choice(len(x), min(len(x), MAX_FIT_EVENTS), replace=False)]
        densities[kind] = gaussian_kde(x).logpdf(OFFSET_GRID if kind == "fto" else GRID)
    total = sum(len(durations[k]) for k in BASE_KINDS)
    prior = {k: -np.log(len(v) / total) for k, v in durations.items()}
    return densities, prior


def event_costs(events, densities, prior, *, prior_term=False, pool_silences=False, per_second_density=False,
                kinds=BASE_KINDS) -> list[float]:
    """The cost of each of a clip's `events` (its all_events) that the variant reads."""
    costs = []
    for kind, d in events:
        if kind not in kinds:
            continue
        if pool_silences and kind in ("gap", "pause"):
            kind = "silence"
        x = grid_value(kind, d)
        cost = -np.interp(x, OFFSET_GRID if kind == "fto" else GRID, densities[kind])
        costs.append(cost + (x if per_second_density else 0.0) + (prior[kind] if prior_term else 0.0))
    return costs


def clip_cost(costs: list[float], duration_s: float, per_second: bool) -> float:
    if per_second:
        return float(np.sum(costs)) / duration_s
    return float(np.mean(costs)) if costs else 0.0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("folders", nargs="+")
    ap.add_argument("--swb", default="/tmp/swb")
    ap.add_argument("--comparator-conversations", type=int, default=600)
    args = ap.parse_args(argv)
    manifests = [Path(f) / "manifest.jsonl" for f in args.folders]
    for m in manifests:
        if not m.is_file():
            ap.error(f"no manifest.jsonl in {m.parent}")
    if not Path(args.swb).is_dir():
        ap.error(f"no Switchboard folder at {args.swb}")
    train = conversation_ids(args.swb, split="train")[: args.comparator_conversations]
    densities, prior = fit_log_densities(load_conversation(args.swb, i)
                                         for i in tqdm(train, desc="fitting on train", unit="conv"))
    for manifest in manifests:
        entries = [json.loads(line) for line in manifest.read_text().splitlines() if line.strip()]
        right: dict[str, dict[str, list[bool]]] = {}
        for e in tqdm(entries, desc=manifest.parent.name, unit="pair"):
            clips = [load_conversation_json(manifest.parent / e[k]) for k in ("natural", "perturbed")]
            events = [all_events(c) for c in clips]  # once a clip, for every variant
            for name, options in VARIANTS.items():
                natural, perturbed = (event_costs(evs, densities, prior, **options) for evs in events)
                for per_second in (False, True):
                    label = f"{name} /{'s' if per_second else 'event'}"
                    won = clip_cost(perturbed, clips[1].duration, per_second) > clip_cost(natural, clips[0].duration,
                                                                                          per_second)
                    right.setdefault(label, {t: [] for t in TYPES})[e["type"]].append(won)
        print(f"\n### {manifest.parent}\n\n| variant | all | " + " | ".join(TYPES) + " |\n|---|---|"
              + "---|" * len(TYPES))
        for label, by_type in right.items():
            every = [w for t in TYPES for w in by_type[t]]
            print(f"| {label} | {100 * np.mean(every):.1f} | "
                  + " | ".join(f"{100 * np.mean(by_type[t]):.1f}" if by_type[t] else "-" for t in TYPES) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
