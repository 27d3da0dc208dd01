"""Who an export names, and whose speech it carries. A study of five participants with real
recorded calls (espeak-ng speech, each call ended through `finish_session`), their questionnaire
answers, one typed topic, and an annotator's judgment; two of the five agreed to an optional
consent item that allows publication.

- Every view, the report, the dataset export, the questionnaire answers and the annotators'
  judgments name people by pseudonym: no Prolific ID in any of their bytes.
- The payments table, asked for explicitly, is the one place the Prolific IDs are.
- `export-dataset --share-level public` carries the audio, the words and the typed topic of the
  two who agreed and of nobody else, and its manifest says three were left out, and why.
"""

from __future__ import annotations

import json

import datasets
import pytest
import soundfile
from sqlmodel import select

from analysis.dataset import export_dataset
from analysis.report import write_report
from analysis.study import load_study
from analysis.study_sessions import session_activity
from analysis.views import StudyAnalysis, study_view
from annotation.export import export_judgments
from storage import db
from storage.db import session_scope
from storage.models import Annotator, ClipPair, DialogueClip, Judgment, QuestionnaireResponse
from storage.records import get_or_create_participant, get_system, hash_token, start_session
from studies.config import OWN_TOPIC, apply_config, parse_config
from studies.sessions import call_relpath, finish_session
from tests.command_line import run_cli
from tests.rendered_speech import SAMPLE_RATE, alternating_dialogue

PROLIFIC = [f"5f0c1e2d3b4a59687{k:07d}" for k in range(5)]
AGREED = {0, 3}  # who allowed publication
ANNOTATOR = "6a1b2c3d4e5f60718293a4b5"
TEXTS = ("hello there I would like to talk about hiking", "sure what would you like to know about it",
         "what should I bring for a day hike", "water food a map and good shoes")


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("people")
    engine = db.make_engine(f"sqlite:///{root / 'people.db'}")
    db.init_db(engine)
    talk = alternating_dialogue(TEXTS).samples
    with session_scope(engine) as s:
        st = apply_config(s, parse_config({
            "name": "people", "min_call_seconds": 2, "topics": ["hiking", OWN_TOPIC],
            "consent_items": [{"id": "publish", "text": "My recordings may be published.", "share": "public"}],
            "systems": [{"name": "cascaded", "kind": "cascaded"}]}))
        ids = []
        for k, prolific in enumerate(PROLIFIC):
            person = get_or_create_participant(s, st, external_id=prolific)
            person.consents = {"publish": {"agreed": k in AGREED, "at": "2027-01-01T00:00:00+00:00"}}
            person.completion_code = f"CODE{k}"
            topic = f"{OWN_TOPIC}: my sister's wedding in Lyon" if k == 1 else "hiking"
            conversation = start_session(s, person, get_system(s, st, "cascaded"), topic)
            s.add(QuestionnaireResponse(participant_id=person.id, session_id=conversation.id,
                                        part=f"call:{conversation.id}", answers={"right_time": 4}))
            ids.append(conversation.id)
        annotator = Annotator(study_id=st.id, token_hash=hash_token("t"), external_id=ANNOTATOR, completion_code="A1")
        clip = DialogueClip(study_id=st.id, start_s=0, end_s=2, duration_s=2)
        s.add_all([annotator, clip])
        s.flush()
        pair = ClipPair(study_id=st.id, pair_id="p1", perturbation="gap-shift", natural_clip_id=clip.id,
                        perturbed_clip_id=clip.id)
        s.add(pair)
        s.flush()
        s.add(Judgment(annotator_id=annotator.id, clip_pair_id=pair.id, natural_side="A", choice="A"))
    for session_id in ids:
        wav = root / call_relpath(session_id)
        wav.parent.mkdir(parents=True)
        soundfile.write(str(wav), talk.T, SAMPLE_RATE, subtype="PCM_16")
        finish_session(engine, session_id, "complete", root)
    session_activity(engine, load_study(engine, "people"), root, compute=True)  # voice activity and words
    yield engine, root, ids
    engine.dispose()


def _bytes_under(folder) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


