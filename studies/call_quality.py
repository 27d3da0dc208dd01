"""Whether a call can be analysed as a conversation, decided when it ends: a call where the
participant never spoke, where the system never answered, or shorter than the study's minimum is
no conversation, and every statistic, judge metric and naturalness score leaves it out (a silent
system's calls would otherwise look like calm, "natural" dialogues).

Speech is Silero's voice activity, the one the analysis uses (speech.silero), counted only until
enough is found: a normal call costs its first minute or so of each channel, a silent channel
(digital zeros) nothing.

The reasons, in this order (the first that holds is given):

    no speech from the participant     under MIN_SPEECH_S (0.5 s, turntaking.activity) on the participant's channel
    shorter than the study's minimum   the recording is shorter than `min_call_seconds`
    no answer from the system          the participant spoke, the system said under MIN_SPEECH_S

(A participant who hangs up early is "too short", not a silent system's fault; a system that
stays silent through a call of the study's length is a finding about the system.)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from speech.audio import load_audio
from speech.silero import SAMPLE_RATE, SileroParams, speech_seconds
from turntaking.activity import MIN_SPEECH_S, Conversation

NO_PARTICIPANT_SPEECH = "no speech from the participant"
NO_SYSTEM_ANSWER = "no answer from the system"
NO_RECORDING = "no recording"
# One thread: the check runs as a call ends, beside other participants' calls.
QUALITY_VAD = SileroParams(threads=1, block_frames=512)  # 16 s blocks: a speaking channel stops early


@dataclass(frozen=True)
class CallQuality:
    analysable: bool
    reason: str | None  # why not (None when analysable)


ANALYSABLE = CallQuality(True, None)


def too_short_reason(minimum_s: float) -> str:
    return f"shorter than the study's minimum of {minimum_s:g} s"


def judge_call(duration_s: float, participant_speech_s: float, system_speech_s: float,
               minimum_s: float) -> CallQuality:
    """The rule itself, on seconds of audio and of each side's speech."""
    if participant_speech_s < MIN_SPEECH_S:
        return CallQuality(False, NO_PARTICIPANT_SPEECH)
    if duration_s < minimum_s:
        return CallQuality(False, too_short_reason(minimum_s))
    if system_speech_s < MIN_SPEECH_S:
        return CallQuality(False, NO_SYSTEM_ANSWER)
    return ANALYSABLE


def recording_quality(path, system_channel: int, minimum_s: float) -> CallQuality:
    """The quality of a two-channel call recording (participant and system channel), by Silero."""
    samples, _ = load_audio(Path(path), SAMPLE_RATE, require_channels=2)
    user_channel = 1 - system_channel
    return judge_call(samples.shape[1] / SAMPLE_RATE,
                      speech_seconds(samples[user_channel], QUALITY_VAD, enough_s=MIN_SPEECH_S),
                      speech_seconds(samples[system_channel], QUALITY_VAD, enough_s=MIN_SPEECH_S),
                      minimum_s)


def conversation_quality(conv: Conversation, system_channel: int, minimum_s: float) -> CallQuality:
    """The same rule on a session's voice activity (sessions stored before the check existed)."""

    def spoken(channel: int) -> float:
        return sum(end - start for start, end in conv.activity[channel])

    return judge_call(conv.duration, spoken(1 - system_channel), spoken(system_channel), minimum_s)
