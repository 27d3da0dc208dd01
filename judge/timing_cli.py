"""`python -m judge fit-scorers`: fit the timing-hazard model and the duration baseline on Switchboard.

    python -m judge fit-scorers SWITCHBOARD_DIR [--split train] [--out-dir judge/checkpoints]
                                [--duration-conversations 600]

Writes timing_hazard.npz and durations.json, each with a manifest (sha256, what it was fitted on).
Development-time: the packaged files were made this way from the Switchboard training split.
"""

from __future__ import annotations

import json
from pathlib import Path

from tqdm import tqdm

from turntaking.switchboard import CorpusError, conversation_ids, load_conversation
from turntaking.commands import guard
from judge.duration_baseline import DurationModel
from judge.scorers import DURATIONS_FILE
from judge.timing_naturalness import (
    MODEL_FILE,
    TimingParams,
    fit_timing_model,
    human_reference,
    save_timing_model,
)
from storage.files import sha256_file


def _conversations(root, ids, desc: str):
    for conv_id in tqdm(ids, desc=desc, unit="conv"):
        yield load_conversation(root, conv_id)


def cmd_fit_scorers(args) -> int:
    root = Path(args.corpus)
    ids = conversation_ids(root, split=args.split)
    split_sha = sha256_file(root / "splits" / f"{args.split}.txt")
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    source = {"corpus": "switchboard (ISIP MS-98 word alignments)", "split": args.split, "split_sha256": split_sha}

    model = fit_timing_model(_conversations(root, ids, "timing hazards"), meta=source)
    ref_ids = conversation_ids(root, split=args.reference_split)
    reference = human_reference(_conversations(root, ref_ids, "human reference"), model)
    manifest = save_timing_model(model, out / MODEL_FILE, {"human_reference": {
        "split": args.reference_split, "conversations": len(ref_ids), "score_params": TimingParams().as_dict(),
        "naturalness_by_window_s": reference}})
    print(f"wrote {out / MODEL_FILE} ({manifest['meta']['conversations']} conversations, sha256 {manifest['sha256'][:16]}...)")

    dur_ids = ids[: args.duration_conversations]
    durations = DurationModel.fit(_conversations(root, dur_ids, "durations"), meta=source)
    path = out / DURATIONS_FILE
    durations.save(path)
    path.with_suffix(".manifest.json").write_text(json.dumps(
        {"file": path.name, "sha256": sha256_file(path), "scorer": "durations", "meta": durations.meta}, indent=1))
    print(f"wrote {path} ({len(dur_ids)} conversations)")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("fit-scorers", help="fit the timing-hazard naturalness model and the duration baseline")
    p.add_argument("corpus", help="Switchboard directory (splits/ and swb_ms98_transcriptions/)")
    p.add_argument("--split", default="train")
    p.add_argument("--reference-split", default="val",
                   help="conversations scored in windows as the human reference of the study views")
    p.add_argument("--out-dir", default=str(Path(__file__).parent / "checkpoints"))
    p.add_argument("--duration-conversations", type=int, default=600,
                   help="the baseline's histograms use the first N conversations (as the issue's measurement did)")
    p.set_defaults(func=guard(cmd_fit_scorers, (CorpusError, ValueError, OSError)))
