"""The items of the two test beds: clips of a two-channel conversation with the event they ask
about and its label (understand: does it happen in the clip; predict: will it happen right after),
balanced per bed and event, read and written as JSONL."""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from judge.labels import BC, CHUNK_S, I, T, chunk_states
from judge.metrics import InstanceParams, select_instances
from turntaking.jsonfiles import JsonFileError, read_jsonl

UNDERSTAND_MAX_S = 10.0
PREDICT_CONTEXT_S = 30.0
SAMPLE_RATE = 16000  # of the clips' audio

UNDERSTAND_EVENTS = {"turn_change": T, "backchannel": BC, "interruption": I}
PREDICT_METRICS = {"turn_change": "speak_up", "backchannel": "backchannel", "interruption": "interrupt",
                   "floor_taking_interruption": "handle_interruption"}


class TestbedError(JsonFileError):
    """Bad test-bed input; the message names the problem."""

    __test__ = False  # not a pytest test class despite its name


@dataclass
class Item:
    id: str
    bed: str  # "understand" or "predict"
    event: str
    conversation: str
    start: float
    end: float
    label: bool  # positive: the event happens (understand) / will happen (predict)
    chunk: int | None = None  # predict: the chunk whose label is predicted
    system: int | None = None  # predict: the channel in the system role

    def as_dict(self) -> dict:
        return asdict(self)


def understand_candidates(conv_id: str, labels: np.ndarray, duration: float, window_s=UNDERSTAND_MAX_S,
                          stride_s: float = 5.0) -> list[Item]:
    """Every window of `window_s` at `stride_s` (the last one may be shorter), for every event."""
    per_chunk = int(round(window_s / CHUNK_S))
    out = []
    for first in range(0, max(1, len(labels) - per_chunk // 2), int(round(stride_s / CHUNK_S))):
        window = labels[first: first + per_chunk]
        start, end = first * CHUNK_S, min(duration, (first + len(window)) * CHUNK_S)
        for event, label in UNDERSTAND_EVENTS.items():
            out.append(Item(f"{conv_id}:understand:{event}:{first}", "understand", event, conv_id,
                            round(start, 3), round(end, 3), bool((window == label).any())))
    return out


def predict_candidates(conv_id: str, states, context_s: float = PREDICT_CONTEXT_S,
                       params: InstanceParams = InstanceParams()) -> list[Item]:
    out = []
    for system in (0, 1):
        found = select_instances(states.labels, states.turn_owner, states.speaking, system, params)
        for event, metric in PREDICT_METRICS.items():
            chunks, positive = found[metric]
            for i, pos in zip(chunks.tolist(), positive.tolist()):
                end = i * CHUNK_S
                out.append(Item(f"{conv_id}:predict:{event}:{system}:{i}", "predict", event, conv_id,
                                round(max(0.0, end - context_s), 3), round(end, 3), bool(pos), i, system))
    return out


def balanced_sample(items: list[Item], per_class: int, seed: int) -> list[Item]:
    """Per (bed, event): min(per_class, positives, negatives) of each class, randomly chosen."""
    rng = random.Random(seed)
    groups: dict[tuple, list[Item]] = {}
    for item in items:
        groups.setdefault((item.bed, item.event), []).append(item)
    out = []
    for key in sorted(groups):
        pos = [x for x in groups[key] if x.label]
        neg = [x for x in groups[key] if not x.label]
        n = min(per_class, len(pos), len(neg))
        out += rng.sample(pos, n) + rng.sample(neg, n)
    return out


def build(conversations, per_class: int = 750, seed: int = 0, stride_s: float = 5.0) -> list[Item]:
    """Both beds from Conversations (with words, for backchannels)."""
    candidates = []
    for conv in conversations:
        conv_id = conv.source or f"conversation{len(candidates)}"
        states = chunk_states(conv)
        candidates += understand_candidates(conv_id, states.labels, conv.duration, stride_s=stride_s)
        candidates += predict_candidates(conv_id, states)
    return balanced_sample(candidates, per_class, seed)


def write_items(path, items: list[Item]) -> None:
    Path(path).write_text("".join(json.dumps(x.as_dict()) + "\n" for x in items))


def read_items(path) -> list[Item]:
    try:
        return [Item(**item) for item in read_jsonl(path, "test-bed file", TestbedError)]
    except TypeError as exc:
        raise TestbedError(f"{path}: not a test-bed JSONL file ({exc})") from None


def describe(items: list[Item]) -> dict:
    counts: dict[str, dict] = {}
    for x in items:
        c = counts.setdefault(f"{x.bed}/{x.event}", {"positive": 0, "negative": 0, "max_clip_s": 0.0})
        c["positive" if x.label else "negative"] += 1
        c["max_clip_s"] = max(c["max_clip_s"], round(x.end - x.start, 3))
    return counts
