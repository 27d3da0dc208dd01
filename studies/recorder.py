"""The call recording: one two-channel 16-bit WAV (participant, system) on the mic's sample clock,
written while the call runs, plus a timing log (JSON lines).

The participant's microphone is the master clock: channel 0 is the gapless sequence of received
mic samples, with zeros where packets were lost (the sender's timestamps jump). A system block is
placed in channel 1 at the mic-clock position the server had reached when it sent the block, so
both channels share one timeline without trusting any wall clock.

Crash safety: audio goes to the file as the mic advances, and at least every `flush_s` seconds
the WAV header's sizes are rewritten and the file is flushed to the OS. A killed process leaves a
valid WAV that ends at most `flush_s` before the kill (`repair_wav` also recovers the samples
written after the last header update).
"""

from __future__ import annotations

import json
import os
import struct
import time
from enum import StrEnum
from pathlib import Path

import numpy as np

SAMPLE_RATE = 16000
CHANNELS = 2
MIC_CHANNEL, SYSTEM_CHANNEL = 0, 1
BYTES_PER_FRAME = 2 * CHANNELS
HEADER_BYTES = 44
# A system block sent within this distance of where the previous one ended continues it
# seamlessly (mic packets arrive in 20 ms steps, so the send-time position jitters by a packet).
CONTIGUOUS_S = 0.06


class RecorderError(ValueError):
    pass


def wav_header(data_bytes: int, sample_rate: int = SAMPLE_RATE, channels: int = CHANNELS) -> bytes:
    """Canonical 44-byte PCM WAV header for `data_bytes` of 16-bit samples."""
    block_align = 2 * channels
    return b"RIFF" + struct.pack("<I", 36 + data_bytes) + b"WAVE" + b"fmt " + struct.pack(
        "<IHHIIHH", 16, 1, channels, sample_rate, sample_rate * block_align, block_align, 16
    ) + b"data" + struct.pack("<I", data_bytes)


def repair_wav(path: Path | str) -> int:
    """Make the header of a WAV written by TwoChannelRecorder match the samples actually on disk
    (after a crash); returns the number of frames. Trailing partial frames are cut off."""
    path = Path(path)
    with open(path, "r+b") as f:
        header = f.read(HEADER_BYTES)
        if len(header) < HEADER_BYTES or header[:4] != b"RIFF" or header[36:40] != b"data":
            raise RecorderError(f"{path} is not a recording written by the call recorder")
        channels = struct.unpack("<H", header[22:24])[0]
        size = f.seek(0, os.SEEK_END)
        frames = (size - HEADER_BYTES) // (2 * channels)
        data_bytes = frames * 2 * channels
        f.truncate(HEADER_BYTES + data_bytes)
        f.seek(4)
        f.write(struct.pack("<I", 36 + data_bytes))
        f.seek(40)
        f.write(struct.pack("<I", data_bytes))
    return frames


def to_int16(samples) -> np.ndarray:
    samples = np.asarray(samples)
    if samples.dtype == np.int16:
        return samples
    return (np.clip(samples, -1.0, 1.0) * 32767.0).round().astype(np.int16)


class CallEvent(StrEnum):
    """The call's own lines of the timing log, beside its system's (systems.events.EventKind); a
    string enum, so the log on disk is plain text as before."""

    START = "start"  # the recording began: its sample rate and the wall clock
    CLOCK = "clock"  # once per mic second: the server's time against the mic clock (studies.timing)
    LATE = "late"  # a block of the system's audio left late (the server fell behind)
    LOST = "lost"  # mic samples that never came, filled with zeros
    SYSTEM = "system"  # a block of the system's audio placed off the running line
    TAIL = "tail"  # the system's audio still queued when the call ended
    END = "end"  # the recording closed: its length and the samples lost
    CONNECTION = "connection"  # the WebRTC connection's state changed
    FAILED = "failed"  # the system failed: its reason; the call ends
    DROPPED = "dropped"  # the call was dropped: the participant's audio stopped
    FINISH = "finish"  # the call ended: its status


