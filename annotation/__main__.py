"""Command line: `python -m annotation build-pairs SOURCE --out DIR [--per-type N] [--seed S]`.

SOURCE is a Switchboard MS-98 directory (with --split or --split-list), a directory of
voice-activity JSON files (one conversation each), or a directory of two-channel recordings
(WAV/FLAC, one speaker per channel: Silero voice activity and ASR words; clips rendered as audio).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from analysis.activity import load_conversation_json
from analysis.switchboard import CorpusError, conversation_ids, load_conversation
from annotation.benchmark import write_benchmark
from annotation.perturbations import PERTURBATION_TYPES, PerturbationParams, build_pairs


AUDIO_SUFFIXES = (".wav", ".flac")


def load_source(source: Path, split: str | None, split_list: str | None):
    """(conversations, audio by source or None)."""
    if (source / "swb_ms98_transcriptions").is_dir():
        ids = conversation_ids(source, split=split, split_list=split_list)
        return [load_conversation(source, i) for i in ids], None
    if not source.is_dir():
        raise FileNotFoundError(f"source not found or not a directory: {source}")
    recordings = sorted(p for p in source.iterdir() if p.suffix.lower() in AUDIO_SUFFIXES)
    if recordings:
        from analysis.audio import load_audio
        from analysis.pipeline import load_conversation as conversation_from_path

        conversations, audio = [], {}
        for path in recordings:
            conv = conversation_from_path(path, vad="silero")
            conversations.append(conv)
            audio[conv.source] = load_audio(path, sample_rate=None, require_channels=2)
        return conversations, audio
    files = sorted(source.glob("*.json"))
    if not files:
        raise ValueError(f"{source} holds no recordings or voice-activity JSON files and is not a Switchboard directory")
    return [load_conversation_json(f) for f in files], None


def cmd_build_pairs(args) -> int:
    conversations, audio = load_source(Path(args.source), args.split, args.split_list)
    params = PerturbationParams()
    pairs = build_pairs(conversations, per_type=args.per_type, seed=args.seed, types=args.types, params=params)
    manifest = write_benchmark(pairs, args.out, str(args.source), args.seed, args.per_type, params, audio=audio)
    counts = {t: sum(p.type == t for p in pairs) for t in args.types}
    print(f"wrote {len(pairs)} pairs to {manifest}: " + ", ".join(f"{t} {n}" for t, n in counts.items()))
    short = [t for t, n in counts.items() if n < args.per_type]
    if short:
        print(f"note: fewer than {args.per_type} candidates for {', '.join(short)}", file=sys.stderr)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m annotation")
    sub = parser.add_subparsers(dest="command", required=True)
    bp = sub.add_parser("build-pairs", help="build natural/perturbed clip pairs")
    bp.add_argument("source")
    bp.add_argument("--out", required=True)
    bp.add_argument("--per-type", type=int, default=30)
    bp.add_argument("--seed", type=int, default=0)
    bp.add_argument("--split")
    bp.add_argument("--split-list")
    bp.add_argument("--types", nargs="+", default=list(PERTURBATION_TYPES), choices=PERTURBATION_TYPES)
    bp.set_defaults(func=cmd_build_pairs)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (CorpusError, ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
