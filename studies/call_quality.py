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
    no answer from the system          the participant spoke, the system said under MIN_SPEECH_S (but
                                       "degraded by this server" when the server was behind: the
                                       system's channel is what it sent)
    network too poor to analyse        a figure of the call's network (studies.network_figures)
                                       over the study's `network_limits`
    degraded by this server            the server sent the system's audio late (its event loop
                                       behind real time, short of CPU): the platform's fault,
                                       not the participant's; counted apart in the overview

(A participant who hangs up early is "too short", not a silent system's fault; a system that
stays silent through a call of the study's length is a finding about the system.)

The server and the network come last: the reasons before them say there was no conversation at
all; these say there was one, but its timing cannot be trusted. Loss comes first: a call that
lost a fifth of its packets was spoilt by the network whatever the server did, and a server short
of CPU reads late what the kernel keeps, not lost. The server's lateness comes next, before the
round trip, which a server short of CPU makes longer itself (it answers the RTCP reports late).
The server's reason says what the server measured of itself (studies.server_load):
"degraded by this server: system audio sent late (189 blocks over the study's limit 25); in its
slowest seconds (p90) its event loop 412 ms late, its thread waiting for a CPU 61 % of the time".
A system's silence stays
a finding about the system even on a poor network, since its channel is recorded at the server,
as it spoke. The reason names the figure, its value and the limit: "network too poor to analyse:
loss of the participant's audio (0.12 over the study's limit 0.05)". The limits (`network_limits`
in the study file; null turns a check off), checked in this order:

    max_loss          0.05   the larger lost fraction of the two directions' audio packets. Opus
                             conceals isolated losses of a few per cent; beyond that the
                             participant's channel (zeros where packets were lost) breaks up, the
                             recogniser misses words, and what the participant heard is not what
                             the system's channel holds
    max_rtt_ms        400    the median round trip. The participant hears the system about half a
                             round trip after it spoke and is heard half a round trip after
                             answering, so every response of theirs is measured about one round
                             trip (plus the page's playout delay) late; 400 ms is twice a typical
                             human gap of about 200 ms, and 200 ms one way is past the 150 ms
                             ITU-T G.114 recommends for interactive speech
    max_late_blocks   25     system audio blocks (20 ms) the server sent more than 60 ms after
                             their due time (studies.webrtc): 25 is half a second of the system's
                             voice heard later than the recording places it. The server's own
                             failing, checked first and reported as "degraded by this server"

A call without network figures (a scripted call, the demo, a row from before they were measured)
and a figure no side measured are not judged by them.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

from speech import silero
from speech.audio import load_audio
from speech.silero import SAMPLE_RATE, SileroParams, speech_seconds
from turntaking.activity import MIN_SPEECH_S, Conversation

NO_PARTICIPANT_SPEECH = "no speech from the participant"
NO_SYSTEM_ANSWER = "no answer from the system"
NO_RECORDING = "no recording"
NETWORK_TOO_POOR = "network too poor to analyse"
SERVER_BEHIND = "degraded by this server"
# One thread: the check runs as a call ends, beside other participants' calls.
QUALITY_VAD = SileroParams(threads=1, block_frames=512)  # 16 s blocks: a speaking channel stops early


@dataclass(frozen=True)
class CallQuality:
    analysable: bool
    reason: str | None  # why not (None when analysable)


ANALYSABLE = CallQuality(True, None)


@dataclass(frozen=True)
class NetworkLimits:
    """How poor a call's network may be for the call to be analysed (see the module's docstring
    for each default and why); None: not checked."""

    max_loss: float | None = 0.05
    max_rtt_ms: float | None = 400.0
    max_late_blocks: int | None = 25

    @classmethod
    def from_dict(cls, data) -> "NetworkLimits":
        """From a study file's `network_limits` mapping; ValueError in one line for an unknown
        key or a bad value.

        >>> NetworkLimits.from_dict({"max_loss": 0.1, "max_late_blocks": None})
        NetworkLimits(max_loss=0.1, max_rtt_ms=400.0, max_late_blocks=None)
        >>> NetworkLimits.from_dict({"max_lag": 3})
        Traceback (most recent call last):
        ValueError: unknown key(s) max_lag (known: max_late_blocks, max_loss, max_rtt_ms)
        """
        if not isinstance(data, dict):
            raise ValueError("must be a mapping of limits (max_loss, max_rtt_ms, max_late_blocks)")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(map(str, data)) - known)
        if unknown:
            raise ValueError(f"unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
        bounds = {"max_loss": (0.0, 1.0), "max_rtt_ms": (0.0, 60000.0), "max_late_blocks": (0, 10**6)}
        for key, value in data.items():
            low, high = bounds[key]
            if value is None:
                continue
            if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
                    or not low <= value <= high or (key == "max_late_blocks" and value != int(value))):
                kind = "a whole number" if key == "max_late_blocks" else "a number"
                raise ValueError(f"{key} must be {kind} from {low:g} to {high:g} (or null: not checked), got {value!r}")
        values = {**asdict(cls()), **data}
        if values["max_late_blocks"] is not None:
            values["max_late_blocks"] = int(values["max_late_blocks"])
        return cls(**values)


