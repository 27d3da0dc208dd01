"""A session's conversation as a transcript: the participant's words as the speech recogniser
heard them on the recording, and the system's own text from the call's timing log (what it
decided to say, with when its audio started and whether it was played whole or cut off where it
yielded to the participant).

Rows are utterances, in time order, on the recording's (microphone's) clock:

    time_s  end_s  speaker      text                               source       cut_s
    1.12    3.94   participant  hello I am planning a day hike     asr          None
    5.02    9.18   system       I'm so glad you are going ...      system text  None
    12.40   13.90  system       Pack water and ...                 system text  13.90   (yielded there)

The timing log's events (studies.recorder, written from the dialogue system's events):
"decided" / "reply_chunk" / "reply" carry a reply's text with its turn, "audio_start" is where
its audio began, "yielded" (a cascade) or "truncated" / "speech_start" with dropped audio (a
realtime server) where it was cut; "backchannel" texts are said whole; "text" pieces are a
full-duplex server's words as it speaks them (a row from when its first piece came). A system
whose log holds no text (or a session without a log) gets its channel's recognised words
instead, marked "asr".
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import pandas as pd

from storage.files import resolve
from studies.sessions import timing_relpath
from systems.events import EventKind
from studies.timing import read_timing_log
from turntaking.activity import Conversation, Word

PARTICIPANT, SYSTEM = "participant", "system"
ASR, SYSTEM_TEXT = "asr", "system text"
# Recognised words this close together are one utterance (a breath between phrases is not a turn).
UTTERANCE_GAP_S = 1.0
# A full-duplex server's text pieces this far apart start a new row.
TEXT_GAP_S = 1.5
# System speech starting this long before its logged audio start still belongs to it (the log's
# time is the block's send time, the voice activity's onset is found on 32 ms frames).
ONSET_SLACK_S = 0.3
TRANSCRIPT_COLUMNS = ["time_s", "end_s", "speaker", "text", "source", "played"]


@dataclass(frozen=True)
class TranscriptRow:
    time_s: float
    end_s: float
    speaker: str  # PARTICIPANT or SYSTEM
    text: str
    source: str  # ASR or SYSTEM_TEXT
    cut_s: float | None = None  # a system reply cut off (barge-in): where its audio stopped

    @property
    def played(self) -> str:
        """For the system's own text: "whole", or where it was cut; "–" for recognised words (a
        blank as the other tables write it: an empty column would not read back alike from CSV)."""
        if self.source != SYSTEM_TEXT:
            return "–"
        return "whole" if self.cut_s is None else f"cut at {self.cut_s:.2f} s"


def utterances(words: list[Word], speaker: str, gap_s: float = UTTERANCE_GAP_S) -> list[TranscriptRow]:
    """Recognised words as rows, one per run of words less than `gap_s` apart."""
    rows, run = [], []
    for word in sorted(words, key=lambda w: (w.start, w.end)):
        if run and word.start - run[-1].end >= gap_s:
            rows.append(_asr_row(run, speaker))
            run = []
        if word.text.strip():
            run.append(word)
    if run:
        rows.append(_asr_row(run, speaker))
    return rows


def _asr_row(run: list[Word], speaker: str) -> TranscriptRow:
    return TranscriptRow(round(run[0].start, 3), round(max(w.end for w in run), 3), speaker,
                         " ".join(w.text.strip() for w in run), ASR)


@dataclass
class _Reply:
    start: float
    turn: object = None  # the cascade's turn whose text it is; None: `text` holds it
    text: str = ""  # a text-streaming server's words, or a backchannel's
    last: float = 0.0  # when its latest text piece came (a text-streaming server)
    cut: float | None = None
    # A yield with nothing left to drop: the reply was cut there only if it was still being
    # said (it may have ended before, the next one still being generated).
    cut_if_speaking: float | None = None


def _spoken_replies(events: list[dict]) -> list[tuple[_Reply, str]]:
    """(reply, its text) of each reply whose audio started, in order."""
    texts: dict[object, list[str]] = {}  # turn -> the pieces it decided to say, in order
    finished: dict[object, str] = {}  # turn -> its whole text, for a reply generated to its end
    replies: list[_Reply] = []
    decided_turn = None
    open_reply: _Reply | None = None  # the one whose audio is playing, until cut or the next

    def cut(at: float, certain: bool = True) -> None:
        nonlocal open_reply
        if open_reply is not None and open_reply.cut is None:
            if certain:
                open_reply.cut = at
            else:
                open_reply.cut_if_speaking = at
        open_reply = None

    for event in events:
        kind, at = event.get("event"), float(event["mic_s"])
        text = event.get("text") if isinstance(event.get("text"), str) else ""
        if kind == EventKind.DECIDED:
            decided_turn = event.get("turn")
            texts[decided_turn] = [text]
        elif kind == EventKind.REPLY_CHUNK:
            texts.setdefault(event.get("turn"), []).append(text)
        elif kind == EventKind.REPLY and text:
            finished[event.get("turn")] = text
        elif kind == EventKind.REPLY and event.get("status") in ("cancelled", "incomplete"):
            cut(at)  # a realtime server's reply that was cut off (its generation ending is no cut)
        elif kind == EventKind.AUDIO_START and decided_turn is not None:
            open_reply = _Reply(at, decided_turn)
            replies.append(open_reply)
        elif kind == EventKind.BACKCHANNEL and text:
            replies.append(_Reply(at, text=text))
        elif kind == EventKind.TEXT and text:
            if open_reply is None or open_reply.turn is not None or at - open_reply.last > TEXT_GAP_S:
                open_reply = _Reply(at, last=at)
                replies.append(open_reply)
            open_reply.text += text
            open_reply.last = at
        elif kind == EventKind.YIELDED:
            cut(at, certain=float(event.get("dropped_s") or 0) > 0)
        elif kind == EventKind.TRUNCATED or (kind == EventKind.SPEECH_START and float(event.get("dropped_s") or 0) > 0):
            cut(at)
    out = []
    for reply in replies:
        if reply.turn is not None:
            said = finished.get(reply.turn) or " ".join(p.strip() for p in texts.get(reply.turn, []) if p.strip())
        else:
            said = reply.text
        said = " ".join(said.split())  # a reply's paragraph breaks read as spaces in one row
        if said:
            out.append((reply, said))
    return out


def _speech_end(segments, start: float, limit: float) -> float:
    """Where the system's speech that began at `start` ended, before `limit` (the next reply)."""
    ends = [end for s, end in segments if start - ONSET_SLACK_S <= s < limit and end > start]
    return round(min(max(ends), limit), 3) if ends else round(start, 3)


