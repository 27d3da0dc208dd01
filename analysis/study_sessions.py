"""Per-session (and per-clip) results of a study, computed once and cached in AnalysisResult.

    kind             subject          parameters                         result
    voice-activity   session:ID       {}                                 voice-activity JSON + "method"
    stats            session:ID       event parameters                   turntaking.stats (with events)
    judge-metrics    session:ID       checkpoint sha256, thresholds      instances per metric + confusion
    naturalness      session:ID       the scorer's identity (name,       the scorer's score (naturalness.scorers)
                                     its model's sha256, params)
    naturalness      clip:ID          (same)                             (same)

A session's voice activity comes from its cached result (the participant area or the demo
stores it), else from its two-channel recording (Silero voice activity, Whisper words), which is
then cached. The judge is the packaged default checkpoint unless another one is given.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from analysis.study import (
    StudyData,
    cached_results,
    clip_activities,
    latest_results,
    result_versions,
)
from judge.checkpoint_files import CheckpointError
from judge.metrics import Instances, conversation_instances
from judge.reports import (
    checkpoint_path,
    human_reference_report,
    load_judge,
    switchboard_ids,
)
from naturalness.score import Scorer, UnscorableDialogue
from naturalness.scorers import load_scorers
from speech.pipeline import InputError, conversation_from_audio
from speech.silero_lags import BOUNDARY_LAGS, CORRECTION, LAGS_BY_SNR
from storage.db import session_scope
from storage.files import StorageFileError, sha256_file, verify
from storage.models import Study
from storage.records import params_hash, save_analysis_result, set_session_quality
from studies.call_quality import NETWORK_TOO_POOR, NO_RECORDING, SERVER_BEHIND, CallQuality, conversation_quality
from studies.config import stored_settings
from turntaking.activity import (
    Conversation,
    conversation_from_json,
    conversation_to_json,
)
from turntaking.boundary_lags import corrected, lags_of
from turntaking.events import EventParams
from turntaking.listener_backchannels import ListenerRule
from turntaking.stats import STATISTICS_VERSION, conversation_statistics

# (stage, items done, items in the stage): how far a long computation is (analysis.background).
Progress = Callable[[str, int, int], None]
CLIPS_PER_WRITE = 50


def _report(progress: Progress | None, stage: str, done: int, total: int) -> None:
    if progress is not None:
        progress(stage, done, total)


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

    def metric_params(self, events: EventParams = EventParams()) -> dict:
        return self.params(thresholds=self.thresholds.as_dict(), events=events.as_dict())


def study_scorers(judge: Judge | None) -> dict[str, Scorer]:
    """The naturalness scorers of `naturalness.scorers`, default first; those that need a judge
    only with one (the study's)."""
    return load_scorers(judge.checkpoint if judge is not None else None)


def _score(scorer: Scorer):
    """`conv -> the score as a dict`, or {"error": why} for a dialogue the scorer cannot score."""
    def run(conv: Conversation) -> dict:
        try:
            return scorer.score(conv).as_dict()
        except UnscorableDialogue as exc:
            return {"error": str(exc)}
    return run


_JUDGES: dict[tuple[str, float], Judge] = {}


def load_study_judge(checkpoint=None) -> Judge:
    """The judge (default: the packaged checkpoint) with its thresholds; loaded once per file."""
    path = Path(checkpoint_path(checkpoint))
    if not path.is_file():
        raise JudgeUnavailable(f"judge checkpoint not found: {path}")
    key = (str(path.resolve()), path.stat().st_mtime)
    if key not in _JUDGES:
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

    with session_scope(engine) as session:
        study = session.get(Study, study_id)
        for subject, parameters, result in rows:
            save_analysis_result(session, kind, subject, parameters, result, study)


def _conversation_from_recording(row, data_root) -> Conversation:
    path = verify(row.recording_path, row.recording_sha256, data_root)
    return conversation_from_audio(path, vad="silero", transcribe=True)


def _failure_key(row) -> dict:
    return {"recording_sha256": row.recording_sha256}


def activity_failures(engine, data: StudyData) -> dict[int, str]:
    """{session id: why its recording gave no voice activity} for the recordings tried and failed
    (a missing or altered file, unreadable audio); tried again only when the recording changes."""
    rows = {session_subject(r.session_id): r for r in data.sessions.itertuples() if isinstance(r.recording_path, str)}
    found = cached_results(engine, "voice-activity-failure",
                           {subject: params_hash(_failure_key(row)) for subject, row in rows.items()})
    return {int(subject.split(":")[1]): result["error"] for subject, result in found.items()}


def session_activity(engine, data: StudyData, data_root=None, compute: bool = True,
                     progress: Progress | None = None) -> dict[int, str]:
    """{session id: version of its voice activity} for every session that has some: cached, or
    (`compute`) computed now from its two-channel recording (Silero voice activity, Whisper
    words) and cached, one session at a time. A recording that cannot be analysed is recorded as
    such (`activity_failures`) and the others go on."""
    subjects = {session_subject(s): int(s) for s in data.sessions["session_id"]}
    versions = result_versions(engine, "voice-activity", list(subjects))
    if not compute:
        return {subjects[s]: v for s, v in versions.items()}
    failed = activity_failures(engine, data)
    missing = [row for row in data.sessions.itertuples()
               if session_subject(row.session_id) not in versions and isinstance(row.recording_path, str)
               and int(row.session_id) not in failed]
    if missing:
        for done, row in enumerate(missing):
            _report(progress, "voice activity", done, len(missing))
            subject = session_subject(row.session_id)
            try:
                conv = _conversation_from_recording(row, data_root)
            except (StorageFileError, InputError, OSError, ValueError) as exc:
                error = " ".join(f"{type(exc).__name__}: {exc}".split())[:500]
                _save(engine, data.study_id, "voice-activity-failure", [(subject, _failure_key(row), {"error": error})])
                continue
            _save(engine, data.study_id, "voice-activity", [(subject, {}, {
                **conversation_to_json(conv), "method": f"{SILERO_METHOD}, faster-whisper words"})])
        _report(progress, "voice activity", len(missing), len(missing))
        versions = result_versions(engine, "voice-activity", list(subjects))
    return {subjects[s]: v for s, v in versions.items()}


def sessions_without_activity(data: StudyData, versions: dict[int, str], failed=()) -> int:
    """How many sessions have a recording but no voice activity yet (`failed`: given up on)."""
    return sum(isinstance(r.recording_path, str) and int(r.session_id) not in versions
               and int(r.session_id) not in failed for r in data.sessions.itertuples())


def session_conversations(engine, data: StudyData, session_ids) -> dict[int, Conversation]:
    """{session id: Conversation} of `session_ids` (those with voice activity)."""
    stored = latest_results(engine, "voice-activity", [session_subject(i) for i in session_ids])
    channels = dict(zip(data.sessions["session_id"], data.sessions["system_channel"]))
    out = {}
    for subject, result in stored.items():
        session_id = int(subject.split(":")[1])
        conv = conversation_from_json(result, source=subject)
        measured = str(result.get("method", "")).startswith(SILERO_METHOD)
        conv.meta["silero"] = measured  # a recording's, not simulated voice activity
        if measured and "words_from" not in result:  # stored before the key: Whisper's words
            conv.words_from = "asr"
        # Without a recording that says otherwise, the system talks on channel 1.
        channel = channels.get(session_id)
        conv.meta["system_channel"] = int(channel) if pd.notna(channel) else 1
        out[session_id] = conv
    return out


def sessions_not_excluded(data: StudyData) -> StudyData:
    """The study with the sessions whose voice activity is wanted: those analysable, those not
    checked yet (their voice activity decides them), and those left out only for their timing (a
    server or a network that degraded a conversation that took place: its timeline and transcript
    are shown, its numbers counted nowhere: analysis.study.analysable_session_ids)."""
    sessions = data.sessions
    timing_only = sessions["quality_reason"].fillna("").str.startswith((SERVER_BEHIND, NETWORK_TOO_POOR))
    return replace(data, sessions=sessions[~sessions["analysable"].eq(False) | timing_only])


def decide_quality(engine, data: StudyData, versions: dict[int, str], store: bool) -> dict[int, CallQuality]:
    """{session id: quality} of the ended sessions not checked when their call ended (rows from
    before the check, studies filled by hand or simulated), by the call-end rule on their voice
    activity (`versions`: the sessions that have some); one that ended with neither recording nor
    voice activity has nothing to analyse. Written into `data.sessions`, and (`store`: the
    background worker) into the database; a view (not `store`) only reads and decides for itself."""
    rows = data.sessions[data.sessions["analysable"].isna() & data.sessions["status"].ne("active")]
    if not len(rows):
        return {}
    minimum = stored_settings(data.name, data.title, data.config).call_minimum_s
    conversations = session_conversations(engine, data, [int(i) for i in rows["session_id"] if int(i) in versions])
    decided = {i: conversation_quality(conv, conv.meta["system_channel"], minimum) for i, conv in conversations.items()}
    for row in rows.itertuples():
        if int(row.session_id) not in versions and not isinstance(row.recording_path, str):
            decided[int(row.session_id)] = CallQuality(False, NO_RECORDING)
    if store and decided:
        with session_scope(engine) as session:
            for i, quality in decided.items():
                set_session_quality(session, i, quality.analysable, quality.reason)
    index = {int(i): k for k, i in zip(data.sessions.index, data.sessions["session_id"])}
    for i, quality in decided.items():
        data.sessions.at[index[i], "analysable"] = quality.analysable
        data.sessions.at[index[i], "quality_reason"] = quality.reason
    return decided


def _per_session(engine, data: StudyData, kind: str, versions: dict[int, str], parameters: dict,
                 compute, stage: str, progress: Progress | None = None) -> dict[int, dict]:
    """{session id: result} for the sessions in `versions` ({id: voice-activity version}): cached
    ones read, missing ones computed from their conversation and stored one by one (`compute`
    None: only the cached ones). A result is keyed by `parameters` and the version of the voice
    activity it was computed from."""
    full = {i: {**parameters, "activity": v} for i, v in versions.items()}
    cached = cached_results(engine, kind, {session_subject(i): params_hash(p) for i, p in full.items()})
    results = {int(s.split(":")[1]): r for s, r in cached.items()}
    missing = [i for i in versions if i not in results]
    if compute is None or not missing:
        return results
    for done, i in enumerate(missing):
        _report(progress, stage, done, len(missing))
        conv = session_conversations(engine, data, [i]).get(i)
        if conv is not None:
            results[i] = compute(conv)
            _save(engine, data.study_id, kind, [(session_subject(i), full[i], results[i])])
    _report(progress, stage, len(missing), len(missing))
    return results


def recording_lags(conv: Conversation):
    """Each channel's voice-detector lags of a recorded session (clean speech's where its voice
    activity was kept before they were); None for simulated voice activity."""
    return (lags_of(conv) or BOUNDARY_LAGS) if conv.meta.get("silero") else None


def judged_conversation(conv: Conversation) -> Conversation:
    """What the judge reads: a recording's voice activity with its boundary lags undone (the judge
    was trained on word alignments; measured closer to its outputs on them, docs/pipeline-bias.md)."""
    lags = recording_lags(conv)
    return conv if lags is None else corrected(conv, lags)


def recording_statistics(conv: Conversation, params: EventParams = EventParams(), include_events: bool = True) -> dict:
    """A session's statistics: from a recording, Silero's boundary lags undone and backchannels
    from the listener's behaviour (its words are Whisper's), as the pipeline reference measures
    Switchboard; simulated voice activity as it is."""
    return conversation_statistics(conv, params, include_events=include_events, lags=recording_lags(conv))


SILERO_METHOD = "silero voice activity"
# Part of the statistics' cache key: how a recording is measured.
MEASUREMENT = {"boundary_correction": {"method": CORRECTION, "lags_by_snr": [list(level) for level in LAGS_BY_SNR]}, "listener_backchannels": ListenerRule().as_dict()}


def session_statistics(engine, data: StudyData, versions: dict[int, str], params: EventParams = EventParams(),
                       compute: bool = True, progress: Progress | None = None) -> dict[int, dict]:
    """{session id: conversation statistics} (without the event lists: `session_view` has them)."""
    key = {"events": params.as_dict(), "statistics": STATISTICS_VERSION, "measurement": MEASUREMENT}
    return _per_session(engine, data, "stats", versions, key,
                        (lambda conv: recording_statistics(conv, params, include_events=False)) if compute else None,
                        "statistics", progress)


def _bits(values) -> str:
    return "".join("1" if v else "0" for v in values)


def _judge_one(judge: Judge, conv: Conversation, events: EventParams = EventParams()) -> dict:
    """The session's metric instances, kept compactly: for each instance, the decision made and
    which side of the metric's threshold (part of the cache key) the judge's score fell on."""
    from judge.model import predict

    conv = judged_conversation(conv)
    instances, confusion = conversation_instances(conv, predict(judge.model, conv), (conv.meta["system_channel"],),
                                                  judge.thresholds.operating_points, events=events)
    return {"system_channel": conv.meta["system_channel"], "confusion": confusion.tolist(),
            "instances": {name: {"positive": _bits(inst.positive),
                                 "judged": _bits(inst.scores > getattr(judge.thresholds.metrics, name))}
                          for name, inst in instances.items()}}


def instances_from_json(data: dict, thresholds):
    """judge.metrics.Instances from `_judge_one`'s bits; the scores stand just above or just
    below each metric's threshold, so `summarize` at these thresholds gives exact results."""

    out = {}
    for name, d in data.items():
        threshold = getattr(thresholds.metrics, name)
        judged = np.frombuffer(d["judged"].encode(), dtype=np.uint8) == ord("1")
        positive = np.frombuffer(d["positive"].encode(), dtype=np.uint8) == ord("1")
        out[name] = Instances(np.zeros(len(positive), dtype=np.int64), positive,
                              np.where(judged, threshold + 1.0, threshold - 1.0))
    return out


def session_judge_results(engine, data: StudyData, versions: dict[int, str], judge: Judge, compute: bool = True,
                          progress: Progress | None = None) -> dict[int, dict]:
    """{session id: {"instances": ..., "confusion": 5x5}} with the system in its channel."""
    return _per_session(engine, data, "judge-metrics", versions,
                        {**judge.metric_params(data.events), "boundary_correction": MEASUREMENT["boundary_correction"]},
                        (lambda c: _judge_one(judge, c, data.events)) if compute else None, "judge metrics", progress)


def session_judge_details(judge: Judge, conv: Conversation, events: EventParams = EventParams()):
    """One session's metric instances with their chunks and scores (for the session view)."""
    from judge.model import predict

    conv = judged_conversation(conv)
    instances, _ = conversation_instances(conv, predict(judge.model, conv), (conv.meta["system_channel"],),
                                          judge.thresholds.operating_points, events=events)
    return instances


def session_naturalness(engine, data: StudyData, versions: dict[int, str], scorer: Scorer,
                        compute: bool = True, progress: Progress | None = None) -> dict[int, dict]:
    return _per_session(engine, data, "naturalness", versions, scorer.identity(), _score(scorer) if compute else None,
                        f"naturalness ({scorer.name})", progress)


def paired_clip_ids(data: StudyData) -> list[int]:
    return sorted(set(map(int, data.pairs["natural_clip_id"])) | set(map(int, data.pairs["perturbed_clip_id"])))


def clips_left_to_score(engine, data: StudyData, scored: dict[int, dict]) -> int:
    """How many paired clips with voice activity have no score in `scored` yet."""
    missing = [i for i in paired_clip_ids(data) if i not in scored]
    return sum(a is not None for a in clip_activities(engine, data, missing).values())


def clip_naturalness(engine, data: StudyData, scorer: Scorer, compute: bool = True,
                     progress: Progress | None = None) -> dict[int, dict]:
    """{clip id: naturalness score} of every paired clip with voice activity (clips never change:
    the cache key is the clip and the scorer)."""
    ids = paired_clip_ids(data)
    key = scorer.identity()
    digest = params_hash(key)
    cached = cached_results(engine, "naturalness", {clip_subject(i): digest for i in ids})
    results = {int(s.split(":")[1]): r for s, r in cached.items()}
    missing = [i for i in ids if i not in results]
    if not compute or not missing:
        return results
    stage = f"clip naturalness ({scorer.name})"
    score = _score(scorer)
    new = []
    for done, (clip_id, activity) in enumerate(clip_activities(engine, data, missing).items()):
        _report(progress, stage, done, len(missing))
        if activity:
            results[clip_id] = score(conversation_from_json(activity, source=clip_subject(clip_id)))
            new.append((clip_subject(clip_id), key, results[clip_id]))
        if len(new) >= CLIPS_PER_WRITE:  # clips are quick: written in batches, not one by one
            _save(engine, data.study_id, "naturalness", new)
            new = []
    _save(engine, data.study_id, "naturalness", new)
    _report(progress, stage, len(missing), len(missing))
    return results


def judge_reference(engine, judge: Judge) -> dict | None:
    """The judge's human reference (Talking Turns Table 6: human-human conversations scored with
    each speaker as the "system"), when `store_judge_reference` has put it in the cache."""
    found = cached_results(engine, "judge-human-reference", {"switchboard": params_hash(judge.metric_params())})
    return found.get("switchboard")


def store_judge_reference(engine, judge: Judge, switchboard_root, conversations: int = 20) -> dict:
    """Score `conversations` Switchboard validation conversations of the reference half (those the
    thresholds were not tuned on; judge.reports) and cache the report; only derived numbers are stored."""

    ids = switchboard_ids(switchboard_root, "val", limit=conversations, half="reference")
    report = human_reference_report(switchboard_root, ids, judge.model, judge.thresholds)
    report["corpus"] = "Switchboard (validation split, reference half)"
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
    """The judge as a reader can tell it apart: its checkpoint's file name (no path of this
    machine), sha256, and thresholds with the file they came from."""
    return {"name": Path(judge.checkpoint).name, "sha256": judge.sha256,
            "thresholds_from": Path(judge.thresholds.source).name,  # a file's name, or "reference defaults ..."
            "thresholds": asdict(judge.thresholds.metrics)}
