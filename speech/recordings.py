"""Recordings the judge and the naturalness scorers accept: a two-channel audio file or a voice-activity JSON.

    *.json   {"duration": s, "vad": [[[start, end], ...], [[start, end], ...]], "words": ... (optional)}
    other    two-channel audio, one speaker per channel: Silero voice activity per channel, and
             faster-whisper words when `words=True` (the Talking Turns metrics need them to find
             backchannels; TurnNat uses voice activity only, unless its judge is word-conditioned).
"""

from __future__ import annotations

from pathlib import Path

from speech.audio import load_audio
from speech.pipeline import conversation_from_audio
from turntaking.activity import Conversation, load_conversation_json


class RecordingError(ValueError):
    """A recording that cannot be scored; the message names the file and the problem."""


def load_recording(path, words: bool = True) -> Conversation:
    path = Path(path)
    if not path.exists():
        raise RecordingError(f"recording not found: {path}")
    try:
        if path.suffix.lower() == ".json":
            return load_conversation_json(path)

        return conversation_from_audio(path, vad="silero", transcribe=words)
    except (ValueError, FileNotFoundError) as exc:
        raise RecordingError(str(exc)) from None


def load_recording_audio(path):
    """(conversation, (2, samples) float32 audio at 16 kHz) of a two-channel recording."""

    conv = load_recording(path, words=False)
    try:
        audio, _ = load_audio(path, 16000, require_channels=2)
    except ValueError as exc:
        raise RecordingError(str(exc)) from None
    return conv, audio
