"""Per-session (and per-clip) results of a study, computed once and cached in AnalysisResult.

    kind             subject          parameters                         result
    voice-activity   session:ID       {}                                 voice-activity JSON + "method"
    stats            session:ID       event parameters                   analysis.stats (with events)
    judge-metrics    session:ID       checkpoint sha256, thresholds      instances per metric + confusion
    naturalness      session:ID       checkpoint sha256, TurnNat params  judge.naturalness.DialogueScore
    naturalness      clip:ID          (same)                             (same)

A session's voice activity comes from its cached result (the participant area or the demo
stores it), else from its two-channel recording (Silero voice activity, Whisper words), which is
then cached. The judge is the packaged default checkpoint unless another one is given.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.activity import Conversation, conversation_from_json, conversation_to_json
from analysis.events import EventParams
from analysis.stats import conversation_statistics
from analysis.study import StudyData, cached_results, latest_results
from storage.files import verify
from storage.records import params_hash, save_analysis_result


class JudgeUnavailable(RuntimeError):
    """No usable judge checkpoint (the views that need one say so instead of failing)."""


@dataclass
class Judge:
    model: object
    thresholds: object  # judge.thresholds.JudgeThresholds
    checkpoint: str
    sha256: str

    def params(self, **extra) -> dict:
        return {"checkpoint_sha256": self.sha256, **extra}

    def metric_params(self) -> dict:
        return self.params(thresholds=self.thresholds.as_dict())

    def naturalness_params(self) -> dict:
        from judge.naturalness import NaturalnessParams

        return self.params(turnnat=NaturalnessParams().as_dict())


_JUDGES: dict[tuple[str, float], Judge] = {}


def load_study_judge(checkpoint=None) -> Judge:
    """The judge (default: the packaged checkpoint) with its thresholds; loaded once per file."""
    import torch

    from judge.model import CheckpointError, sha256_file
    from judge.scoring_cli import checkpoint_path, load_judge

    path = Path(checkpoint_path(checkpoint))
    if not path.is_file():
        raise JudgeUnavailable(f"judge checkpoint not found: {path}")
    key = (str(path.resolve()), path.stat().st_mtime)
    if key not in _JUDGES:
        torch.set_num_threads(1)  # the judge is small: one thread, leave the other core to the server
        try:
            model, thresholds = load_judge(path)
        except (CheckpointError, ValueError) as exc:
            raise JudgeUnavailable(str(exc)) from None
        if model.needs_audio:
            raise JudgeUnavailable(f"{path}: the study views use a voice-activity judge, this one needs audio")
        _JUDGES[key] = Judge(model, thresholds, str(path), sha256_file(path))
    return _JUDGES[key]


def session_subject(session_id) -> str:
    return f"session:{int(session_id)}"


def clip_subject(clip_id) -> str:
    return f"clip:{int(clip_id)}"


def _save(engine, study_id: int, kind: str, rows: list[tuple[str, dict, dict]]) -> None:
    """Store (subject, parameters, result) rows in one transaction."""
    if not rows:
        return
    from storage.db import session_scope
    from storage.models import Study

    with session_scope(engine) as session:
        study = session.get(Study, study_id)
        for subject, parameters, result in rows:
            save_analysis_result(session, kind, subject, parameters, result, study)


def _conversation_from_recording(row, data_root) -> Conversation:
    from analysis.pipeline import conversation_from_audio

    path = verify(row.recording_path, row.recording_sha256, data_root)
    return conversation_from_audio(path, vad="silero", transcribe=True)


def session_conversations(engine, data: StudyData, data_root=None, compute: bool = True) -> dict[int, Conversation]:
    """{session id: Conversation} of the sessions with voice activity (cached or from audio)."""
    subjects = [session_subject(s) for s in data.sessions["session_id"]]
    stored = latest_results(engine, "voice-activity", subjects)
    new = {}
    if compute:
        for row in data.sessions.itertuples():
            subject = session_subject(row.session_id)
            if subject not in stored and isinstance(row.recording_path, str):
                conv = _conversation_from_recording(row, data_root)
                new[subject] = {**conversation_to_json(conv), "method": "silero voice activity, faster-whisper words"}
        _save(engine, data.study_id, "voice-activity", [(s, {}, r) for s, r in new.items()])
    stored.update(new)
    out = {}
    for row in data.sessions.itertuples():
        subject = session_subject(row.session_id)
        if subject in stored:
            conv = conversation_from_json(stored[subject], source=subject)
            # Without a recording that says otherwise, the system talks on channel 1.
            conv.meta["system_channel"] = int(row.system_channel) if pd.notna(row.system_channel) else 1
            out[int(row.session_id)] = conv
    return out


def activity_digest(conv: Conversation) -> str:
    """A short hash of a conversation's voice activity: results cached for other activity miss."""
    return params_hash(conversation_to_json(conv))[:16]


