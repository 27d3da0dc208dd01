"""A study as a Hugging Face `datasets` DatasetDict saved to disk (`save_to_disk`):

    sessions   one row per conversation session: system, participant pseudonym, topic, status,
               whether it is analysable and why not (no speech from the participant, no answer
               from the system, too short: the views and the report leave those out),
               the two-channel recording (audio bytes, not decoded: datasets.Audio(decode=False)),
               its voice activity and words (JSON) and how they were obtained, and the call's
               network as both ends measured it (`network_*`: round trip, jitter, loss each way,
               concealment, playout delay, candidate type, late system audio; empty where the call
               measured none: studies.network_figures)
    transcripts
               one row per utterance of each session with voice activity: session_id, speaker
               (participant / system), start_s, end_s (the recording's clock), text, source ("asr":
               the participant's words as recognised on the recording; "system text": what the
               system decided to say, from the call's timing log; a system whose log holds no
               text has its recognised words, "asr"), cut (where a reply was cut off by the
               participant, else empty: analysis.session_transcript)
    pairs      one row per clip pair: type, trial kind, the conversation it was cut from (source),
               both clips' voice activity (JSON)
    judgments  one row per judgment, in natural/perturbed terms (analysis.agreement's columns)
    questionnaire
               one row per participant x questionnaire part x item: the part ("call:SESSION_ID"
               after a call, "after_last" after the last call), the call's session_id, system and
               position (its order among the participant's complete calls), the item, its kind,
               whether it is reverse keyed, the answer as given (`value`: a pick as the system's
               name, a rank as a JSON list of system names, best first; a free text as written)
               and a scale's answer as a number (`scale_value`), and when it was submitted
    examiner_examples
               one row per stored example of the automatic examiner's latest run of each study
               system: its task, score (TOR, latency, the overlap probe) and timeline (JSON:
               both channels' speech, the system's words, the task's marks, where the score was
               decided); `interruption_judge` is empty, `interruption_judge_note` says why

    python -m analysis export-dataset --study NAME --out DIR [--share-level researchers|public]

Participants are named by pseudonym, annotators as annotator-N (Prolific IDs: analysis.payments
only). Without `--share-level` it is the study team's own export: everyone's audio and words. With
one, audio, transcripts, recognised words (the sessions' voice activity and clips cut from their
recordings), typed topics and free-text answers are those of the participants who agreed to an
optional consent item of that level (the study file's `consent_items`, `share: researchers|public`;
public counts for researchers too). The others' sessions stay, as measures only: their rows keep
duration, quality, network, speech timing and questionnaire scales, with no audio (None), no words
and no transcript rows, so the numbers of a shared export still add up to the study's.
`manifest.json` (every export) says the level, the consent items it went by, how many participants'
speech it carries, and how many were left out and why.

    datasets.load_from_disk(DIR)["judgments"].to_pandas()
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import datasets
import pandas as pd
from sqlmodel import Session, select

from analysis.examiner_results import EXAMPLE_COLUMNS, example_row, stored_examples
from analysis.questionnaire_answers import ROW_COLUMNS
from analysis.study import clip_activities, latest_results
from analysis.session_transcript import stored_transcript
from analysis.study_sessions import decide_quality, session_activity, session_conversations, session_subject
from analysis.views import StudyAnalysis
from examiner.table import JUDGE_NOTE
from storage.files import verify
from storage.models import DialogueClip, Participant, Recording
from studies.config import OWN_TOPIC, SHARE_LEVELS
from studies.network_figures import SUMMARY_KEYS


def _dataset(rows: list[dict], features: datasets.Features) -> datasets.Dataset:
    """The rows as a dataset; no rows (a study without clip pairs or judgments yet) is an empty
    split with its columns (`from_list` of nothing gives one without any, which cannot be loaded)."""
    if not rows:
        return datasets.Dataset.from_dict({name: [] for name in features}, features=features)
    return datasets.Dataset.from_list(rows, features=features)


def _audio(row, data_root) -> dict | None:
    if not isinstance(row.recording_path, str):
        return None
    path = verify(row.recording_path, row.recording_sha256, data_root)
    return {"bytes": path.read_bytes(), "path": Path(row.recording_path).name}


# The network summary's columns (studies.network_figures.summarise), each prefixed "network_".
NETWORK_TEXT = ("candidate_type", "relay_protocol")
NETWORK_INTEGERS = ("late_blocks", "page_samples", "server_samples")


def _network_columns(network) -> dict:
    network = network if isinstance(network, dict) else {}
    return {f"network_{key}": network.get(key) for key in SUMMARY_KEYS}


def _network_features() -> dict:
    kinds = {key: "string" if key in NETWORK_TEXT else "int64" if key in NETWORK_INTEGERS else "float64"
             for key in SUMMARY_KEYS}
    return {f"network_{key}": datasets.Value(kind) for key, kind in kinds.items()}


@dataclass(frozen=True)
class Sharing:
    """Whose speech an export may carry: `level` None is the study team's own export (everyone's);
    "researchers" or "public" carries audio, words and typed text only of the sessions in
    `sessions` and the pseudonyms in `participants`: those who agreed to a consent item of that level."""

    level: str | None
    sessions: frozenset = frozenset()
    participants: frozenset = frozenset()
    manifest: dict = field(default_factory=dict)

    def shares(self, session_id: int) -> bool:
        return self.level is None or int(session_id) in self.sessions

    def shares_person(self, pseudonym: str) -> bool:
        return self.level is None or pseudonym in self.participants


LEFT_OUT_NOTE = ("audio, transcripts, recognised words, typed topics and free-text answers only of the participants "
                 "who agreed; the others' sessions are measures only (no audio, no words)")


def sharing(analysis: StudyAnalysis, level: str | None) -> Sharing:
    """The sessions an export at `level` may carry speech of, and its manifest (how many
    participants were left out, and why). `public` consent counts for `researchers` too; consent
    withdrawn later ("agreed" false) counts as none."""
    sessions = analysis.data.sessions
    if level is None:
        return Sharing(None, manifest={"share_level": None, "note": "the study team's own export: every "
                                       "participant's audio and transcripts; share none of it outside the team"})
    if level not in SHARE_LEVELS:
        raise ValueError(f"unknown share level {level!r}: one of {', '.join(SHARE_LEVELS)}")
    levels = ("researchers", "public") if level == "researchers" else ("public",)
    items = [{k: item.get(k) for k in ("id", "text", "share")}
             for item in analysis.data.config.get("consent_items") or [] if item.get("share") in levels]
    with Session(analysis.engine) as session:
        consents = dict(session.exec(select(Participant.pseudonym, Participant.consents)
                                     .where(Participant.study_id == analysis.data.study_id)).all())
    agreed = frozenset(pseudonym for pseudonym, given in consents.items()
                       if any(((given or {}).get(item["id"]) or {}).get("agreed") is True for item in items))
    shared = frozenset(int(i) for i, who in zip(sessions["session_id"], sessions["participant"]) if who in agreed)
    # counted over those the export has sessions of: the people it could have carried speech of
    people = set(sessions["participant"])
    recorded = sessions[sessions["recording_path"].map(lambda p: isinstance(p, str))]
    with_audio = set(recorded["participant"]) & agreed
    reason = (f"no consent to share with {level}" if items
              else f"the study asks no consent item that shares with {level}")
    left_out = len(people - agreed)
    return Sharing(level, shared, agreed, {
        "share_level": level, "consent_items": items, "participants": len(people),
        "participants_with_audio": len(with_audio),
        "sessions_with_audio": int(recorded["session_id"].isin(shared).sum()),
        "left_out": {reason: left_out} if left_out else {}, "note": LEFT_OUT_NOTE})


def _without_words(activity: dict | None) -> dict | None:
    return {**activity, "words": []} if activity and "words" in activity else activity


def sessions_dataset(analysis: StudyAnalysis, shared: Sharing = Sharing(None)) -> datasets.Dataset:
    data = analysis.data
    # Sessions not checked when their call ended: decided from the voice activity already there.
    decide_quality(analysis.engine, data, session_activity(analysis.engine, data, compute=False), store=False)
    activity = latest_results(analysis.engine, "voice-activity", [session_subject(i) for i in data.sessions["session_id"]])
    rows = []
    for row in data.sessions.itertuples():
        va = activity.get(session_subject(row.session_id))
        speech = shared.shares(row.session_id)
        if not speech:  # the measures stay, the words go
            va = _without_words(va)
        topic = row.topic if speech or not str(row.topic).startswith(OWN_TOPIC) else OWN_TOPIC  # typed: their words
        rows.append({
            "session_id": int(row.session_id), "participant": str(row.participant), "system": row.system,
            "system_kind": row.kind, "topic": topic, "status": row.status,
            "analysable": bool(row.analysable) if pd.notna(row.analysable) else None,
            "quality_reason": row.quality_reason if isinstance(row.quality_reason, str) else None,
            "duration_s": float(row.recording_s) if pd.notna(row.recording_s) else None,
            "system_channel": int(row.system_channel) if pd.notna(row.system_channel) else None,
            "audio": _audio(row, analysis.data_root) if speech else None,
            "voice_activity": json.dumps({k: v for k, v in va.items() if k in ("duration", "vad", "words", "speakers")})
            if va else None,
            "voice_activity_method": va.get("method") if va else None,
            **_network_columns(row.network),
        })
    features = datasets.Features({
        "session_id": datasets.Value("int64"), "participant": datasets.Value("string"),
        "system": datasets.Value("string"), "system_kind": datasets.Value("string"), "topic": datasets.Value("string"),
        "status": datasets.Value("string"), "analysable": datasets.Value("bool"),
        "quality_reason": datasets.Value("string"), "duration_s": datasets.Value("float64"),
        "system_channel": datasets.Value("int64"),
        "audio": {"bytes": datasets.Value("binary"), "path": datasets.Value("string")},
        "voice_activity": datasets.Value("string"), "voice_activity_method": datasets.Value("string"),
        **_network_features(),
    })
    # Built as plain bytes, then typed as audio: encoding through datasets.Audio would need
    # torchcodec, which the (undecoded) bytes do not.
    return _dataset(rows, features).cast_column("audio", datasets.Audio(decode=False))


def transcripts_dataset(analysis: StudyAnalysis, shared: Sharing = Sharing(None)) -> datasets.Dataset:
    """Both channels' words with their times, per session (analysis.session_transcript)."""
    data = analysis.data
    ids = [int(i) for i in data.sessions["session_id"] if shared.shares(i)]
    conversations = session_conversations(analysis.engine, data, ids)
    rows = [{"session_id": i, "speaker": r.speaker, "start_s": r.time_s, "end_s": r.end_s, "text": r.text,
             "source": r.source, "cut": r.cut_s}
            for i in ids for r in stored_transcript(i, conversations.get(i), analysis.data_root)]
    features = datasets.Features({
        "session_id": datasets.Value("int64"), "speaker": datasets.Value("string"),
        "start_s": datasets.Value("float64"), "end_s": datasets.Value("float64"), "text": datasets.Value("string"),
        "source": datasets.Value("string"), "cut": datasets.Value("float64"),
    })
    return _dataset(rows, features)