def network_reason(network: dict | None, limits: NetworkLimits) -> str | None:
    """Why the call's network (studies.network_figures.summarise) is too poor to analyse the
    call, or None.

    >>> network_reason({"loss_to_page": 0.01, "loss_to_server": 0.12, "rtt_ms_p50": 80.0}, NetworkLimits())
    "network too poor to analyse: loss of the participant's audio (0.12 over the study's limit 0.05)"
    >>> network_reason({"rtt_ms_p50": 812.4, "late_blocks": 40}, NetworkLimits())  # late blocks: server_reason
    "network too poor to analyse: median round trip (812 ms over the study's limit 400 ms)"
    >>> network_reason({"rtt_ms_p50": 812.4}, NetworkLimits(max_rtt_ms=None)) is None
    True
    """
    if not network:
        return None

    def measured(key):
        value = network.get(key)
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    checks = [("loss of the participant's audio", measured("loss_to_server"), limits.max_loss, "{:.3g}"),
              ("loss of the system's audio", measured("loss_to_page"), limits.max_loss, "{:.3g}"),
              ("median round trip", measured("rtt_ms_p50"), limits.max_rtt_ms, "{:.0f} ms")]
    for what, value, limit, unit in checks:
        if value is not None and limit is not None and value > limit:
            return (f"{NETWORK_TOO_POOR}: {what} ({unit.format(value)} over the study's limit "
                    f"{unit.format(limit)})")
    return None


def server_reason(network: dict | None, limits: NetworkLimits) -> str | None:
    """Why the call's timing cannot be trusted through this server's own fault, or None: its system
    audio went out late, with how far behind the server measured itself.

    >>> server_reason({"late_blocks": 189, "loop_lag_ms_p90": 412.0, "cpu_wait_p90": 0.61, "loss_to_server": 0.2},
    ...               NetworkLimits())
    "degraded by this server: system audio sent late (189 blocks over the study's limit 25); in its slowest seconds (p90) its event loop 412 ms late, its thread waiting for a CPU 61 % of the time"
    >>> server_reason({"late_blocks": 3, "loop_lag_ms_p90": 2.0}, NetworkLimits()) is None
    True
    """
    late = (network or {}).get("late_blocks")
    if not isinstance(late, int) or limits.max_late_blocks is None or late <= limits.max_late_blocks:
        return None
    reason = f"{SERVER_BEHIND}: system audio sent late ({late} blocks over the study's limit {limits.max_late_blocks})"
    measured = []
    if isinstance(lag := network.get("loop_lag_ms_p90"), (int, float)):
        measured.append(f"its event loop {lag:.0f} ms late")
    if isinstance(wait := network.get("cpu_wait_p90"), (int, float)):
        measured.append(f"its thread waiting for a CPU {100 * wait:.0f} % of the time")
    return reason + ("; in its slowest seconds (p90) " + ", ".join(measured) if measured else "")


def too_short_reason(minimum_s: float) -> str:
    return f"shorter than the study's minimum of {minimum_s:g} s"


def judge_call(duration_s: float, participant_speech_s: float, system_speech_s: float,
               minimum_s: float, network: dict | None = None,
               network_limits: NetworkLimits = NetworkLimits()) -> CallQuality:
    """The rule itself, on seconds of audio and of each side's speech, and the call's network
    figures (None: not measured)."""
    if participant_speech_s < MIN_SPEECH_S:
        return CallQuality(False, NO_PARTICIPANT_SPEECH)
    if duration_s < minimum_s:
        return CallQuality(False, too_short_reason(minimum_s))
    if system_speech_s < MIN_SPEECH_S:
        # the system's channel is what this server sent: a server behind may have sent no answer
        # the system gave (a remote system's audio waits on it), so the silence is not the system's
        return CallQuality(False, server_reason(network, network_limits) or NO_SYSTEM_ANSWER)
    # loss first (the kernel keeps what a busy server reads late: lost is the network's), then the
    # server's lateness, then the round trip (a server short of CPU answers RTCP late: its round
    # trip grows with the server's shortfall)
    for reason in (network_reason(network, replace(network_limits, max_rtt_ms=None)),
                   server_reason(network, network_limits), network_reason(network, network_limits)):
        if reason is not None:
            return CallQuality(False, reason)
    return ANALYSABLE


def prepare() -> None:
    """Load what `recording_quality` reads (Silero's batch model) before a server's first call:
    loaded at the first call's end, it held the interpreter's lock for about 0.9 s, and the calls
    still running fell up to 0.46 s behind in the audio they sent."""
    silero.prepare()


def recording_quality(path, system_channel: int, minimum_s: float, network: dict | None = None,
                      network_limits: NetworkLimits = NetworkLimits()) -> CallQuality:
    """The quality of a two-channel call recording (participant and system channel), by Silero,
    and of its network figures."""
    samples, _ = load_audio(Path(path), SAMPLE_RATE, require_channels=2)
    user_channel = 1 - system_channel
    return judge_call(samples.shape[1] / SAMPLE_RATE,
                      speech_seconds(samples[user_channel], QUALITY_VAD, enough_s=MIN_SPEECH_S),
                      speech_seconds(samples[system_channel], QUALITY_VAD, enough_s=MIN_SPEECH_S),
                      minimum_s, network, network_limits)


def conversation_quality(conv: Conversation, system_channel: int, minimum_s: float) -> CallQuality:
    """The same rule on a session's voice activity (sessions stored before the check existed)."""

    def spoken(channel: int) -> float:
        return sum(end - start for start, end in conv.activity[channel])

    return judge_call(conv.duration, spoken(1 - system_channel), spoken(system_channel), minimum_s)
