"""The naturalness scorers on the platform's own call recordings, with and without the audio cue.

    .venv/bin/python benchmarks/naturalness_calls.py [--gap 6] [--delay 1.5] [--out /tmp/naturalness_calls]

1. The same scripted participant (espeak-ng utterances separated by `--gap` s of silence) talks to
   the cascaded system and to the cascade with timers (cascade-backchannel) through `python -m studies call`'s real-time
   offline call (packaged models); each call is a two-channel recording.
2. Every recording is scored by each scorer: timing-hazard with and without Smart Turn cues
   (naturalness/turn_cue.py), durations, turnnat-va.
3. Audio pairs made from the recordings, one per system reply: a *late* reply (`--delay` s of
   silence inserted in both channels where the reply starts) and a *missing* reply (the system
   channel silenced for that reply). Pair accuracy of timing-hazard with and without the cue says
   what the cue adds on the platform's own audio, and its cost per hour of audio is timed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import soundfile

from naturalness.scorers import SCORERS, load_scorer
from naturalness.turn_cue import smart_turn_cues
from speech.recordings import load_recording, load_recording_audio
from speech.smart_turn import SmartTurn
from studies.offline_call import run_offline_call
from studies.systems import make_system
from studies.systems.cascaded import CascadedSettings, load_components

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench_cascade_latency import SCRIPTS

SR = 16000


def record_calls(out: Path, gap_s: float) -> list[tuple[str, Path]]:
    from tests.studies.conftest import scripted_user

    components = load_components(CascadedSettings.from_config({}))
    calls = []
    for k, script in enumerate(SCRIPTS):
        work = out / f"script{k}"
        work.mkdir(parents=True, exist_ok=True)
        user_wav, _ = scripted_user(work, script, gap_s=gap_s)
        for kind in ("cascaded", "cascade-backchannel"):
            wav = work / f"{kind}.wav"
            if not wav.is_file():
                system = make_system(kind, {}, components=components)
                result = run_offline_call(user_wav, wav, system=system, tail_s=2.0)
                print(f"{wav}: {result.summary()}", flush=True)
            calls.append((kind, wav))
    return calls


def perturbed_pairs(calls, out: Path, delay_s: float) -> list[dict]:
    """Late and missing system replies cut from each recording (system channel 1)."""

    pairs = []
    for kind, wav in calls:
        audio, rate = soundfile.read(wav, dtype="float32", always_2d=True)
        conv = load_recording(wav, words=False)
        for j, (start, end) in enumerate(conv.activity[1][:4]):
            a, b = int(start * SR), int(end * SR)
            late = np.concatenate([audio[:a], np.zeros((int(delay_s * SR), 2), np.float32), audio[a:]])
            missing = audio.copy()
            missing[a:b, 1] = 0.0
            for name, data in (("late_reply", late), ("missing_reply", missing)):
                path = wav.with_name(f"{wav.stem}.{name}{j}.wav")
                soundfile.write(path, data, SR)
                pairs.append({"pair_id": f"{wav.parent.name}-{kind}-{name}{j}", "type": name, "system": kind,
                              "natural": str(wav), "perturbed": str(path)})
    (out / "manifest.jsonl").write_text("".join(json.dumps({**p, "natural": os.path.relpath(p["natural"], out),
                                                            "perturbed": os.path.relpath(p["perturbed"], out)}) + "\n"
                                                for p in pairs))
    return pairs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gap", type=float, default=6.0, help="participant's silence after each utterance (s)")
    ap.add_argument("--delay", type=float, default=1.5, help="extra silence before a late reply (s)")
    ap.add_argument("--out", default="/tmp/naturalness_calls")
    args = ap.parse_args(argv)

    out = Path(args.out)
    calls = record_calls(out, args.gap)
    cue_model = SmartTurn()
    scorers = {name: load_scorer(name) for name in SCORERS}
    cued = {f"{name}+cue": s for name, s in scorers.items() if s.takes_cues}  # timing-hazard
    cache, cue_seconds, audio_seconds = {}, 0.0, 0.0

    def scores(path: Path) -> dict:
        if path not in cache:
            nonlocal cue_seconds, audio_seconds
            conv, audio = load_recording_audio(path)
            t0 = time.perf_counter()
            cues = smart_turn_cues(audio, conv, cue_model)
            cue_seconds += time.perf_counter() - t0
            audio_seconds += conv.duration
            row = {name: s.score(conv).naturalness for name, s in scorers.items()}
            row.update({name: s.score(conv, cues).naturalness for name, s in cued.items()})
            row["cues"] = [round(c.p_complete, 3) for c in cues]
            cache[path] = row
        return cache[path]

    print("\nper call: naturalness (higher is more natural; each scorer on its own scale)")
    names = [*SCORERS, *cued]
    print(f"{'recording':44s} " + " ".join(f"{n:>17s}" for n in names))
    for kind, wav in calls:
        row = scores(wav)
        print(f"{str(wav.relative_to(out)):44s} " + " ".join(f"{row[n]:17.4f}" for n in names))
    for kind in ("cascaded", "cascade-backchannel"):
        mean = {n: np.mean([scores(w)[n] for k, w in calls if k == kind]) for n in names}
        print(f"{'mean ' + kind:44s} " + " ".join(f"{mean[n]:17.4f}" for n in names))

    pairs = perturbed_pairs(calls, out, args.delay)
    print(f"\n{len(pairs)} audio pairs: share ranked right (perturbed less natural)")
    for kind in sorted({p["type"] for p in pairs}):
        chosen = [p for p in pairs if p["type"] == kind]
        right = {n: np.mean([scores(Path(p["perturbed"]))[n] < scores(Path(p["natural"]))[n] for p in chosen])
                 for n in names}
        print(f"  {kind:16s} ({len(chosen)} pairs) " + "  ".join(f"{n} {100 * v:5.1f}%" for n, v in right.items()))
    print(f"\nSmart Turn cues: {1000 * cue_seconds / max(len(cache), 1):.0f} ms a recording, "
          f"{3600 * cue_seconds / audio_seconds:.0f} s per hour of two-channel audio "
          f"({audio_seconds / cue_seconds:.0f}x real time)")
    (out / "results.json").write_text(json.dumps({str(k): v for k, v in cache.items()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
