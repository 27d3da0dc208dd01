"""Switchboard conversations spoken at their own timings, and measured the way a session is.

Each side's contiguous word stretches (MS-98 alignments) are spoken by a packaged voice
(`examiner.voices`) and time-stretched (sox `tempo`, pitch kept) to exactly their aligned
interval, so the rendering's speech lies where the alignment says. The two-channel audio then
goes through the session pipeline (`speech.pipeline.load_conversation`: Silero voice activity,
Whisper words), and once more with the true words placed on the same voice activity, so that the
voice activity's share and the ASR's share of a difference can be told apart.

Named voice pairs: `demo` is the demo's two voices (Piper joe, espeak-ng en-us+f3), from which the
packaged pipeline reference is built; `demo`, `fitting-2` and `fitting-3` (the examiner's other
voices) are the voices settings are chosen on; `held-out-1` and `held-out-2` are voices no setting
was chosen on (another Piper rate, espeak-ng voices of other accents and rates).

Renderings are kept in a work directory (FLAC, one per conversation and voice pair) with the
pipeline's results, so noise variants and new rules need no new rendering.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile

from examiner.voices import SAMPLE_RATE, Voice, speak
from speech.pipeline import load_conversation as load_audio_conversation
from speech.silero_lags import channel_lags, channel_snr_db
from turntaking.activity import Conversation, conversation_to_json
from turntaking.switchboard import load_conversation


@dataclass(frozen=True)
class VoicePair:
    name: str
    voices: tuple[Voice, Voice]  # side A's, side B's

    @property
    def label(self) -> str:
        return f"{self.name} ({self.voices[0].label} / {self.voices[1].label})"


VOICE_PAIRS = {p.name: p for p in (
    VoicePair("demo", (Voice("piper", "en_US-joe-medium", 1.0), Voice("espeak-ng", "en-us+f3", 165))),
    VoicePair("fitting-2", (Voice("piper", "en_US-joe-medium", 0.9), Voice("espeak-ng", "en-gb+m3", 175))),
    VoicePair("fitting-3", (Voice("espeak-ng", "en-us+f4", 195), Voice("piper", "en_US-joe-medium", 1.15))),
    VoicePair("held-out-1", (Voice("piper", "en_US-joe-medium", 1.25), Voice("espeak-ng", "en-gb-scotland+m2", 180))),
    VoicePair("held-out-2", (Voice("espeak-ng", "en-us-nyc+m5", 145), Voice("espeak-ng", "en-gb-x-rp+f2", 190))),
)}


def crop(conv: Conversation, seconds: float) -> Conversation:
    """The first `seconds` of a conversation: speech and words that end by then.

    >>> from turntaking.activity import Word
    >>> conv = Conversation(10.0, ([(0, 1), (4, 6)], [(2, 3)]), ([Word(0, 1, "hi"), Word(4, 6, "so")], [Word(2, 3, "hey")]))
    >>> crop(conv, 5.0).activity, crop(conv, 5.0).duration
    (([Segment(start=0.0, end=1.0)], [Segment(start=2.0, end=3.0)]), 5.0)
    """
    activity = tuple([(s, e) for s, e in conv.activity[k] if e <= seconds] for k in (0, 1))
    words = tuple([w for w in conv.words[k] if w.end <= seconds] for k in (0, 1))
    return Conversation(min(seconds, conv.duration), activity, words, conv.speakers, source=conv.source)


def stretch(audio: np.ndarray, seconds: float) -> np.ndarray:
    """`audio` (16 kHz) brought to `seconds` by sox's tempo effect (pitch kept), then to the exact
    sample count by linear interpolation (a change of well under 1 %)."""
    n = max(1, int(round(seconds * SAMPLE_RATE)))
    factor = len(audio) / n
    if len(audio) and abs(factor - 1) > 0.01:
        with tempfile.TemporaryDirectory() as tmp:
            src, dst = Path(tmp) / "in.wav", Path(tmp) / "out.wav"
            soundfile.write(str(src), audio, SAMPLE_RATE, subtype="FLOAT")
            # sox's tempo works on factors up to about 10 and down to 0.1; chain when beyond.
            chain, left = [], factor
            while left > 8 or left < 0.125:
                step = 8.0 if left > 8 else 0.125
                chain += ["tempo", "-s", f"{step:.6f}"]
                left /= step
            chain += ["tempo", "-s", f"{left:.6f}"]
            subprocess.run(["sox", str(src), str(dst), *chain], check=True, capture_output=True)
            audio, _ = soundfile.read(str(dst), dtype="float32")
    if len(audio) == 0:
        return np.zeros(n, dtype=np.float32)
    return np.interp(np.linspace(0, len(audio) - 1, n), np.arange(len(audio)), audio).astype(np.float32)


def render(conv: Conversation, pair: VoicePair) -> np.ndarray:
    """(2, n) float32: each side's contiguous word stretches spoken at their aligned intervals."""
    out = np.zeros((2, int(round(conv.duration * SAMPLE_RATE))), dtype=np.float32)
    for k in (0, 1):
        for start, end in conv.activity[k]:
            text = " ".join(w.text for w in conv.words[k] if start <= 0.5 * (w.start + w.end) <= end)
            try:
                spoken = speak(text, pair.voices[k])
            except ValueError:  # nothing audible (a lone hesitation sound): leave it silent
                continue
            speech = stretch(spoken, end - start)
            at = int(round(start * SAMPLE_RATE))
            out[k, at:at + len(speech)] = speech[:out.shape[1] - at]
    return np.clip(out, -1, 1)


