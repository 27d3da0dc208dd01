"""A study holding real people's data, as the erasure and retention tests need it: participants
with sessions whose folders hold a two-channel espeak-ng recording, a timing log and a network
log, questionnaire answers, connection checks by Prolific ID, a clip cut from a recording with a
pair, a judgment and an annotator; each person's data findable by their identifiers."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from sqlmodel import select

from storage.db import session_scope
from storage.files import session_dir, store_file
from storage.models import (
    AnalysisResult,
    Annotator,
    ClipPair,
    ConnectionCheck,
    DialogueClip,
    DialogueSystem,
    Judgment,
    QuestionnaireResponse,
    Recording,
)
from storage.records import add_recording, get_or_create_participant, hash_token, start_session
from studies.config import apply_config, parse_config


@dataclass(frozen=True)
class Person:
    row_id: int
    pseudonym: str
    prolific_id: str
    sessions: tuple[int, ...]


def people_study(engine, data_root: Path, wav: Path, consented: list[datetime], config: dict | None = None,
                 name: str = "rights") -> list[Person]:
    """One participant per time in `consented` (Prolific IDs PRLFC-PERSON-0, -1, ...), each with two
    sessions; the first participant's first recording cut into a clip pair that an annotator
    (PRLFC-ANNOTATOR-0) judged."""
    people = []
    with session_scope(engine) as session:
        study = apply_config(session, parse_config({
            "name": name, "systems": [{"name": "one", "kind": "cascaded"}], **(config or {})}))
        system = session.exec(select(DialogueSystem).where(DialogueSystem.study_id == study.id)).one()
        for n, at in enumerate(consented):
            prolific = f"PRLFC-PERSON-{n}"
            participant = get_or_create_participant(session, study, external_id=prolific, consent_at=at)
            session.add(ConnectionCheck(study_id=study.id, external_id=prolific, created_at=at - timedelta(minutes=2),
                                        outcome="ok"))
            sessions = []
            for k in range(2):
                conversation = start_session(session, participant, system, "a hike")
                conversation.status, conversation.ended_at = "complete", at + timedelta(minutes=5 * k + 5)
                conversation.network = {"rtt_ms": 20.0}
                session.add(conversation)
                folder = session_dir(conversation.id)
                store_file(wav, f"{folder}/call.wav", data_root)
                (data_root / folder / "timing.jsonl").write_text(json.dumps(
                    {"event": "reply", "participant": participant.pseudonym, "text": "hello hiker"}) + "\n")
                (data_root / folder / "network.jsonl").write_text(json.dumps({"rtt_ms": 20.0}) + "\n")
                add_recording(session, f"{folder}/call.wav", kind="two-channel", data_root=data_root,
                              conversation=conversation, system_channel=1)
                session.add(QuestionnaireResponse(participant_id=participant.id, session_id=conversation.id,
                                                  part=f"call:{conversation.id}", answers={"comment": prolific}))
                session.add(AnalysisResult(study_id=study.id, kind="voice-activity", subject=f"session:{conversation.id}",
                                           params_hash="p", result={"words": [{"w": "hiker"}], "segments": [[0, 1]]}))
                sessions.append(conversation.id)
            session.flush()
            people.append(Person(participant.id, participant.pseudonym, prolific, tuple(sessions)))
        first = people[0]
        recording = session.exec(select(Recording).where(Recording.session_id == first.sessions[0])).one()
        shutil.copyfile(wav, data_root / "clip-natural.wav")
        clip = DialogueClip(study_id=study.id, recording_id=recording.id, audio_path="clip-natural.wav",
                            audio_sha256="x", start_s=0.0, end_s=2.0, duration_s=2.0)
        session.add(clip)
        session.flush()
        pair = ClipPair(study_id=study.id, pair_id="p1", perturbation="gap-shift", natural_clip_id=clip.id,
                        perturbed_clip_id=clip.id)
        annotator = Annotator(study_id=study.id, token_hash=hash_token("tok"), external_id="PRLFC-ANNOTATOR-0",
                              created_at=consented[0])
        session.add_all([pair, annotator])
        session.flush()
        session.add(Judgment(annotator_id=annotator.id, clip_pair_id=pair.id, natural_side="A", choice="A"))
    return people


def files_under(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