def _clip_sessions(analysis: StudyAnalysis) -> dict[int, int]:
    """{clip id: session id} of the study's clips cut from a session's recording."""
    with Session(analysis.engine) as session:
        return dict(session.exec(select(DialogueClip.id, Recording.session_id)
                                 .join(Recording, Recording.id == DialogueClip.recording_id)
                                 .where(DialogueClip.study_id == analysis.data.study_id,
                                        Recording.session_id.is_not(None))).all())


def pairs_dataset(analysis: StudyAnalysis, shared: Sharing = Sharing(None)) -> datasets.Dataset:
    data = analysis.data
    clips = clip_activities(analysis.engine, data)
    if shared.level is not None:  # a clip cut from a session holds its words too
        for clip, session_id in _clip_sessions(analysis).items():
            if clip in clips and not shared.shares(session_id):
                clips[clip] = _without_words(clips[clip])
    # "source": the conversation a pair was cut from, the unit to resample pairs by.
    rows = [{"pair_id": p.pair_id, "type": p.type, "trial": p.trial,
             "source": p.source if isinstance(p.source, str) else None,
             "natural": json.dumps(clips.get(int(p.natural_clip_id))),
             "perturbed": json.dumps(clips.get(int(p.perturbed_clip_id)))} for p in data.pairs.itertuples()]
    features = datasets.Features({k: datasets.Value("string")
                                  for k in ("pair_id", "type", "trial", "source", "natural", "perturbed")})
    return _dataset(rows, features)


