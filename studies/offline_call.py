"""A call without a browser: a WAV file plays the participant, on a real-time clock (20 ms blocks,
paced by the wall clock, since the system's threads work in real time), and the call is
recorded exactly as a browser call is: two channels on the mic's sample clock plus a timing log.
What the participant plays may also follow the system (`run_offline_feed` with a `MicFeed`: the
examiner places an interruption on the system's speech onset).

Also the measurement the latency benchmark uses: from a two-channel recording, the time from the
end of each participant utterance to the first system audio after it.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from speech.audio import load_audio
from studies.recorder import SAMPLE_RATE, CallEvent, TwoChannelRecorder
from systems import SystemError_, make_system
from systems.base import BLOCK


class OfflineCallError(ValueError):
    pass


@dataclass
class OfflineCallResult:
    out_wav: Path
    log_path: Path
    duration_s: float
    late_blocks: int  # blocks the loop could not deliver on time (a busy machine)
    latencies_s: list[float] = field(default_factory=list)
    unanswered: int = 0
    failure: str | None = None  # why the system ended the call early (its server died, ...), else None

    def summary(self) -> dict:
        lat = np.array(self.latencies_s)
        return {
            "recording": str(self.out_wav),
            "timing_log": str(self.log_path),
            "duration_s": round(self.duration_s, 3),
            "late_blocks": self.late_blocks,
            "replies": len(self.latencies_s),
            "unanswered": self.unanswered,
            "failure": self.failure,
            "latency_p50_s": round(float(np.percentile(lat, 50)), 3) if len(lat) else None,
            "latency_p90_s": round(float(np.percentile(lat, 90)), 3) if len(lat) else None,
        }


class MicFeed(Protocol):
    """The participant's side of an offline call, block by block. It is told each block of system
    audio as it is sent (and where, on the mic clock), so that what it plays next may follow the
    system's speech (e.g. an interruption placed on the system's speech onset)."""

    def finished(self, position: int) -> bool: ...

    def block(self, first: int, size: int) -> np.ndarray: ...

    def heard(self, position: int, reply: np.ndarray) -> None: ...


@dataclass
class FixedFeed:
    """A recording played as it is."""

    samples: np.ndarray

    def finished(self, position: int) -> bool:
        return position >= len(self.samples)

    def block(self, first: int, size: int) -> np.ndarray:
        return self.samples[first:first + size]

    def heard(self, position: int, reply: np.ndarray) -> None:
        pass


@dataclass
class TurnByTurnFeed:
    """A scripted participant who waits for the answer: each utterance plays once the system has
    been quiet for `quiet_s` after speaking (its reply ended), or `wait_s` after the utterance
    when no reply comes. The scripted calls of a fixed timeline either wait longer than any
    reply (slow) or talk over long ones; a conversation of questions needs neither."""

    utterances: list[np.ndarray]
    quiet_s: float = 1.5
    wait_s: float = 10.0
    lead_s: float = 1.0
    starts: list[int] = field(default_factory=list)  # where each utterance began (mic samples)
    _next_at: int | None = None  # where the next utterance begins, once known
    _spoke_after: int = -1  # the last audible system block after the current utterance

    def __post_init__(self) -> None:
        self._next_at = int(self.lead_s * SAMPLE_RATE)

    def _current_end(self) -> int:
        return self.starts[-1] + len(self.utterances[len(self.starts) - 1]) if self.starts else 0

    def heard(self, position: int, reply: np.ndarray) -> None:
        if self.starts and position >= self._current_end() and np.sqrt(np.mean(np.square(reply))) > 0.01:
            self._spoke_after = position + len(reply)

    def block(self, first: int, size: int) -> np.ndarray:
        if self._next_at is None and 0 < len(self.starts) < len(self.utterances):
            end = self._current_end()
            if self._spoke_after >= end and first >= self._spoke_after + self.quiet_s * SAMPLE_RATE:
                self._next_at = first
            elif self._spoke_after < end and first >= end + self.wait_s * SAMPLE_RATE:
                self._next_at = first
        if self._next_at is not None and first >= self._next_at and len(self.starts) < len(self.utterances):
            self.starts.append(self._next_at)
            self._next_at, self._spoke_after = None, -1
        out = np.zeros(size, dtype=np.float32)
        if self.starts:
            speech, at = self.utterances[len(self.starts) - 1], self.starts[-1]
            lo, hi = max(first, at), min(first + size, at + len(speech))
            if hi > lo:
                out[lo - first:hi - first] = speech[lo - at:hi - at]
        return out

    def finished(self, position: int) -> bool:
        return len(self.starts) == len(self.utterances) and self._next_at is None and (
            (self._spoke_after >= self._current_end() and position >= self._spoke_after + self.quiet_s * SAMPLE_RATE)
            or position >= self._current_end() + self.wait_s * SAMPLE_RATE)


def run_offline_call(user_wav, out_wav, kind: str = "cascaded", config: dict | None = None, tail_s: float = 4.0,
                     topic: str = "", system=None, log_path=None) -> OfflineCallResult:
    """Play `user_wav` to the system in real time; write the two-channel recording to `out_wav`."""
    try:
        samples, _ = load_audio(user_wav, SAMPLE_RATE)
    except Exception as e:  # load_audio raises its own one-line errors for bad files
        raise OfflineCallError(f"cannot read {user_wav}: {e}") from None
    mic = np.concatenate([samples[0], np.zeros(int(tail_s * SAMPLE_RATE), dtype=np.float32)])
    return run_offline_feed(FixedFeed(mic), out_wav, kind, config, topic, system, log_path)


def run_offline_feed(feed: MicFeed, out_wav, kind: str = "cascaded", config: dict | None = None, topic: str = "",
                     system=None, log_path=None) -> OfflineCallResult:
    """Play what `feed` gives to the system in real time; write the two-channel recording to `out_wav`."""
    out_wav = Path(out_wav)
    log_path = Path(log_path) if log_path is not None else out_wav.with_suffix(".jsonl")
    if system is None:  # built (models loaded) before the call's clock starts
        try:
            system = make_system(kind, config or {})
        except SystemError_ as e:
            raise OfflineCallError(str(e)) from None
    recorder = TwoChannelRecorder(out_wav, log_path)
    system.on_event = lambda event: recorder.log(event.kind, **event.fields)
    try:
        system.start(topic)
    except SystemError_ as e:  # no server took the call, or its session was refused
        recorder.close()
        raise OfflineCallError(str(e)) from None
    late = 0
    start = time.monotonic()
    first = 0
    try:
        for i in itertools.count():
            if feed.finished(first):
                break
            due = start + i * BLOCK / SAMPLE_RATE
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            elif wait < -BLOCK / SAMPLE_RATE:
                late += 1
            # The output block is sent now, at the mic position reached so far.
            reply = system.send()
            if reply is not None:
                recorder.add_system(reply)
                feed.heard(first, reply)
            block = feed.block(first, BLOCK)
            system.receive(block)
            recorder.add_mic(block, pts=first)
            first += len(block)
            if system.failure is not None:  # as a browser call does: it ends failed, the recording kept
                recorder.log(CallEvent.FAILED, reason=system.failure)
                break
    finally:
        system.close()
        duration = recorder.close(write_pending_system=False)
    result = OfflineCallResult(out_wav, log_path, duration, late, failure=system.failure)
    audio, _ = load_audio(out_wav, SAMPLE_RATE, require_channels=2)
    result.latencies_s, result.unanswered = reply_latencies(audio[0], audio[1])
    return result


def active_segments(signal: np.ndarray, threshold: float = 0.01, bridge_s: float = 0.25, frame_s: float = 0.005):
    """(start_s, end_s) where a clean channel is louder than `threshold` (RMS of 5 ms frames),
    pauses shorter than `bridge_s` bridged. For separately recorded channels without crosstalk."""
    n = int(frame_s * SAMPLE_RATE)
    frames = len(signal) // n
    if not frames:
        return []
    rms = np.sqrt((signal[:frames * n].reshape(frames, n).astype(np.float64) ** 2).mean(axis=1))
    active = np.flatnonzero(rms > threshold)
    segments = []
    for f in active:
        start, end = f * frame_s, (f + 1) * frame_s
        if segments and start - segments[-1][1] < bridge_s:
            segments[-1][1] = end
        else:
            segments.append([start, end])
    return [(round(s, 3), round(e, 3)) for s, e in segments]


def reply_latencies(participant: np.ndarray, system: np.ndarray) -> tuple[list[float], int]:
    """For each participant utterance: time from its end to the first system audio that starts
    after it and before the participant's next utterance. Returns (latencies, unanswered count)."""
    user = active_segments(participant)
    # System speech with its own short pauses bridged: a reply still running when the
    # participant stops is not an answer to them (it started before they ended).
    onsets = [start for start, _ in active_segments(system, bridge_s=0.25)]
    latencies, unanswered = [], 0
    for k, (_, end) in enumerate(user):
        next_start = user[k + 1][0] if k + 1 < len(user) else float("inf")
        replies = [t for t in onsets if end <= t < next_start]
        if replies:
            latencies.append(round(float(replies[0] - end), 3))
        else:
            unanswered += 1
    return latencies, unanswered
