"""What a dialogue system reports while it runs: every kind of event, in one place.

A system emits `SystemEvent(kind, fields)`; the call stamps it with the mic-clock position and the
recorder writes it as one line of the timing log, `{"t", "mic_s", "event": kind, **fields}`.
`EventKind` is a string enum, so the log on disk is the same words as ever, and a reader of a
log line compares `line["event"] == EventKind.TURN_END` as it compared the plain string.

    >>> EventKind.TURN_END == "turn_end", f"{EventKind.TURN_END}"
    (True, 'turn_end')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class EventKind(StrEnum):
    """The kinds, with the fields each carries."""

    SPEECH_START = "speech_start"  # the participant began speaking (realtime: dropped_s of reply cut)
    TURN_END = "turn_end"  # the system took the participant's turn as ended (speech_s; predictive: its cues)
    TRANSCRIPT = "transcript"  # what the participant said (text; cascade: asr_s, turn, audio_s)
    FIRST_TOKEN = "first_token"  # the LLM's first token of a reply (llm_s, turn, the decoding)
    DECIDED = "decided"  # the reply's first chunk is spoken (text, after_s, turn)
    REPLY_CHUNK = "reply_chunk"  # a later chunk of the reply is spoken (text, turn)
    REPLY = "reply"  # the reply, whole (text, total_s, turn; realtime: status)
    AUDIO_START = "audio_start"  # the system's voice starts on the recording
    REPLY_AUDIO_START = "reply_audio_start"  # predictive: the reply's own voice starts, after an opener
    SPECULATION_DROPPED = "speculation_dropped"  # a reply begun in a pause was dropped: the participant went on
    YIELDED = "yielded"  # the system stopped speaking, talked over (dropped_s, overlap_s, ...)
    PAUSED = "paused"  # predictive: its voice paused under an overlap
    RESUMED = "resumed"  # predictive: its voice went on after the overlap (overlap_s, words, ...)
    BACKCHANNEL = "backchannel"  # a backchannel played (text; predictive: its cue's figures)
    BACKGROUND_VOICE = "background_voice"  # predictive: a voice too quiet to be the participant's (level_db, ...)
    SMART_TURN = "smart_turn"  # predictive: Smart Turn's reading of the turn (p_complete, read_s, ...)
    TEXT = "text"  # a remote system's words as it speaks them (text)
    TRUNCATED = "truncated"  # realtime: the server told how much of a reply was heard (item_id, audio_end_ms)
    CONNECTED = "connected"  # a remote system's connection is up (url; pipecat: pc_id)
    ERROR = "error"  # something failed (message); a remote system's, or an LLM endpoint's, ends the call


@dataclass
class SystemEvent:
    kind: EventKind
    fields: dict = field(default_factory=dict)