def judgments_dataset(analysis: StudyAnalysis) -> datasets.Dataset:
    frame = analysis.data.judgments.drop(columns=["annotator_id", "clip_pair_id"]).copy()
    frame["attention_passed"] = frame["attention_passed"].map(lambda v: None if v is None or v != v else bool(v))
    features = datasets.Features({
        "judgment_id": datasets.Value("int64"), "annotator": datasets.Value("string"),
        "pair_id": datasets.Value("string"), "type": datasets.Value("string"), "trial": datasets.Value("string"),
        "choice": datasets.Value("string"), "rating_natural": datasets.Value("float64"),
        "rating_perturbed": datasets.Value("float64"), "artifact_natural": datasets.Value("float64"),
        "artifact_perturbed": datasets.Value("float64"), "attention_passed": datasets.Value("bool"),
        "duration_s": datasets.Value("float64"),
    })
    return _dataset(frame.astype(object).where(frame.notna(), None).to_dict("records"), features)


EXAMPLE_TYPES = {"example_id": "int64", "example": "int64", "tor": "int64", "words": "int64", "speaking_at_event": "bool",
                 "stopped": "bool", "interruption_judge": "float64"}
FLOAT_COLUMNS = ("latency_s", "first_word_s", "user_end_s", "event_start_s", "event_end_s", "stop_time_s")


