"""Audio of natural and perturbed clips: the edits of `annotation.edits` applied to waveforms.

So that a listener hears the timing change and not the editing:
- every splice is a short fade out / fade in (`fade_s`, 10-60 ms in TurnNat);
- silence that an edit creates (inserted, or left behind by moved speech) is filled with room
  tone: pieces of the same channel's own non-speech audio, cross-faded;
- both clips of a pair are loudness-normalised the same way (-20 dBFS RMS, peaks at most -1 dBFS).

Artifact-control clips get the same kinds of splices with no timing change.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from turntaking.activity import Conversation, activity_frames


@dataclass(frozen=True)
class RenderParams:
    fade_s: float = 0.02
    target_rms_dbfs: float = -20.0
    peak_dbfs: float = -1.0
    room_tone_margin_s: float = 0.1  # keep this far from speech when collecting room tone
    room_tone_piece_s: float = 0.25


def _fade(n: int) -> np.ndarray:
    return 0.5 - 0.5 * np.cos(np.linspace(0.0, np.pi, n, dtype=np.float32)) if n > 0 else np.zeros(0, np.float32)


def room_tone_source(channel: np.ndarray, segments, sample_rate: int, margin_s: float) -> np.ndarray:
    """The channel's samples away from its speech (its background), concatenated."""
    duration = len(channel) / sample_rate
    frame_rate = 100
    active = activity_frames((segments,), duration, frame_rate)[0] > 0
    pad = int(round(margin_s * frame_rate))
    if pad and active.any():
        kernel = np.ones(2 * pad + 1)
        active = np.convolve(active.astype(float), kernel, mode="same") > 0
    hop = sample_rate // frame_rate
    quiet = np.repeat(~active, hop)[: len(channel)]
    tone = channel[: len(quiet)][quiet]
    if len(tone) < sample_rate // 10:
        # No usable background: use very low-level noise at the channel's quietest level.
        level = float(np.percentile(np.abs(channel), 5)) if len(channel) else 1e-4
        rng = np.random.default_rng(0)
        tone = (rng.standard_normal(sample_rate) * max(level, 1e-5)).astype(np.float32)
    return tone.astype(np.float32)


