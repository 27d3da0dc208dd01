"""What `python -m judge metrics | naturalness | pairs | tune` compute, as functions: the app, the
analysis layer and the benchmarks call them; `judge/scoring_cli.py` only parses and prints.

    model, thresholds = load_judge()                       # packaged checkpoint + its thresholds
    metrics_report(recordings, system_channel, model, thresholds)   # Talking Turns metrics
    naturalness_report(recordings)                         # default scorer (timing-hazard)
    pairs_from_manifest(manifest)                          # DeltaNLL, pair accuracy, C-index
    tune_report(switchboard_root, ids, model)              # thresholds from human-human data
"""


from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
from tqdm import tqdm

from judge.labels import chunk_states
from judge.metrics import METRICS, InstanceParams, conversation_instances, summarize
from judge.naturalness import NaturalnessParams, score_conversation
from judge.pairs import pairs_report, read_pairs_manifest, score_pairs
from speech.recordings import RecordingError, load_recording, load_recording_audio
from judge.scorers import DEFAULT_SCORER, TURNNAT_PAPER, UNITS, load_scorer
from judge.thresholds import (
    JudgeThresholds,
    MetricThresholds,
    load_thresholds,
    sweep_for,
    thresholds_for_checkpoint,
    tune_metric_threshold,
    tune_operating_points,
)
from judge.turn_cue import smart_turn_cues
from speech.audio import load_audio
from speech.models import ModelError
from speech.smart_turn import SmartTurn
from turntaking.events import EventParams
from turntaking.switchboard import conversation_ids, load_conversation


def checkpoint_path(checkpoint=None) -> Path:
    from judge.model import DEFAULT_CHECKPOINT, packaged_checkpoint_dir

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


def switchboard_ids(root, split: str = "val", split_list=None, limit: int | None = None) -> list[str]:
    ids = conversation_ids(root, split=None if split_list else split, split_list=split_list)
    return ids[:limit] if limit else ids


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
    """Table 6 style: every conversation a session, each speaker in turn in the system role."""
    sessions, confusion = [], np.zeros((5, 5), dtype=np.int64)
    for conv, preds in _switchboard_predictions(root, ids, model):
        inst, conf = conversation_instances(conv, preds, (0, 1), thresholds.operating_points, events=events)
        sessions.append(inst)
        confusion += conf
    report = summarize(sessions, thresholds.metrics, confusion)
    report.update({"corpus": str(root), "conversations": len(ids), "system_channel": "both (human reference)",
                   "thresholds": thresholds.as_dict(), "events": events.as_dict()})
    return report


def scorer_for(scorer_name: str, model_file=None, audio_cue: bool = False):
    """`score_file(path)` of one named scorer (not turnnat-paper); with `audio_cue`, Smart Turn cues
    from the recording's audio inform the timing-hazard scorer."""

    scorer = load_scorer(scorer_name, model_file)
    if not audio_cue:
        return scorer, lambda path: scorer.score(load_recording(path, words=False))
    if not scorer.takes_cues:
        raise ValueError(f"--audio-cue: the {scorer_name} scorer takes no audio cue (timing-hazard does)")

    try:
        cue_model = SmartTurn()
    except ModelError as exc:  # the file is missing or not the pinned one
        raise ValueError(f"--audio-cue: {exc}") from None

    def score_file(path):
        path = Path(path)
        if path.suffix.lower() == ".json":
            raise RecordingError(f"{path}: --audio-cue needs two-channel audio, not voice activity")
        conv, audio = load_recording_audio(path)
        return scorer.score(conv, smart_turn_cues(audio, conv, cue_model))

    return scorer, score_file


def naturalness_report(recordings, scorer_name: str = DEFAULT_SCORER, model_file=None, audio_cue: bool = False) -> dict:
    """Naturalness of each recording by one named scorer (judge.scorers)."""
    if scorer_name == TURNNAT_PAPER:
        if audio_cue:
            raise ValueError("--audio-cue: the turnnat-paper scorer takes no audio cue (timing-hazard does)")
        return _turnnat_paper_naturalness(recordings, load_judge(model_file)[0])
    scorer, score_file = scorer_for(scorer_name, model_file, audio_cue)
    rows = [{"recording": str(p), **score_file(p).as_dict()} for p in _bar(recordings, "naturalness", "recording")]
    return {"scorer": scorer.name, "audio_cue": "smart-turn-v3.2" if audio_cue else None, "units": scorer.units,
            "dialogues": rows, "params": scorer.params}


def turnnat_paper_row(path, model, params: NaturalnessParams = NaturalnessParams()) -> dict:
    """One recording's row of the turnnat-paper naturalness report."""
    conv, preds = predict_recording(model, path, words=model.needs_words)
    return {"recording": str(path), "scorer": TURNNAT_PAPER, **score_conversation(conv, model, params, preds).as_dict()}


def _turnnat_paper_naturalness(recordings, model) -> dict:
    params = NaturalnessParams()
    rows = [turnnat_paper_row(path, model, params) for path in _bar(recordings, "naturalness", "recording")]
    return {"scorer": TURNNAT_PAPER, "units": UNITS[TURNNAT_PAPER], "dialogues": rows, "params": params.as_dict()}


def pairs_from_manifest(manifest, scorer_name: str = DEFAULT_SCORER, model_file=None, audio_cue: bool = False) -> dict:
    """DeltaNLL, pair accuracy and C-index of one named scorer on a pairs manifest."""

    entries = read_pairs_manifest(manifest)
    if scorer_name == TURNNAT_PAPER:
        if audio_cue:
            raise ValueError("--audio-cue: the turnnat-paper scorer takes no audio cue (timing-hazard does)")
        scores, params = _turnnat_paper_pair_scores(entries, load_judge(model_file)[0])
    else:
        scorer, score_file = scorer_for(scorer_name, model_file, audio_cue)
        files = list(dict.fromkeys(p for e in entries for p in (e.natural, e.perturbed)))
        scores = {p: score_file(p) for p in _bar(files, "clips", "clip")}
        params = scorer.params
    report = pairs_report(score_pairs(entries, scores.__getitem__))
    report.update({"manifest": str(manifest), "scorer": scorer_name, "audio_cue": "smart-turn-v3.2" if audio_cue else None,
                   "units": UNITS[scorer_name], "params": params})
    return report


def _turnnat_paper_pair_scores(entries, model):
    params = NaturalnessParams()
    files = list(dict.fromkeys(p for e in entries for p in (e.natural, e.perturbed)))
    scores = {}
    if model.needs_audio or any(p.suffix.lower() != ".json" for p in files):
        for path in _bar(files, "clips", "clip"):  # audio: Silero voice activity (and audio features or words) file by file
            conv, preds = predict_recording(model, path, words=model.needs_words)
            scores[path] = score_conversation(conv, model, params, preds)
    else:
        convs = [load_recording(p, words=False) for p in _bar(files, "clips", "clip")]
        for path, conv, preds in zip(files, convs, predict_conversations(model, convs)):
            scores[path] = score_conversation(conv, model, params, preds)
    return scores, params.as_dict()


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
                            source=f"tuned on {len(ids)} conversations of {root}")
    report = {"corpus": str(root), "conversations": len(ids), "events": events.as_dict(), "metrics": metric_reports,
              "operating_points": point_report, "thresholds": tuned.as_dict()}
    if checkpoint_file is not None:
        report["checkpoint"] = str(checkpoint_file)
    return report, tuned