def with_noise(samples: np.ndarray, snr_db: float, seed: int) -> np.ndarray:
    """White noise added to each channel, `snr_db` below the RMS of that channel's speech.

    >>> noisy = with_noise(np.ones((2, 1000), dtype=np.float32) * 0.1, snr_db=20, seed=0)
    >>> round(float(np.std(noisy[0])), 3)  # 0.1 / 10
    0.01
    """
    rng = np.random.default_rng(seed)
    out = samples.copy()
    for k in range(len(out)):
        speech = out[k][np.abs(out[k]) > 0]
        rms = float(np.sqrt(np.mean(speech.astype(np.float64) ** 2))) if len(speech) else 0.0
        out[k] += rng.normal(0.0, rms / 10 ** (snr_db / 20), out.shape[1]).astype(np.float32)
    return np.clip(out, -1, 1)


def condition_name(pair: VoicePair, snr_db: float | None) -> str:
    return pair.name if snr_db is None else f"{pair.name}+noise{snr_db:g}dB"


def measured_conversation(root, conv_id: str, seconds: float, pair: VoicePair, work: Path,
                          snr_db: float | None = None) -> dict:
    """The conversation's first `seconds` rendered by `pair` (kept in `work`, reused), with noise
    `snr_db` below the speech when given, through the session pipeline: {"conversation", "voices",
    "added_noise_db", "seconds", "words": its alignments, "vad+words", "vad+asr": voice-activity JSON,
    "snr_db": each channel's estimated speech-to-noise ratio,
    timings}. Cached in `work` as JSON."""
    done = work / f"sw{conv_id}.{int(seconds)}s.{condition_name(pair, snr_db)}.json"
    if done.is_file():
        row = json.loads(done.read_text())
        if not isinstance(row.get("snr_db"), list):  # measured before the lags by noise: add them
            row = with_channel_lags(row, rendered_audio(work, conv_id, seconds, pair, snr_db))
            done.write_text(json.dumps(row))
        return row
    conv = crop(load_conversation(root, conv_id), seconds)
    clean = work / f"sw{conv_id}.{int(seconds)}s.{pair.name}.flac"
    t0 = time.perf_counter()
    if clean.is_file():
        samples = soundfile.read(str(clean), dtype="float32", always_2d=True)[0].T
    else:
        samples = render(conv, pair)
        soundfile.write(str(clean), samples.T, SAMPLE_RATE)
    if snr_db is not None:
        samples = with_noise(samples, snr_db, int(conv_id))
    t1 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        wav, words_json = Path(tmp) / "audio.wav", Path(tmp) / "words.json"
        soundfile.write(str(wav), samples.T, SAMPLE_RATE, subtype="PCM_16")
        words_json.write_text(json.dumps(conversation_to_json(conv)))
        vad_words = load_audio_conversation(wav, vad="silero", transcript=words_json)
        t2 = time.perf_counter()
        vad_asr = load_audio_conversation(wav, vad="silero")
        t3 = time.perf_counter()
    row = {"conversation": f"sw{conv_id}", "voices": pair.label, "added_noise_db": snr_db, "seconds": conv.duration,
           "render_s": round(t1 - t0, 1), "vad_s": round(t2 - t1, 1), "vad_asr_s": round(t3 - t2, 1),
           "words": conversation_to_json(conv),
           "vad+words": conversation_to_json(vad_words), "vad+asr": conversation_to_json(vad_asr)}
    row = with_channel_lags(row, samples)
    done.write_text(json.dumps(row))
    return row


def rendered_audio(work: Path, conv_id: str, seconds: float, pair: VoicePair, snr_db: float | None) -> np.ndarray:
    """(2, n) float32: a kept rendering, with its noise added again (the same seed, the same noise)."""
    samples = soundfile.read(str(work / f"sw{conv_id}.{int(seconds)}s.{pair.name}.flac"), dtype="float32",
                             always_2d=True)[0].T
    return samples if snr_db is None else with_noise(samples, snr_db, int(conv_id))


def with_channel_lags(row: dict, samples: np.ndarray) -> dict:
    """The row with each channel's estimated speech-to-noise ratio ("snr_db") and the voice
    detector's lags read off it, as the session pipeline keeps them ("boundary_lags")."""
    activity = row["vad+asr"]["vad"]
    snrs = [channel_snr_db(signal, speech, SAMPLE_RATE) for signal, speech in zip(samples, activity)]
    lags = channel_lags(samples, SAMPLE_RATE, activity)
    return {**row, "snr_db": snrs, "vad+asr": {**row["vad+asr"], "boundary_lags": lags},
            "vad+words": {**row["vad+words"], "boundary_lags": lags}}