def system_rows(events: list[dict], segments, duration: float) -> list[TranscriptRow]:
    """The system's own text from its timing log, a row per reply whose audio started; `segments`:
    the system channel's voice activity, which says where a reply played whole ended."""
    spoken = _spoken_replies(events)
    rows = []
    for k, (reply, text) in enumerate(spoken):
        limit = spoken[k + 1][0].start if k + 1 < len(spoken) else max(duration, reply.start)
        end = reply.cut if reply.cut is not None else _speech_end(segments, reply.start, limit)
        if reply.cut_if_speaking is not None and end >= reply.cut_if_speaking - ONSET_SLACK_S:
            reply.cut = end = min(end, reply.cut_if_speaking)
        rows.append(TranscriptRow(round(reply.start, 3), round(max(end, reply.start), 3), SYSTEM, text, SYSTEM_TEXT,
                                  None if reply.cut is None else round(reply.cut, 3)))
    return rows


def session_transcript(conv: Conversation | None, events: list[dict] | None = None) -> list[TranscriptRow]:
    """The session's transcript: the participant's recognised words (`conv`, its voice activity
    with words; the system on `conv.meta["system_channel"]`, 1 unless said) and the system's own
    text from the timing log's `events`, or the system channel's recognised words where the log
    holds none. Rows in time order."""
    system_channel = int(conv.meta.get("system_channel", 1)) if conv is not None else 1
    words = conv.words if conv is not None and conv.words is not None else ([], [])
    rows = utterances(words[1 - system_channel], PARTICIPANT)
    segments = conv.activity[system_channel] if conv is not None else []
    duration = conv.duration if conv is not None else max((float(e["mic_s"]) for e in events or []), default=0.0)
    own = system_rows(events or [], segments, duration)
    rows += own if own else utterances(words[system_channel], SYSTEM)
    return sorted(rows, key=lambda r: (r.time_s, r.end_s))


def transcript_table(rows: list[TranscriptRow]) -> pd.DataFrame:
    """The rows as the session view's table: time_s, end_s, speaker, text, source, played."""
    return pd.DataFrame([{"time_s": r.time_s, "end_s": r.end_s, "speaker": r.speaker, "text": r.text,
                          "source": r.source, "played": r.played} for r in rows], columns=TRANSCRIPT_COLUMNS)


def _clock(seconds: float) -> str:
    minutes, rest = divmod(max(0.0, float(seconds)), 60.0)
    return f"{int(minutes)}:{rest:04.1f}"


def transcript_html(table: pd.DataFrame | None) -> str:
    """The transcript as a readable conversation (the dashboard's Session tab, beside the
    timeline): each row's time, who spoke, the words; a cut reply says where it stopped."""
    if table is None or not len(table):
        return "<div class='session-transcript'><p>No transcript: the session has no recognised words yet.</p></div>"
    lines = []
    for row in table.itertuples():
        mark = f" <em class='cut'>[{html.escape(row.played)}]</em>" if row.played.startswith("cut") else ""
        note = " <small>(recognised)</small>" if row.speaker == SYSTEM and row.source == ASR else ""
        lines.append(f"<p class='turn {html.escape(row.speaker)}'><span class='time'>{_clock(row.time_s)}–"
                     f"{_clock(row.end_s)}</span> <b>{html.escape(row.speaker)}</b>{note}: "
                     f"{html.escape(row.text)}{mark}</p>")
    return ("<div class='session-transcript' style='max-height:560px;overflow-y:auto'>"
            "<h4>Transcript</h4>" + "".join(lines) + "</div>")


def stored_transcript(session_id: int, conv: Conversation | None, data_root=None) -> list[TranscriptRow]:
    """The transcript of a stored session: `conv` its voice activity (None: none yet), the system's
    text from its timing log under the data root (studies.sessions.timing_relpath), if it has one."""
    path = resolve(timing_relpath(session_id), data_root)
    return session_transcript(conv, read_timing_log(path) if path.is_file() else [])