class TwoChannelRecorder:
    """Write mic and system audio of one call into `wav_path`, events into `log_path`.

        recorder = TwoChannelRecorder(wav, log)
        recorder.add_mic(block, pts=sample_index)      # from the mic track, 16 kHz
        recorder.add_system(reply_block)               # placed at the current mic position
        recorder.log(EventKind.DECIDED, text="...")   # a system's event, or a CallEvent
        recorder.close()
    """

    def __init__(self, wav_path: Path | str, log_path: Path | str | None = None, *, flush_s: float = 0.5,
                 sample_rate: int = SAMPLE_RATE):
        self.wav_path = Path(wav_path)
        self.sample_rate = sample_rate
        self.flush_s = flush_s
        self.wav_path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.wav_path, "wb")
        self._file.write(wav_header(0, sample_rate))
        self._file.flush()
        self._log = open(log_path, "a", encoding="utf-8") if log_path is not None else None
        self.mic_pos = 0  # mic samples received (and zeros filled): the master clock
        self.lost_samples = 0
        self.late_blocks = 0  # system audio blocks sent late (studies.webrtc): the participant heard them late
        self._written = 0  # frames in the file
        self._system = np.zeros(0, dtype=np.int16)  # channel-1 samples from self._written on
        self._system_end = 0  # where the last system block ended (mic-clock samples)
        self._t0 = time.monotonic()
        self._last_flush = self._t0
        self.closed = False
        self.log(CallEvent.START, sample_rate=sample_rate, wall=time.time())

    # timing log

    def elapsed(self) -> float:
        return time.monotonic() - self._t0

    def log(self, event: str, **fields) -> None:  # a CallEvent or a system's EventKind (both strings)
        """One JSON line: server time since start (s), mic-clock position (s), event and fields."""
        if self._log is None or self._log.closed:
            return  # e.g. connection state changes reported after the call ended
        record = {"t": round(self.elapsed(), 4), "mic_s": round(self.mic_pos / self.sample_rate, 4), "event": event}
        record.update(fields)
        self._log.write(json.dumps(record) + "\n")

    def late(self, late_s: float) -> None:
        """A block of system audio left later than its due time by `late_s` (the server fell
        behind): counted, and logged where it happened."""
        self.late_blocks += 1
        self.log(CallEvent.LATE, late_ms=round(1000 * late_s, 1))

    # audio

    def add_mic(self, samples, pts: int | None = None) -> None:
        """Append mic samples; `pts` is their first sample's index on the sender's clock (16 kHz).

        A jump forward in `pts` is packet loss: zeros are filled in. Samples before the current
        position (duplicates, reordering) are dropped.
        """
        samples = to_int16(samples)
        if pts is not None:
            if pts > self.mic_pos:
                gap = pts - self.mic_pos
                self.log(CallEvent.LOST, samples=gap, at_s=round(self.mic_pos / self.sample_rate, 4))
                self.lost_samples += gap
                self._append_mic(np.zeros(gap, dtype=np.int16))
            elif pts < self.mic_pos:
                samples = samples[self.mic_pos - pts:]
        if len(samples):
            self._append_mic(samples)

    def add_system(self, samples, at: int | None = None, **log_fields) -> int:
        """Put a block of system audio in channel 1 at mic-clock sample `at` (default: now).

        Returns where it was placed. A block sent just after the previous one ended (within
        CONTIGUOUS_S) continues it without a gap or overlap.
        """
        samples = to_int16(samples)
        at = self.mic_pos if at is None else int(at)
        if abs(at - self._system_end) <= CONTIGUOUS_S * self.sample_rate:
            at = self._system_end
        at = max(at, self._written)  # the file cannot be rewritten
        offset = at - self._written
        needed = offset + len(samples)
        if needed > len(self._system):
            self._system = np.concatenate([self._system, np.zeros(needed - len(self._system), dtype=np.int16)])
        self._system[offset:needed] = samples
        if at != self._system_end or log_fields:
            self.log(CallEvent.SYSTEM, at_s=round(at / self.sample_rate, 4), samples=len(samples), **log_fields)
        self._system_end = at + len(samples)
        return at

    def _append_mic(self, mic: np.ndarray) -> None:
        n = len(mic)
        system = self._system[:n]
        if len(system) < n:
            system = np.concatenate([system, np.zeros(n - len(system), dtype=np.int16)])
        self._system = self._system[n:]
        frames = np.empty((n, 2), dtype=np.int16)
        frames[:, MIC_CHANNEL] = mic
        frames[:, SYSTEM_CHANNEL] = system
        self._file.write(frames.astype("<i2").tobytes())
        self._written += n
        before, self.mic_pos = self.mic_pos, self.mic_pos + n
        if before // self.sample_rate != self.mic_pos // self.sample_rate:
            self.log(CallEvent.CLOCK)  # once per mic second: server time vs mic clock (studies.timing)
        if time.monotonic() - self._last_flush >= self.flush_s:
            self.flush()

    def flush(self) -> None:
        """Rewrite the header sizes and hand everything to the OS (survives a killed process)."""
        data_bytes = self._written * BYTES_PER_FRAME
        self._file.seek(4)
        self._file.write(struct.pack("<I", 36 + data_bytes))
        self._file.seek(40)
        self._file.write(struct.pack("<I", data_bytes))
        self._file.seek(0, os.SEEK_END)
        self._file.flush()
        if self._log is not None:
            self._log.flush()
        self._last_flush = time.monotonic()

    @property
    def duration_s(self) -> float:
        return self._written / self.sample_rate

    def close(self, write_pending_system: bool = True) -> float:
        """Finish the file; system audio still pending past the mic's end is written with a
        silent mic channel (the participant was listening). Returns the duration in seconds."""
        if self.closed:
            return self.duration_s
        if write_pending_system and len(self._system):
            pending = len(self._system)
            self.log(CallEvent.TAIL, samples=pending)
            self._append_mic(np.zeros(pending, dtype=np.int16))
        self.log(CallEvent.END, duration_s=round(self.duration_s, 4), lost_samples=self.lost_samples)
        self.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        if self._log is not None:
            self._log.close()
        self.closed = True
        return self.duration_s