def test_views_report_exports_name_people_by_pseudonym_only(study, tmp_path):
    engine, root, _ = study
    analysis = StudyAnalysis(engine, "people", root)
    report = write_report(analysis, tmp_path / "report").parent
    export_dataset(analysis, tmp_path / "dataset")
    with session_scope(engine) as s:
        from storage.records import get_study

        export_judgments(s, get_study(s, "people"), tmp_path / "judgments.csv")
    shown = [_bytes_under(report), _bytes_under(tmp_path / "dataset"), (tmp_path / "judgments.csv").read_bytes(),
             analysis.questionnaire_answers.rows.to_csv().encode(),
             json.dumps([study_view(analysis, "overview").tables[t].to_dict() for t in
                         ("excluded_sessions", "annotators")], default=str).encode()]
    for identifier in (*PROLIFIC, ANNOTATOR):
        assert not [k for k, blob in enumerate(shown) if identifier.encode() in blob], identifier
    sessions = datasets.load_from_disk(str(tmp_path / "dataset"))["sessions"].to_pandas()
    with session_scope(engine) as s:
        from storage.models import Participant

        pseudonyms = set(s.exec(select(Participant.pseudonym)).all())
    assert set(sessions["participant"]) == pseudonyms
    assert b"annotator-1" in (tmp_path / "judgments.csv").read_bytes()


def test_the_payments_table_is_where_the_prolific_ids_are(study, tmp_path):
    engine, _, _ = study
    url = engine.url.render_as_string(hide_password=False)
    out = tmp_path / "payments.csv"
    done = run_cli("analysis", "payments", "--study", "people", "--out", out, "--database-url", url)
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert all(p in text for p in (*PROLIFIC, ANNOTATOR)) and "CODE3" in text and "annotator-1" in text
    assert oct(out.stat().st_mode & 0o777) == "0o600"
    bad = run_cli("analysis", "payments", "--study", "nope", "--out", tmp_path / "x.csv", "--database-url", url)
    assert bad.returncode != 0 and bad.stderr.strip() == "error: no study named 'nope'"


def test_a_public_export_carries_the_speech_of_those_who_agreed_only(study, tmp_path):
    engine, root, ids = study
    url = engine.url.render_as_string(hide_password=False)
    out = tmp_path / "public"
    done = run_cli("analysis", "export-dataset", "--study", "people", "--out", out, "--share-level", "public",
                   "--database-url", url, "--data-root", root)
    assert done.returncode == 0, done.stderr
    assert "speech of 2 of 5 participants (3 left out: no consent to share with public)" in done.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert (manifest["share_level"], manifest["participants_with_audio"], manifest["left_out"]) == (
        "public", 2, {"no consent to share with public": 3})
    exported = datasets.load_from_disk(str(out))
    sessions = exported["sessions"].to_pandas().set_index("session_id")
    agreed = {ids[k] for k in AGREED}
    with_audio = {i for i, audio in sessions["audio"].items() if audio is not None and audio.get("bytes")}
    assert with_audio == agreed
    with_words = {i for i, va in sessions["voice_activity"].items() if va and json.loads(va)["words"]}
    assert with_words == agreed
    assert set(exported["transcripts"].to_pandas()["session_id"]) == agreed
    assert sessions.loc[ids[1], "topic"] == OWN_TOPIC  # what they typed is their words too
    assert len(sessions) == 5 and sessions["duration_s"].notna().all()  # everyone's measures stay
    # the study team's own export: everyone's speech, and its manifest says what it is
    internal = tmp_path / "internal"
    export_dataset(StudyAnalysis(engine, "people", root), internal)
    assert json.loads((internal / "manifest.json").read_text())["share_level"] is None
    everyone = datasets.load_from_disk(str(internal))["sessions"].to_pandas()
    assert everyone["audio"].map(lambda a: a is not None and bool(a.get("bytes"))).all()
    bad = run_cli("analysis", "export-dataset", "--study", "people", "--out", tmp_path / "x", "--share-level", "all",
                  "--database-url", url)
    assert bad.returncode == 2 and "invalid choice: 'all'" in bad.stderr and not (tmp_path / "x").exists()
