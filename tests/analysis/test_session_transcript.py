"""A session's transcript (analysis.session_transcript): the participant's recognised words and the
system's own text from the timing log, with where a reply was cut off.

The event-log rules on hand-written logs of each kind of system; then one real call of the
cascade (espeak-ng caller, the packaged models) whose reply the caller talks over: registered as a
study session, its words recognised by the background analysis' own step, the transcript holds the
participant's words at their times and the system's reply text cut where the log says it yielded,
in the session view and in the dataset export.
"""

from __future__ import annotations

import datasets
import numpy as np
import pytest
from sqlmodel import select

from analysis.dataset import export_dataset
from analysis.session_transcript import (
    ASR,
    PARTICIPANT,
    SYSTEM,
    SYSTEM_TEXT,
    read_timing_log,
    session_transcript,
    transcript_html,
    transcript_table,
)
from analysis.views import StudyAnalysis, session_view
from demo.build import _register_call
from examiner.scheduling import ScheduledFeed
from storage import db
from storage.db import session_scope
from storage.demo import DEMO_STUDY, seed_demo_study
from storage.models import DialogueSystem
from studies.offline_call import run_offline_feed
from systems.base import SAMPLE_RATE
from systems.cascaded import CascadedSystem
from tests.studies.conftest import espeak_16k
from turntaking.activity import Conversation, Word

TOPIC = "preparing for a hike"
QUESTION = "What should I pack for a day hike in the mountains?"
INTERRUPTION = "Wait, stop. Will it rain on Saturday?"


def _conv(system_segments, participant_words=()) -> Conversation:
    words = [Word(s, e, t) for s, e, t in participant_words]
    return Conversation(30.0, ([(w.start, w.end) for w in words], system_segments), (words, []))


def test_a_cascade_reply_is_cut_where_it_yielded_and_a_finished_one_plays_whole():
    events = [
        {"mic_s": 4.1, "event": "decided", "text": "Pack water", "turn": 1},
        {"mic_s": 4.3, "event": "audio_start"},
        {"mic_s": 4.9, "event": "reply_chunk", "text": "and a warm layer.", "turn": 1},
        {"mic_s": 6.0, "event": "reply", "text": "Pack water and a warm layer.", "turn": 1},
        {"mic_s": 11.0, "event": "decided", "text": "It may", "turn": 2},
        {"mic_s": 11.2, "event": "audio_start"},
        {"mic_s": 11.7, "event": "reply_chunk", "text": "rain in the afternoon.", "turn": 2},
        {"mic_s": 12.5, "event": "yielded", "dropped_s": 1.2},
        # the next turn is still being generated when the caller speaks: nothing was playing
        {"mic_s": 20.0, "event": "decided", "text": "Sure.", "turn": 3},
        {"mic_s": 20.1, "event": "audio_start"},
        {"mic_s": 24.0, "event": "yielded", "dropped_s": 0.0},
    ]
    system_speech = [(4.3, 7.1), (11.2, 12.5), (20.1, 20.6)]
    rows = session_transcript(_conv(system_speech, [(1.0, 1.4, "what"), (1.5, 2.0, "to"), (2.1, 2.6, "pack"),
                                                    (12.2, 12.6, "wait")]), events)
    assert [(r.speaker, r.text, r.time_s, r.end_s, r.cut_s) for r in rows] == [
        (PARTICIPANT, "what to pack", 1.0, 2.6, None),
        (SYSTEM, "Pack water and a warm layer.", 4.3, 7.1, None),
        (SYSTEM, "It may rain in the afternoon.", 11.2, 12.5, 12.5),
        (PARTICIPANT, "wait", 12.2, 12.6, None),
        (SYSTEM, "Sure.", 20.1, 20.6, None),
    ]
    assert [r.played for r in rows] == ["–", "whole", "cut at 12.50 s", "–", "whole"]
    page = transcript_html(transcript_table(rows))
    assert "[cut at 12.50 s]" in page and "It may rain in the afternoon." in page


def test_a_text_streaming_server_its_truncation_and_a_log_without_text():
    events = [
        {"mic_s": 2.0, "event": "text", "text": "Hel"}, {"mic_s": 2.2, "event": "text", "text": "lo there."},
        {"mic_s": 5.0, "event": "text", "text": "The trail"}, {"mic_s": 5.4, "event": "text", "text": " is long."},
        {"mic_s": 6.0, "event": "speech_start", "dropped_s": 0.8},
        {"mic_s": 6.1, "event": "truncated", "item_id": "x", "audio_end_ms": 900},
        {"mic_s": 6.3, "event": "reply", "status": "cancelled"},
        {"mic_s": 9.0, "event": "backchannel", "text": "mm-hmm"},
    ]
    rows = session_transcript(_conv([(2.0, 3.1), (5.0, 6.0), (9.0, 9.4)]), events)
    assert [(r.text, r.time_s, r.end_s, r.played) for r in rows] == [
        ("Hello there.", 2.0, 3.1, "whole"), ("The trail is long.", 5.0, 6.0, "cut at 6.00 s"),
        ("mm-hmm", 9.0, 9.4, "whole")]
    # no text in the log (or no log): the system channel's recognised words
    conv = Conversation(10.0, ([], [(1.0, 2.0)]), ([], [Word(1.0, 1.5, "hi"), Word(1.6, 2.0, "there")]))
    [row] = session_transcript(conv, [{"mic_s": 1.0, "event": "audio_start"}])
    assert (row.speaker, row.text, row.source, row.played) == (SYSTEM, "hi there", ASR, "–")


