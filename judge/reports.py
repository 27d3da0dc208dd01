"""What `python -m judge metrics | tune` compute, as functions: the app, the analysis layer, the
naturalness scorer turnnat-va and the benchmarks call them; `judge/__main__.py` only parses and prints.

    model, thresholds = load_judge()                       # packaged checkpoint + its thresholds
    conv, predictions = predict_recording(model, path)     # one recording through the judge
    metrics_report(recordings, system_channel, model, thresholds)   # Talking Turns metrics
    human_reference_report(switchboard_root, ids, model, thresholds) # ... of human-human conversation
    tune_report(switchboard_root, ids, model)              # thresholds from human-human data

`switchboard_ids(..., half=)` picks the tuning or the reference half of the validation
conversations (`judge.thresholds.validation_half`); a human reference on conversations the
thresholds were tuned on is refused.
"""


from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
from tqdm import tqdm

from judge.checkpoint_files import DEFAULT_CHECKPOINT, packaged_checkpoint_dir
from judge.labels import chunk_states
from judge.metrics import METRICS, InstanceParams, conversation_instances, summarize
from judge.thresholds import (
    HALF_RULE,
    JudgeThresholds,
    MetricThresholds,
    load_thresholds,
    sweep_for,
    conversations_in_half,
    thresholds_for_checkpoint,
    tune_metric_threshold,
    tune_operating_points,
)
from speech.audio import load_audio
from speech.recordings import RecordingError, load_recording
from turntaking.events import EventParams
from turntaking.switchboard import conversation_ids, load_conversation


def checkpoint_path(checkpoint=None) -> Path:
    return Path(checkpoint) if checkpoint else packaged_checkpoint_dir() / DEFAULT_CHECKPOINT


def load_judge(checkpoint=None, thresholds=None):
    """(model, JudgeThresholds): an explicit thresholds file, else the one next to the checkpoint."""
    from judge.model import load_checkpoint

    path = checkpoint_path(checkpoint)
    model = load_checkpoint(path)
    return model, (load_thresholds(thresholds) if thresholds else thresholds_for_checkpoint(path))


def predict_recording(model, path, words: bool = True):
    """(conversation, predictions) of one recording."""
    from judge.model import predict

    path = Path(path)
    conv = load_recording(path, words=words)
    audio = None
    if model.needs_audio:
        if path.suffix.lower() == ".json":
            raise RecordingError(f"{path}: this judge checkpoint needs two-channel audio, not voice activity")

        try:
            audio, _ = load_audio(path, require_channels=2)
        except ValueError as exc:
            raise RecordingError(str(exc)) from None
    return conv, predict(model, conv, audio)


def predict_conversations(model, convs, batch_size: int = 16):
    """Predictions of several voice-activity-only conversations, batched (see judge.model.predict_many)."""
    from judge.model import predict_many

    return predict_many(model, convs, batch_size=batch_size)


def _bar(items, desc: str, unit: str):
    """A tqdm bar over `items` on stderr when it is a terminal (counts, rate, ETA); none in logs."""
    return tqdm(items, desc=desc, unit=unit, disable=None)


def session_instances(path, system_channel: int, model, thresholds, events: EventParams = EventParams()):
    """(metric instances, confusion matrix) of one recording: one session of `metrics_report`."""
    conv, preds = predict_recording(model, path, words=True)
    return conversation_instances(conv, preds, (system_channel,), thresholds.operating_points, events=events)


def metrics_report(recordings, system_channel: int, model, thresholds, events: EventParams = EventParams()) -> dict:
    sessions = [session_instances(path, system_channel, model, thresholds, events)
                for path in _bar(recordings, "judge metrics", "recording")]
    return metrics_from_sessions(sessions, recordings, system_channel, thresholds, events)


def metrics_from_sessions(sessions, recordings, system_channel: int, thresholds,
                          events: EventParams = EventParams()) -> dict:
    """The metrics report of [(instances, confusion)] of the recordings, one pair a session."""
    confusion = np.zeros((5, 5), dtype=np.int64)
    for _, conf in sessions:
        confusion += conf
    report = summarize([inst for inst, _ in sessions], thresholds.metrics, confusion)
    report.update({"recordings": [str(p) for p in recordings], "system_channel": system_channel,
                   "thresholds": thresholds.as_dict(), "events": events.as_dict()})
    return report