def _cached_map(engine, data: StudyData, kind: str, items: dict[str, Conversation], parameters: dict,
                compute) -> dict[str, dict]:
    """Results of `items` ({subject: conversation}): cached ones read, missing ones computed and
    stored. A result is keyed by `parameters` and the conversation's voice activity."""
    full = {s: {**parameters, "activity": activity_digest(c)} for s, c in items.items()}
    results = cached_results(engine, kind, {s: params_hash(p) for s, p in full.items()})
    new = []
    for subject, conv in items.items():
        if subject not in results:
            result = compute(conv)
            if result is not None:
                new.append((subject, full[subject], result))
                results[subject] = result
    _save(engine, data.study_id, kind, new)
    return results


def session_statistics(engine, data: StudyData, convs: dict[int, Conversation],
                       params: EventParams = EventParams()) -> dict[int, dict]:
    """{session id: conversation statistics (with events)}."""
    items = {session_subject(i): c for i, c in convs.items()}
    results = _cached_map(engine, data, "stats", items, {"events": params.as_dict()},
                          lambda conv: conversation_statistics(conv, params))
    return {int(s.split(":")[1]): r for s, r in results.items()}


def _instances_json(instances) -> dict:
    return {name: {"chunks": inst.chunks.tolist(), "positive": inst.positive.astype(int).tolist(),
                   "scores": np.round(inst.scores, 5).tolist()} for name, inst in instances.items()}


def instances_from_json(data: dict):
    from judge.metrics import Instances

    return {name: Instances(np.asarray(d["chunks"], dtype=np.int64), np.asarray(d["positive"], dtype=bool),
                            np.asarray(d["scores"], dtype=float)) for name, d in data.items()}


def _judge_one(judge: Judge, conv: Conversation) -> dict:
    from judge.metrics import conversation_instances
    from judge.model import predict

    instances, confusion = conversation_instances(conv, predict(judge.model, conv), (conv.meta["system_channel"],),
                                                  judge.thresholds.operating_points)
    return {"system_channel": conv.meta["system_channel"], "instances": _instances_json(instances),
            "confusion": confusion.tolist()}


def session_judge_results(engine, data: StudyData, convs: dict[int, Conversation], judge: Judge) -> dict[int, dict]:
    """{session id: {"instances": ..., "confusion": 5x5}} with the system in its channel."""
    items = {session_subject(i): c for i, c in convs.items()}
    results = _cached_map(engine, data, "judge-metrics", items, judge.metric_params(), lambda c: _judge_one(judge, c))
    return {int(s.split(":")[1]): r for s, r in results.items()}


def _naturalness_one(judge: Judge, conv: Conversation) -> dict | None:
    from judge.naturalness import NoUnitsError, score_conversation

    try:
        return score_conversation(conv, judge.model).as_dict()
    except NoUnitsError as exc:
        return {"error": str(exc)}


def session_naturalness(engine, data: StudyData, convs: dict[int, Conversation], judge: Judge) -> dict[int, dict]:
    items = {session_subject(i): c for i, c in convs.items()}
    results = _cached_map(engine, data, "naturalness", items, judge.naturalness_params(),
                          lambda c: _naturalness_one(judge, c))
    return {int(s.split(":")[1]): r for s, r in results.items()}


def clip_naturalness(engine, data: StudyData, judge: Judge) -> dict[int, dict]:
    """{clip id: TurnNat score} of every clip with voice activity."""
    items = {clip_subject(i): conversation_from_json(a, source=clip_subject(i))
             for i, a in data.clips.items() if a}
    results = _cached_map(engine, data, "naturalness", items, judge.naturalness_params(),
                          lambda c: _naturalness_one(judge, c))
    return {int(s.split(":")[1]): r for s, r in results.items()}


def judge_reference(engine, judge: Judge) -> dict | None:
    """The judge's human reference (Talking Turns Table 6: human-human conversations scored with
    each speaker as the "system"), when `store_judge_reference` has put it in the cache."""
    found = cached_results(engine, "judge-human-reference", {"switchboard": params_hash(judge.metric_params())})
    return found.get("switchboard")


def store_judge_reference(engine, judge: Judge, switchboard_root, conversations: int = 20) -> dict:
    """Score `conversations` Switchboard validation conversations (judge.scoring_cli) and cache
    the report; only derived numbers are stored."""
    from judge.scoring_cli import human_reference_report, switchboard_ids
    from storage.db import session_scope

    ids = switchboard_ids(switchboard_root, "val", limit=conversations)
    report = human_reference_report(switchboard_root, ids, judge.model, judge.thresholds)
    report["corpus"] = "Switchboard (validation split)"
    with session_scope(engine) as session:
        save_analysis_result(session, "judge-human-reference", "switchboard", judge.metric_params(),
                             _json_safe(report))
    return report


def _json_safe(value):
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, float) and not np.isfinite(value):
        return None
    if isinstance(value, np.generic):
        return _json_safe(value.item())
    return value


def judge_description(judge: Judge) -> dict:
    return {"checkpoint": judge.checkpoint, "sha256": judge.sha256, "thresholds": asdict(judge.thresholds.metrics)}
