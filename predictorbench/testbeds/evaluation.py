"""Accuracy of an adapter on the test beds, per bed and event, with a Wilson interval next to the
random baseline (50 % on balanced beds), and for the predict beds the supervised topline: the
judge's decision J^1..J^4 (Eq. 2-5) at the same chunk."""

from __future__ import annotations

import numpy as np

from judge.metrics import judge_scores
from predictorbench.testbeds.items import PREDICT_METRICS, SAMPLE_RATE, Item, TestbedError
from predictorbench.testbeds.prompts import PROMPTS, is_yes_no, parse_answer, prompt_for
from turntaking.intervals import wilson_interval

METRIC_THRESHOLD = {"speak_up": "speak_up", "backchannel": "backchannel", "interrupt": "interrupt",
                    "handle_interruption": "handle_interruption"}


def clip_audio(recording: np.ndarray, item: Item, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    return recording[:, int(round(item.start * sample_rate)): int(round(item.end * sample_rate))]


def accuracy_entry(correct: list[bool]) -> dict:
    n, k = len(correct), int(sum(correct))
    return {"n": n, "accuracy": k / n if n else None, "wilson_95": list(wilson_interval(k, n)) if n else None}


def evaluate(items: list[Item], adapter, load_recording, log=None) -> dict:
    """Accuracy per (bed, event); `load_recording(conversation id)` -> (channels, n) at 16 kHz."""
    cache: dict[str, np.ndarray] = {}
    results, answers = {}, []
    for item in sorted(items, key=lambda x: x.conversation):  # one recording in memory at a time
        if item.conversation not in cache:
            cache.clear()
            cache[item.conversation] = load_recording(item.conversation)
        text = adapter.answer(clip_audio(cache[item.conversation], item), prompt_for(item))
        picked = parse_answer(text, PROMPTS[(item.bed, item.event)][1], is_yes_no(item.bed, item.event))
        answers.append({"id": item.id, "answer": text, "parsed": picked, "label": item.label})
        results.setdefault(f"{item.bed}/{item.event}", []).append((picked == item.label, picked is None))
        if log:
            log(f"{item.id}: {picked} (label {item.label})")
    table = {}
    for key, rows in results.items():
        table[key] = {**accuracy_entry([c for c, _ in rows]), "unparsed": sum(u for _, u in rows),
                      "random_baseline": 0.5}
    return {"adapter": getattr(adapter, "name", type(adapter).__name__), "beds": table, "answers": answers}


def topline(items: list[Item], conversations: dict, model, thresholds) -> dict:
    """The supervised judge on the predict items: J^1..J^4 at the item's chunk vs the label."""
    from judge.model import predict

    results: dict[str, list[bool]] = {}
    probs_of: dict[str, np.ndarray] = {}
    for item in items:
        if item.bed != "predict":
            continue
        if item.conversation not in probs_of:
            if item.conversation not in conversations:
                raise TestbedError(f"conversation {item.conversation} of item {item.id} not loaded")
            probs_of[item.conversation] = predict(model, conversations[item.conversation]).label_probs
        metric = PREDICT_METRICS[item.event]
        score = judge_scores(probs_of[item.conversation], metric, np.array([item.chunk]))[0]
        judged = bool(score > getattr(thresholds, METRIC_THRESHOLD[metric]))
        results.setdefault(f"predict/{item.event}", []).append(judged == item.label)
    return {key: {**accuracy_entry(rows), "random_baseline": 0.5} for key, rows in results.items()}