def room_tone(source: np.ndarray, n: int, sample_rate: int, params: RenderParams, rng) -> np.ndarray:
    """n samples of room tone from random pieces of `source`, cross-faded."""
    piece = max(int(params.room_tone_piece_s * sample_rate), 1)
    piece = min(piece, len(source))
    xf = min(int(params.fade_s * sample_rate), piece // 2)
    out = np.zeros(n + piece, dtype=np.float32)
    pos = 0
    ramp_in, ramp_out = _fade(xf), _fade(xf)[::-1]
    while pos < n:
        start = int(rng.integers(0, len(source) - piece + 1))
        chunk = source[start : start + piece].copy()
        if xf:
            chunk[:xf] *= ramp_in
            chunk[-xf:] *= ramp_out
        out[pos : pos + piece] += chunk
        pos += piece - xf
    return out[:n]


def _splice(a: np.ndarray, b: np.ndarray, xf: int) -> np.ndarray:
    """a then b, with a fade out at a's end and a fade in at b's start."""
    a, b = a.copy(), b.copy()
    xa, xb = min(xf, len(a)), min(xf, len(b))
    if xa:
        a[-xa:] *= _fade(xa)[::-1]
    if xb:
        b[:xb] *= _fade(xb)
    return np.concatenate([a, b])


def _place(channel: np.ndarray, start: int, piece: np.ndarray, ramp: int) -> np.ndarray:
    """Put `piece` at `start`; its first and last `ramp` samples cross-fade with what was there.

    Callers give pieces with `ramp` samples of margin on each side, so the cross-fades fall in
    background, not in speech."""
    out = channel.copy()
    lo, hi = max(start, 0), min(start + len(piece), len(out))
    if hi <= lo:
        return out
    w = np.ones(len(piece), dtype=np.float32)
    r = min(ramp, len(piece) // 2)
    if r:
        w[:r] = _fade(r)
        w[-r:] = _fade(r)[::-1]
    piece, w = piece[lo - start : hi - start], w[lo - start : hi - start]
    out[lo:hi] = out[lo:hi] * (1 - w) + piece * w
    return out


def apply_edits_audio(
    clip: np.ndarray,
    sample_rate: int,
    natural: Conversation,
    edits: list[dict],
    source: np.ndarray | None = None,
    params: RenderParams = RenderParams(),
    seed: int = 0,
) -> np.ndarray:
    """The perturbed clip audio: (2, n) natural clip `clip` with `edits` applied."""
    rng = np.random.default_rng(seed)
    xf = int(round(params.fade_s * sample_rate))
    tones = [
        room_tone_source(clip[k], natural.activity[k], sample_rate, params.room_tone_margin_s) for k in (0, 1)
    ]
    chans = [clip[0].astype(np.float32), clip[1].astype(np.float32)]
    idx = lambda t: int(round(t * sample_rate))  # noqa: E731
    for edit in edits:
        op = edit["op"]
        if op == "insert_silence":
            at, n = idx(edit["at"]), idx(edit["duration"])
            chans = [
                _splice(_splice(c[:at], room_tone(tones[k], n, sample_rate, params, rng), xf), c[at:], xf)
                for k, c in enumerate(chans)
            ]
        elif op == "delete":
            a, b = idx(edit["start"]), idx(edit["end"])
            chans = [_splice(c[:a], c[b:], xf) for c in chans]
        elif op == "move":
            k, a, b, sh = edit["channel"], idx(edit["start"]), idx(edit["end"]), idx(edit["shift"])
            lo, hi = max(a - xf, 0), min(b + xf, len(chans[k]))
            piece = chans[k][lo:hi].copy()
            chans[k] = _place(chans[k], lo, room_tone(tones[k], hi - lo, sample_rate, params, rng), xf)
            chans[k] = _place(chans[k], lo + sh, piece, xf)
        elif op == "silence":  # the channel's speech in [a, b) replaced by its room tone
            k, a, b = edit["channel"], idx(edit["start"]), idx(edit["end"])
            lo, hi = max(a - xf, 0), min(b + xf, len(chans[k]))
            chans[k] = _place(chans[k], lo, room_tone(tones[k], hi - lo, sample_rate, params, rng), xf)
        elif op == "paste":
            if source is None:
                raise ValueError("a 'paste' edit needs the source audio")
            k, at = edit["channel"], idx(edit["at"])
            a, b = idx(edit["source_start"]), idx(edit["source_end"])
            lo, hi = max(a - xf, 0), min(b + xf, source.shape[1])
            chans[k] = _place(chans[k], at - (a - lo), source[k][lo:hi].astype(np.float32), xf)
        elif op == "splice":  # artifact control: a cut and fades at `at`, no timing change
            at = idx(edit["at"])
            chans = [_splice(c[:at], c[at:], xf) for c in chans]
        else:
            raise ValueError(f"unknown edit operation {op!r}")
        n = min(len(c) for c in chans)
        chans = [c[:n] for c in chans]
    return np.stack(chans)


def artifact_control_edits(edits: list[dict]) -> list[dict]:
    """Splices at the places a timing edit would touch, with no timing change."""
    points = []
    for e in edits:
        for key in ("at", "start", "end"):
            if key in e:
                points.append(float(e[key]))
    return [{"op": "splice", "at": t} for t in sorted(set(points))]


def normalize_loudness(audio: np.ndarray, params: RenderParams = RenderParams()) -> np.ndarray:
    """Scale to the target RMS of the mix, then limit the peak: the same rule for every clip."""
    mix = audio.mean(axis=0)
    rms = float(np.sqrt(np.mean(mix**2))) if mix.size else 0.0
    if rms <= 0:
        return audio
    gain = 10 ** (params.target_rms_dbfs / 20) / rms
    peak = float(np.abs(audio).max()) * gain
    peak_limit = 10 ** (params.peak_dbfs / 20)
    if peak > peak_limit:
        gain *= peak_limit / peak
    return (audio * gain).astype(np.float32)


def render_pair(
    source_audio: np.ndarray,
    sample_rate: int,
    natural: Conversation,
    clip_start: float,
    edits: list[dict],
    params: RenderParams = RenderParams(),
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(natural, perturbed, artifact-control) audio of one pair, each loudness-normalised.

    `source_audio` is the whole (2, n) source recording, `natural` the natural clip's voice
    activity (clip coordinates) starting at `clip_start` in the source.
    """
    a = int(round(clip_start * sample_rate))
    clip = source_audio[:, a : a + int(round(natural.duration * sample_rate))].astype(np.float32)
    perturbed = apply_edits_audio(clip, sample_rate, natural, edits, source_audio, params, seed)
    control = apply_edits_audio(clip, sample_rate, natural, artifact_control_edits(edits), None, params, seed)
    return tuple(normalize_loudness(x, params) for x in (clip, perturbed, control))
