"""The demo callers' questionnaire answers (demo.build.answer_calls): made from each recorded call's
measured reply latency, valid by the participant API's own check, stored once. Two calls of real
speech (espeak-ng), one whose system answers after 0.6 s and one after 2 s, stored as the demo's
calls are (finish_session), without the build's models.
"""

from __future__ import annotations

import soundfile
from sqlmodel import select

from analysis.questionnaire_demo import recorded_call
from demo.build import answer_calls
from speech.audio import load_audio
from storage import db
from storage.db import session_scope
from storage.demo import seed_demo_study
from storage.files import resolve
from storage.models import QuestionnaireResponse, Recording, utc_now
from storage.records import get_or_create_participant, get_system, start_session
from studies.questionnaire import answer_problem, default_questionnaire
from studies.sessions import call_relpath, finish_session
from tests.rendered_speech import SAMPLE_RATE, alternating_dialogue

TEXTS = ("hello there I would like to talk about hiking", "sure what would you like to know about it",
         "what should I bring for a day hike", "water food a map and good shoes")


def test_each_demo_caller_answers_after_its_call_from_what_was_measured(tmp_path):
    engine = db.make_engine(f"sqlite:///{tmp_path / 'demo.db'}")
    db.init_db(engine)
    ids = {}
    with session_scope(engine) as session:
        study = seed_demo_study(session)
        for name, gap in (("cascaded", 2.0), ("cascade-backchannel", 0.6)):
            system = get_system(session, study, name)
            caller = get_or_create_participant(session, study, external_id=f"demo-caller-{system.id}",
                                               consent_at=utc_now())
            ids[name] = (start_session(session, caller, system, "hiking").id, gap)
    for session_id, gap in ids.values():
        wav = tmp_path / call_relpath(session_id)
        wav.parent.mkdir(parents=True)
        soundfile.write(str(wav), alternating_dialogue(TEXTS, gap=gap).samples.T, SAMPLE_RATE, subtype="PCM_16")
        finish_session(engine, session_id, "complete", tmp_path)

    # what the answers are made from: the reply latency measured on the recording
    with session_scope(engine) as session:
        for name, (session_id, gap) in ids.items():
            path = session.exec(select(Recording.path).where(Recording.session_id == session_id)).one()
            audio, rate = load_audio(resolve(path, tmp_path), sample_rate=SAMPLE_RATE, require_channels=2)
            assert abs(recorded_call(session_id, 0, name, audio, rate).latency_s - gap) < 0.1

    assert answer_calls(engine, tmp_path) == 2
    items = default_questionnaire(3).after_call
    with session_scope(engine) as session:
        stored = session.exec(select(QuestionnaireResponse)).all()
        assert sorted(r.part for r in stored) == sorted(f"call:{i}" for i, _ in ids.values())
        for response in stored:  # valid answers, as the participant API would have taken them
            assert answer_problem(items, response.answers) is None
            assert response.session_id is not None and len(response.systems) == 1
    # one call each: nothing to rank; built again, nothing new is stored
    assert answer_calls(engine, tmp_path) == 0
