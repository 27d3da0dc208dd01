"""The persistence functions the app calls, on both backends, with real audio files."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlmodel import func, select

from storage.db import session_scope
from storage.demo import DEMO_TOPICS, demo_system, seed_demo_study
from storage.files import store_file
from storage.models import AnalysisResult, ClipPair, DialogueClip, DialogueSystem, Judgment, Recording, Study, new_pseudonym
from storage.records import (
    NotFound,
    RecordError,
    add_recording,
    create_annotator,
    end_session,
    examiner_runs,
    get_annotator,
    get_or_create_participant,
    get_or_create_study,
    get_or_create_system,
    get_participant,
    get_study,
    get_system,
    load_analysis_result,
    params_hash,
    record_judgment,
    save_analysis_result,
    save_examiner_run,
    start_session,
)
from tests.databases import sox_samples


def _count(session, model) -> int:
    return session.exec(select(func.count()).select_from(model)).one()


def test_demo_seeding_is_idempotent(engine):
    with session_scope(engine) as session:
        first = seed_demo_study(session)
    with session_scope(engine) as session:
        again = seed_demo_study(session)
        assert again.id == first.id
        assert _count(session, Study) == 1 and _count(session, DialogueSystem) == 3
    with session_scope(engine) as session:
        study = get_study(session, "demo")
        assert study.config == {
            "topics": [
                "pronunciation feedback",
                "places to eat in Manhattan",
                "sightseeing in New York",
                "learning Python",
                "preparing for a hike",
                "a topic of your choice",
            ],
            "session_seconds": 300,
            "clip_seconds": [10.0, 15.0],  # short annotation clips: a demo trial under a minute
        }
        assert list(DEMO_TOPICS) == study.config["topics"]
        cascaded = get_system(session, study, "cascaded")
        assert (cascaded.kind, cascaded.config) == (
            "cascaded",
            {"vad": "silero", "asr": "faster-whisper tiny.en", "llm": "SmolLM2-135M-Instruct",
             "tts": "piper en_US-joe-medium"},
        )
        assert get_system(session, study, "cascade-backchannel").kind == "cascade-backchannel"
        assert get_system(session, study, "predictive").kind == "predictive"


def test_a_demo_study_seeded_before_the_rename_keeps_its_system(engine):
    with session_scope(engine) as session:  # the demo study as seeding made it then
        study = get_or_create_study(session, "demo")
        get_or_create_system(session, study, "cascaded", "cascaded")
        get_or_create_system(session, study, "full-duplex-baseline", "full-duplex")
    with session_scope(engine) as session:
        study = seed_demo_study(session)
        rows = session.exec(select(DialogueSystem).order_by(DialogueSystem.id)).all()
        # the old row stays as it was; the demo's newer system is added beside it
        assert [(s.name, s.kind) for s in rows] == [("cascaded", "cascaded"), ("full-duplex-baseline", "full-duplex"),
                                                    ("predictive", "predictive")]
        assert demo_system(session, study, "cascade-backchannel", "cascade-backchannel", {}).id == rows[1].id


def test_lookups_fail_with_clear_errors(engine):
    with session_scope(engine) as session:
        with pytest.raises(NotFound, match="no study named 'nope'"):
            get_study(session, "nope")
        study = seed_demo_study(session)
        with pytest.raises(NotFound, match="study 'demo' has no dialogue system named 'x'"):
            get_system(session, study, "x")
        with pytest.raises(NotFound, match="no participant with pseudonym"):
            get_participant(session, "guess")
        with pytest.raises(NotFound, match="unknown annotator token"):
            get_annotator(session, "guess")


def test_participant_conversation_and_recordings(engine, tmp_path, speech_files):
    root = tmp_path / "data"
    with session_scope(engine) as session:
        study = seed_demo_study(session)
        person = get_or_create_participant(session, study, external_id="PROLIFIC-1")
        assert get_or_create_participant(session, study, external_id="PROLIFIC-1").id == person.id
        assert get_or_create_participant(session, study).id != person.id  # anonymous: always new
        conversation = start_session(session, person, get_system(session, study, "cascaded"), DEMO_TOPICS[1])
        assert conversation.status == "active" and conversation.ended_at is None
        end_session(session, conversation, "complete")
        with pytest.raises(RecordError, match="session status 'paused' is not one of"):
            end_session(session, conversation, "paused")

        relpath, sha = store_file(speech_files["stereo"], f"sessions/{conversation.id}/two_channel.wav", root)
        recording = add_recording(session, relpath, kind="two-channel", data_root=root, conversation=conversation,
                                  system_channel=1)
        assert add_recording(session, relpath, kind="two-channel", data_root=root).id == recording.id
        with pytest.raises(RecordError, match="system_channel 2 does not exist"):
            add_recording(session, relpath, kind="two-channel", data_root=root, system_channel=2)
        listener, _ = store_file(speech_files["mono"], "listener/user.wav", root)
        add_recording(session, listener, kind="listener", data_root=root)

    with session_scope(engine) as session:
        person = get_participant(session, person.pseudonym)
        assert person.external_id == "PROLIFIC-1"
        stereo, mono = session.exec(select(Recording).order_by(Recording.id)).all()
        assert (stereo.path, stereo.sha256, stereo.session_id, stereo.system_channel) == (
            relpath, sha, conversation.id, 1)
        assert (stereo.sample_rate, stereo.channels, stereo.kind) == (16000, 2, "two-channel")
        assert stereo.duration_s == sox_samples(speech_files["stereo"]) / 16000
        assert (mono.channels, mono.session_id, mono.system_channel) == (1, None, None)
        assert mono.duration_s == sox_samples(speech_files["mono"]) / 16000


def test_recording_errors(engine, tmp_path, speech_files):
    root = tmp_path / "data"
    (root / "notes").mkdir(parents=True)
    (root / "notes/readme.wav").write_text("not audio")
    relpath, _ = store_file(speech_files["mono"], "r.wav", root)
    with session_scope(engine) as session:
        with pytest.raises(RecordError, match="cannot read audio 'notes/readme.wav'"):
            add_recording(session, "notes/readme.wav", kind="listener", data_root=root)
        add_recording(session, relpath, kind="listener", data_root=root)
    (root / relpath).unlink()
    store_file(speech_files["stereo"], relpath, root)  # a different file at the same path
    with session_scope(engine) as session:
        with pytest.raises(RecordError, match="registered with another checksum"):
            add_recording(session, relpath, kind="listener", data_root=root)


def _pair(session, study) -> ClipPair:
    clip = DialogueClip(study_id=study.id, start_s=0.0, end_s=10.0, duration_s=10.0)
    session.add(clip)
    session.flush()
    pair = ClipPair(study_id=study.id, pair_id="p1", perturbation="gap-shift", natural_clip_id=clip.id,
                    perturbed_clip_id=clip.id)
    session.add(pair)
    session.flush()
    return pair


def test_annotator_tokens_and_idempotent_judgments(engine):
    with session_scope(engine) as session:
        study = seed_demo_study(session)
        annotator, token = create_annotator(session, study, external_id="PROLIFIC-9")
        assert token not in annotator.token_hash and len(token) >= 32
        pair = _pair(session, study)
    with session_scope(engine) as session:
        assert get_annotator(session, token).id == annotator.id
        first, created = record_judgment(
            session, Judgment(annotator_id=annotator.id, clip_pair_id=pair.id, natural_side="B", choice="B",
                              rating_a=2.0, rating_b=4.0, plays_a=1, plays_b=2))
        assert created and first.id is not None
    with session_scope(engine) as session:  # the same answer submitted twice, then a changed one
        again, created = record_judgment(
            session, Judgment(annotator_id=annotator.id, clip_pair_id=pair.id, natural_side="B", choice="A"))
        assert not created and again.id == first.id
    with session_scope(engine) as session:
        stored = session.exec(select(Judgment)).one()
        assert (stored.choice, stored.rating_b, stored.plays_b) == ("B", 4.0, 2)
        with pytest.raises(RecordError, match="judgment side 'left' is not one of A, B"):
            record_judgment(session, Judgment(annotator_id=annotator.id, clip_pair_id=pair.id, natural_side="A",
                                              choice="left"))


def test_analysis_results_upsert(engine):
    params = {"ipu_silence_s": 0.2, "vad": "silero"}
    same_params_reordered = {"vad": "silero", "ipu_silence_s": 0.2}
    assert params_hash(params) == params_hash(same_params_reordered) != params_hash({"ipu_silence_s": 0.25})
    with session_scope(engine) as session:
        study = seed_demo_study(session)
        assert load_analysis_result(session, "stats", "session:1", params) is None
        first = save_analysis_result(session, "stats", "session:1", params, {"gaps": 2}, study=study)
        save_analysis_result(session, "stats", "session:1", {"ipu_silence_s": 0.25}, {"gaps": 5})
    with session_scope(engine) as session:
        second = save_analysis_result(session, "stats", "session:1", same_params_reordered, {"gaps": 3}, study=study)
        assert second.id == first.id and second.result == {"gaps": 3}
        assert second.updated_at > first.updated_at and second.created_at == first.created_at
    with session_scope(engine) as session:
        assert _count(session, AnalysisResult) == 2
        loaded = load_analysis_result(session, "stats", "session:1", params)
        assert (loaded.result, loaded.parameters, loaded.study_id) == ({"gaps": 3}, params, study.id)
        assert load_analysis_result(session, "judge-metrics", "session:1", params) is None
        with pytest.raises(RecordError, match="must be plain JSON values"):
            save_analysis_result(session, "stats", "x", {"f": float("nan")}, {})
        with pytest.raises(RecordError, match="must be plain JSON values"):
            save_analysis_result(session, "stats", "x", {}, {"obj": object()})


def test_session_scope_rolls_back_on_error(engine):
    with pytest.raises(RuntimeError, match="boom"):
        with session_scope(engine) as session:
            seed_demo_study(session)
            raise RuntimeError("boom")
    with session_scope(engine) as session:
        assert _count(session, Study) == 0
    with pytest.raises(sa.exc.IntegrityError):
        with session_scope(engine) as session:
            session.add_all([Study(name="x"), Study(name="x")])
    with session_scope(engine) as session:
        assert _count(session, Study) == 0


def test_examiner_runs_are_kept_per_system_and_task_set(engine):
    def save(session, system, seed, tor):
        return save_examiner_run(session, system, "cascaded", {}, {"seed": seed, "per_task": 2}, 14,
                                 {"smooth_tor": tor}, {"smooth_turn_taking": {"rows": []}}, "runs/x")

    with session_scope(engine) as session:
        first = save(session, "cascaded", 0, 0.5)
        save(session, "cascaded", 1, 0.0)  # another task set: another row
        save(session, "cascade-backchannel", 0, 1.0)
    with session_scope(engine) as session:
        again = save(session, "cascaded", 0, 1.0)  # the same system on the same set: replaced
        assert again.id == first.id and again.summary == {"smooth_tor": 1.0}
    with session_scope(engine) as session:
        assert len(examiner_runs(session)) == 3
        assert sorted(r.task_set["seed"] for r in examiner_runs(session, "cascaded")) == [0, 1]
        with pytest.raises(RecordError):
            save_examiner_run(session, "cascaded", "cascaded", {}, {"seed": float("nan")}, 1, {}, {}, "x")


def test_a_pseudonym_is_never_read_as_a_command_line_option():
    # token_urlsafe begins with "-" 1 time in 64: `studies erase --participant -x...` then failed
    drawn = [new_pseudonym() for _ in range(5000)]
    assert not [p for p in drawn if p.startswith("-")]
    assert len(set(drawn)) == len(drawn) and {len(p) for p in drawn} == {22}