def switchboard_ids(root, split: str = "val", split_list=None, limit: int | None = None, half: str = "all") -> list[str]:
    """Conversation numbers of a split (or list), those of one half (`conversations_in_half`), the
    first `limit`."""
    ids = conversations_in_half(conversation_ids(root, split=None if split_list else split, split_list=split_list), half)
    return ids[:limit] if limit else ids


class InSampleReference(ValueError):
    """A human reference asked for on conversations the thresholds were tuned on."""


def check_out_of_sample(ids, thresholds) -> None:
    shared = [i for i in ids if str(i).removeprefix("sw") in set(thresholds.tuned_on)]
    if shared:
        raise InSampleReference(
            f"{len(shared)} of the {len(ids)} conversations (e.g. {shared[0]}) are ones the thresholds "
            f"({thresholds.source}) were tuned on: score the reference half (--half reference)")


def _switchboard_predictions(root, ids, model, batch: int = 16):
    """(conversation, predictions) of Switchboard conversations, predicted in batches."""

    if model.needs_audio:
        raise ValueError("the Switchboard transcripts have no audio here: use a voice-activity judge checkpoint")
    with tqdm(total=len(ids), desc="Switchboard conversations", unit="conv", disable=None) as bar:
        for b in range(0, len(ids), batch):
            convs = [load_conversation(root, i) for i in ids[b : b + batch]]
            for pair in zip(convs, predict_conversations(model, convs, batch_size=batch)):
                yield pair
                bar.update()


def human_reference_report(root, ids, model, thresholds, events: EventParams = EventParams()) -> dict:
    """Table 6 style: every conversation a session, each speaker in turn in the system role; refused
    on conversations the thresholds were tuned on."""
    check_out_of_sample(ids, thresholds)
    sessions, confusion = [], np.zeros((5, 5), dtype=np.int64)
    for conv, preds in _switchboard_predictions(root, ids, model):
        inst, conf = conversation_instances(conv, preds, (0, 1), thresholds.operating_points, events=events)
        sessions.append(inst)
        confusion += conf
    report = summarize(sessions, thresholds.metrics, confusion, unit="conversations")
    report.update({"corpus": str(root), "conversations": len(ids), "system_channel": "both (human reference)",
                   "thresholds": thresholds.as_dict(), "events": events.as_dict(),
                   "out_of_sample": {"tuned_on_conversations": len(thresholds.tuned_on),
                                     "conversation_ids": list(ids), "rule": HALF_RULE}})
    return report


def tune_report(root, ids, model, checkpoint_file=None,
                events: EventParams = EventParams()) -> tuple[dict, JudgeThresholds]:
    """Thresholds tuned on human-human conversations (both speakers in the system role)."""
    params = InstanceParams()
    sessions, all_probs, all_labels = [], [], []
    for conv, preds in _switchboard_predictions(root, ids, model):
        states = chunk_states(conv, event_params=events)
        inst, _ = conversation_instances(conv, preds, (0, 1), params=params, states=states)
        sessions.append(inst)
        n = min(len(states.labels), len(preds.label_probs))
        all_probs.append(preds.label_probs[params.min_context_chunks:n].astype(np.float32))
        all_labels.append(states.labels[params.min_context_chunks:n])
    metric_reports, chosen = {}, {}
    for spec in METRICS:
        positive = np.concatenate([s[spec.name].positive for s in sessions])
        scores = np.concatenate([s[spec.name].scores for s in sessions])
        res = tune_metric_threshold(scores, positive, sweep_for(spec.name))
        res["decisions"] = list(spec.decisions)
        res["title"] = spec.title
        metric_reports[spec.name] = res
        if res["threshold"] is not None:
            chosen[spec.name] = res["threshold"]
    points, point_report = tune_operating_points(np.concatenate(all_probs), np.concatenate(all_labels))
    tuned = JudgeThresholds(replace(MetricThresholds(), **chosen), points,
                            source=f"tuned on {len(ids)} conversations of {root}",
                            tuned_on=tuple(str(i).removeprefix("sw") for i in ids))
    report = {"corpus": str(root), "conversations": len(ids), "events": events.as_dict(), "metrics": metric_reports,
              "operating_points": point_report, "thresholds": tuned.as_dict()}
    if checkpoint_file is not None:
        report["checkpoint"] = str(checkpoint_file)
    return report, tuned