def test_a_killed_call_leaves_a_log_whose_last_line_is_cut(tmp_path):
    log = tmp_path / "timing.jsonl"
    log.write_text('{"t": 0.0, "mic_s": 0.0, "event": "start"}\n{"t": 1.0, "mic_s": 0.9, "event": "deci')
    assert [e["event"] for e in read_timing_log(log)] == ["start"]


@pytest.fixture(scope="module")
def talked_over(tmp_path_factory, cascade_components):
    """(analysis, session id, the call's timing events, where the interruption started (s)): one
    real call of the cascade, its reply talked over 1 s after its onset, stored as a session."""
    root = tmp_path_factory.mktemp("transcript")
    data_root = root / "data"
    question = espeak_16k(QUESTION, root / "question.wav")
    interruption = espeak_16k(INTERRUPTION, root / "interruption.wav")
    feed = ScheduledFeed(np.concatenate([np.zeros(SAMPLE_RATE // 2, dtype=np.float32), question]), interruption,
                         after_onset=SAMPLE_RATE)
    # long replies, which it stops when talked over: the interruption falls inside one
    system = CascadedSystem({"max_sentences": 4, "barge_in": "yield"}, components=cascade_components)
    result = run_offline_feed(feed, root / "call.wav", system=system, topic=TOPIC)
    assert feed.onset is not None, "the system never answered the question"
    engine = db.make_engine(f"sqlite:///{root / 'app.db'}")
    db.init_db(engine)
    with session_scope(engine) as session:
        study = seed_demo_study(session)
        system_id = session.exec(select(DialogueSystem.id).where(DialogueSystem.study_id == study.id,
                                                                 DialogueSystem.kind == "cascaded")).first()
    session_id = _register_call(engine, data_root, system_id, TOPIC, root / "call.wav", result.log_path)
    analysis = StudyAnalysis(engine, DEMO_STUDY, data_root)
    assert session_id in analysis.activity  # the participant's words recognised on the recording
    return analysis, session_id, read_timing_log(result.log_path), feed.event_start / SAMPLE_RATE


def test_the_session_view_reads_the_real_call_as_a_transcript(talked_over):
    analysis, session_id, events, interrupted_at = talked_over
    view, _ = session_view(analysis, session_id)
    table = view.tables["transcript"]
    print(table.to_string())
    said = table[table["speaker"] == PARTICIPANT]
    assert (said["source"] == ASR).all() and (said["end_s"] > said["time_s"]).all()
    # the question, heard where it was said (from 0.5 s), and the interruption where it began
    [question] = said[said["text"].str.contains("hike", case=False)].itertuples()
    assert question.time_s < 1.5 and question.end_s > 2.0
    assert ((said["time_s"] - interrupted_at).abs() < 0.5).any(), said
    replies = table[table["speaker"] == SYSTEM]
    assert len(replies) and (replies["source"] == SYSTEM_TEXT).all()
    # the first reply: the text the system decided on, from its first audio, cut where it yielded
    first = replies.iloc[0]
    decided = next(e for e in events if e["event"] == "decided")
    started = next(e for e in events if e["event"] == "audio_start")
    yielded = next(e for e in events if e["event"] == "yielded")
    assert first["text"].startswith(decided["text"]) and first["time_s"] == pytest.approx(started["mic_s"])
    assert first["played"] == f"cut at {yielded['mic_s']:.2f} s" and first["end_s"] == pytest.approx(yielded["mic_s"])
    assert interrupted_at < yielded["mic_s"] < interrupted_at + 1.0
    assert list(table["time_s"]) == sorted(table["time_s"])


def test_the_session_view_says_whether_each_reply_answered_its_turn(talked_over):
    analysis, session_id, events, _ = talked_over
    view, _ = session_view(analysis, session_id)
    replies = view.tables["replies"]
    print(replies.to_string())
    heard = {e["turn"]: e["text"] for e in events if e["event"] == "transcript"}
    # the question's turn, as the system heard it, with what it said (cut where it yielded: its voiced chunks)
    first = replies.iloc[0]
    assert "hike" in first["heard"].lower() and first["heard"] in heard.values()
    decided = next(e for e in events if e["event"] == "decided")
    assert first["reply"].startswith(decided["text"])
    assert list(replies.columns) == ["heard", "reply", "relevance", "echo", "apology", "disclaimer", "sentences"]
    # with the interruption's turn answered too, each reply has another turn to be compared with
    if len(replies) > 1:
        assert replies["relevance"].notna().all()
    [line] = [note for note in view.notes if note.startswith("Replies:")]
    assert f"Replies: {len(replies)};" in line


def test_the_export_carries_both_channels_words_with_times(talked_over, tmp_path):
    analysis, session_id, events, interrupted_at = talked_over
    exported = datasets.load_from_disk(str(export_dataset(analysis, tmp_path / "dataset")))["transcripts"].to_pandas()
    rows = exported[exported["session_id"] == session_id]
    assert set(rows["speaker"]) == {PARTICIPANT, SYSTEM}
    assert list(rows.columns) == ["session_id", "speaker", "start_s", "end_s", "text", "source", "cut"]
    view, _ = session_view(analysis, session_id)
    shown = view.tables["transcript"]
    assert list(rows["text"]) == list(shown["text"]) and list(rows["start_s"]) == list(shown["time_s"])
    yielded = next(e for e in events if e["event"] == "yielded")
    cut = rows[rows["cut"].notna()]
    assert len(cut) >= 1 and cut.iloc[0]["cut"] == pytest.approx(yielded["mic_s"])
    assert (rows.loc[rows["speaker"] == PARTICIPANT, "source"] == ASR).all()