def examiner_dataset(analysis: StudyAnalysis) -> datasets.Dataset:
    """The examiner's stored examples of the study's systems (analysis.examiner_results)."""
    rows = []
    for system, label, example in stored_examples(analysis.engine, analysis.data):
        row = example_row(system, label, example)
        row["interruption_judge_note"] = JUDGE_NOTE if example.task == "user_interruption" else None
        row["timeline"] = json.dumps(example.timeline)
        rows.append(row)
    types = {name: EXAMPLE_TYPES.get(name, "float64" if name in FLOAT_COLUMNS else "string")
             for name in EXAMPLE_COLUMNS}
    features = datasets.Features({name: datasets.Value(kind) for name, kind in types.items()}
                                 | {"interruption_judge_note": datasets.Value("string"),
                                    "timeline": datasets.Value("string")})
    return _dataset(rows, features)


QUESTIONNAIRE_TYPES = {"session_id": "int64", "position": "int64", "reverse_keyed": "bool", "scale_value": "float64"}


FREE_TEXT_KINDS = ("text", "unknown")  # what a participant wrote (an item the study file no longer has: maybe)


def questionnaire_dataset(analysis: StudyAnalysis, shared: Sharing = Sharing(None)) -> datasets.Dataset:
    """Participants' questionnaire answers, one row per participant x part x item
    (analysis.questionnaire_answers.ROW_COLUMNS); the free texts of those `shared` leaves out are
    None (their words), their scales and ranks stay (measures)."""
    rows = analysis.questionnaire_answers.rows.copy()
    if shared.level is not None and len(rows):
        theirs = rows["kind"].isin(FREE_TEXT_KINDS) & ~rows["participant"].map(shared.shares_person)
        rows["value"] = rows["value"].astype(object).where(~theirs, None)
    features = datasets.Features({name: datasets.Value(QUESTIONNAIRE_TYPES.get(name, "string"))
                                  for name in ROW_COLUMNS})
    return _dataset(rows.astype(object).where(rows.notna(), None).to_dict("records"), features)


def study_dataset(analysis: StudyAnalysis, shared: Sharing = Sharing(None)) -> datasets.DatasetDict:
    return datasets.DatasetDict({"sessions": sessions_dataset(analysis, shared),
                                 "transcripts": transcripts_dataset(analysis, shared),
                                 "pairs": pairs_dataset(analysis, shared),
                                 "judgments": judgments_dataset(analysis),
                                 "questionnaire": questionnaire_dataset(analysis, shared),
                                 "examiner_examples": examiner_dataset(analysis)})


def export_dataset(analysis: StudyAnalysis, out_dir, share_level: str | None = None) -> Path:
    """The study's dataset in `out_dir`, with `manifest.json` saying whose speech it carries
    (`share_level`: see `sharing`; ValueError for an unknown level, before anything is written)."""
    shared = sharing(analysis, share_level)
    out = Path(out_dir)
    splits = study_dataset(analysis, shared)
    # One shard each at least: an empty split saved in no shard cannot be loaded back.
    splits.save_to_disk(str(out), num_shards={name: 1 for name, split in splits.items() if not len(split)})
    manifest = {"study": analysis.data.name, **shared.manifest, "sessions": int(len(analysis.data.sessions)),
                "participants_named_by": "pseudonym (Prolific IDs: the payments table only)"}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return out
