"""A study of known people, for the tests of who an export names and whose speech it carries
(test_pseudonymous_exports.py, test_share_level_export.py).

Five participants with known Prolific IDs, each with one real recorded call (espeak-ng speech,
ended through `finish_session` as a browser call is) and questionnaire answers (a scale and a
free-text comment); one typed topic; three optional consent items (public, researchers, and one that
shares nothing). Two annotators with Prolific IDs judge a clip pair cut from two of the sessions'
recordings (each clip's words known). Connection checks: one Prolific ID that never connected, and
the first participant's failed check before the one they passed.

Who agreed to what (Participant.consents):

    0  publish (public)                          public, researchers
    1  colleagues (researchers), typed topic     researchers
    2  newsletter (shares nothing)               -
    3  publish (public)                          public, researchers
    4  publish, withdrawn later (agreed false)   -
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import soundfile
from sqlmodel import select

from analysis.study import load_study
from analysis.study_sessions import session_activity
from storage import db
from storage.db import session_scope
from storage.models import (
    Annotator,
    ClipPair,
    ConnectionCheck,
    DialogueClip,
    Judgment,
    QuestionnaireResponse,
    Recording,
)
from storage.records import get_or_create_participant, get_study, get_system, hash_token, start_session
from studies.config import OWN_TOPIC, apply_config, parse_config
from studies.sessions import call_relpath, finish_session
from tests.databases import _create_database, _database_url, _drop_database
from tests.rendered_speech import SAMPLE_RATE, alternating_dialogue

STUDY = "people"
# distinct strings, none a substring of another or of anything else the exports hold
PROLIFIC = ["5f0c1e2d3b4a596870000a01", "5f0c1e2d3b4a596870000b02", "5f0c1e2d3b4a596870000c03",
            "5f0c1e2d3b4a596870000d04", "5f0c1e2d3b4a596870000e05"]
ANNOTATORS = ["6a1b2c3d4e5f60718293a4b6", "6a1b2c3d4e5f60718293a4c7"]
NEVER_CONNECTED = "7c2d3e4f5a6b7c8d9e0f1a2b"
CONSENTS = {0: {"publish": True}, 1: {"colleagues": True}, 2: {"newsletter": True}, 3: {"publish": True},
            4: {"publish": False}}
PUBLIC, RESEARCHERS = {0, 3}, {0, 1, 3}
TYPED_TOPIC = f"{OWN_TOPIC}: my sister's wedding in Lyon"  # participant 1's
COMMENTS = {k: f"I live on Quince Street number {k}" for k in range(5)}  # their free texts
CLIP_WORDS = {0: "kilimanjaro", 2: "zanzibar"}  # a clip cut from participant k's recording says it
CONSENT_AT = datetime(2027, 1, 4, 9, 0, tzinfo=timezone.utc)
CALL_S = 600.0  # consent to the end of the call
CODE = "CODE{}"  # the completion codes of participants 0, 1, 2
TEXTS = ("hello there I would like to talk about hiking", "sure what would you like to know about it",
         "what should I bring for a day hike", "water food a map and good shoes")
CONFIG = {
    "name": STUDY, "min_call_seconds": 2, "topics": ["hiking", OWN_TOPIC], "could_not_take_part_code": "NOCONN",
    "consent_items": [{"id": "publish", "text": "My recordings may be published.", "share": "public"},
                      {"id": "colleagues", "text": "Other researchers may use my recordings.", "share": "researchers"},
                      {"id": "newsletter", "text": "Tell me about the results."}],
    "questionnaire": {"after_call": [
        {"id": "right_time", "kind": "scale", "text": "The system answered at the right time.", "points": 5,
         "labels": ["Strongly disagree", "Strongly agree"]},
        {"id": "comment", "kind": "text", "text": "Anything else?", "required": False}]},
    "systems": [{"name": "cascaded", "kind": "cascaded"}]}


@dataclass(frozen=True)
class People:
    engine: object
    root: Path
    sessions: list[int]  # participant k's session
    pseudonyms: list[str]  # participant k's

    @property
    def url(self) -> str:
        return self.engine.url.render_as_string(hide_password=False)


def people_study(request, tmp_path_factory):
    """The study on the backend `request.param` names ("sqlite" or "postgres"), for a
    module-scoped fixture parametrized over both; yields People."""
    root = tmp_path_factory.mktemp(f"people-{request.param}")
    if request.param == "sqlite":
        url, cleanup = f"sqlite:///{root / 'people.db'}", lambda: None
    else:
        server = request.getfixturevalue("postgres_server_url")
        name = _create_database(server, template=request.getfixturevalue("postgres_head_template"))
        url, cleanup = _database_url(server, name), lambda: _drop_database(server, name)
    engine = db.make_engine(url)
    db.init_db(engine)
    try:
        yield build(engine, root)
    finally:
        engine.dispose()
        cleanup()


def build(engine, root: Path) -> People:
    talk = alternating_dialogue(TEXTS).samples
    with session_scope(engine) as s:
        st = apply_config(s, parse_config(CONFIG))
        sessions, pseudonyms = [], []
        for k, prolific in enumerate(PROLIFIC):
            person = get_or_create_participant(s, st, external_id=prolific, consent_at=CONSENT_AT)
            person.consents = {item: {"agreed": agreed, "at": CONSENT_AT.isoformat()}
                               for item, agreed in CONSENTS[k].items()}
            person.completion_code = CODE.format(k) if k < 3 else None
            conversation = start_session(s, person, get_system(s, st, "cascaded"),
                                         TYPED_TOPIC if k == 1 else "hiking")
            s.add(QuestionnaireResponse(participant_id=person.id, session_id=conversation.id,
                                        part=f"call:{conversation.id}",
                                        answers={"right_time": 2 + k % 3, "comment": COMMENTS[k]}))
            sessions.append(conversation.id)
            pseudonyms.append(person.pseudonym)
        s.add_all([ConnectionCheck(study_id=st.id, external_id=who, outcome=outcome, reason=reason)
                   for who, outcome, reason in ((NEVER_CONNECTED, "failed", "no connection"),
                                                (NEVER_CONNECTED, "failed", "no microphone"),
                                                (PROLIFIC[0], "failed", "no connection"), (PROLIFIC[0], "ok", None))])
    for session_id in sessions:
        wav = root / call_relpath(session_id)
        wav.parent.mkdir(parents=True)
        soundfile.write(str(wav), talk.T, SAMPLE_RATE, subtype="PCM_16")
        finish_session(engine, session_id, "complete", root, ended_at=CONSENT_AT + timedelta(seconds=CALL_S))
    with session_scope(engine) as s:
        st = get_study(s, STUDY)
        clips = {}
        for k, word in CLIP_WORDS.items():
            recording = s.exec(select(Recording).where(Recording.session_id == sessions[k])).one()
            clips[k] = DialogueClip(study_id=st.id, recording_id=recording.id, start_s=0, end_s=2, duration_s=2,
                                    activity={"duration": 2.0, "vad": [[[0.2, 0.9]], [[1.1, 1.8]]],
                                              "speakers": ["participant", "system"],
                                              "words": [[[0.2, 0.9, word]], [[1.1, 1.8, "right"]]]})
        done = CONSENT_AT + timedelta(minutes=15)  # the first annotator's; the second has not finished
        annotators = [Annotator(study_id=st.id, token_hash=hash_token(f"t{k}"), external_id=prolific,
                                created_at=CONSENT_AT, completed_at=done if k == 0 else None,
                                completion_code="ANNCODE" if k == 0 else None)
                      for k, prolific in enumerate(ANNOTATORS)]
        s.add_all([*clips.values(), *annotators])
        s.flush()
        pair = ClipPair(study_id=st.id, pair_id="p1", perturbation="gap-shift", natural_clip_id=clips[2].id,
                        perturbed_clip_id=clips[0].id)
        s.add(pair)
        s.flush()
        s.add_all([Judgment(annotator_id=a.id, clip_pair_id=pair.id, natural_side="A", choice="A", rating_a=4,
                            rating_b=2) for a in annotators])
    session_activity(engine, load_study(engine, STUDY), root, compute=True)  # voice activity and words
    return People(engine, root, sessions, pseudonyms)


def bytes_under(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(Path(folder).rglob("*")) if p.is_file())
