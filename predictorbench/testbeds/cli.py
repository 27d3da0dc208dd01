"""`python -m predictorbench testbeds build | evaluate | topline | prompts` (registered by predictorbench/__main__.py).

    build    --corpus switchboard DIR [--split S | --split-list F] | --recordings FILE...
             [--per-class 750] [--seed 0] --out ITEMS.jsonl
    evaluate --items ITEMS.jsonl --audio-dir DIR (two-channel <conversation>.wav/.flac/.sph)
             --adapter random | openai --base-url URL --model NAME [--api-key-env VAR] [--limit N]
    topline  --items ITEMS.jsonl (--corpus switchboard DIR | --recordings FILE...) [--checkpoint C]
    prompts  print the prompt templates
Recordings: voice-activity JSON files (with words) or two-channel audio (Silero + faster-whisper);
their conversation id is the file name without extension.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from judge.reports import load_judge
from predictorbench.testbeds.adapters import OpenAIChatAdapter, RandomAdapter
from predictorbench.testbeds.evaluation import evaluate, topline
from predictorbench.testbeds.items import TestbedError, build, describe, read_items, write_items
from predictorbench.testbeds.prompts import PROMPTS
from speech.audio import load_audio
from speech.recordings import load_recording
from turntaking.commands import report_command
from turntaking.switchboard import conversation_ids, load_conversation

AUDIO_SUFFIXES = (".wav", ".flac", ".sph", ".ogg")


def _conversations(args) -> dict:
    if args.corpus:
        name, root = args.corpus
        if name != "switchboard":
            raise ValueError(f"unknown corpus {name!r}: use switchboard, or --recordings")
        ids = conversation_ids(root, None if args.split_list else args.split, args.split_list)
        ids = ids[: args.limit_conversations] if args.limit_conversations else ids
        return {c.source: c for c in (load_conversation(root, i) for i in ids)}
    if args.recordings:
        out = {}
        for path in args.recordings:
            conv = load_recording(path, words=True)
            conv.source = Path(path).stem
            out[conv.source] = conv
        return out
    raise ValueError("give --corpus switchboard DIR or --recordings FILE...")


def cmd_build(args) -> dict:
    items = build(list(_conversations(args).values()), args.per_class, args.seed, args.stride)
    write_items(args.out, items)
    return {"written": str(args.out), "items": len(items), "beds": describe(items)}


def audio_loader(audio_dir):
    audio_dir = Path(audio_dir)

    def load(conversation: str):
        for suffix in AUDIO_SUFFIXES:
            path = audio_dir / f"{conversation}{suffix}"
            if path.is_file():
                samples, _ = load_audio(path, 16000, require_channels=2)
                return samples
        raise TestbedError(f"no two-channel audio for {conversation} in {audio_dir} ({', '.join(AUDIO_SUFFIXES)})")

    return load


def cmd_evaluate(args) -> dict:
    items = read_items(args.items)[: args.limit] if args.limit else read_items(args.items)
    if args.adapter == "random":
        adapter = RandomAdapter(args.seed)
    else:
        if not args.base_url or not args.model:
            raise ValueError("--adapter openai needs --base-url and --model")
        adapter = OpenAIChatAdapter(args.base_url, args.model, os.environ.get(args.api_key_env) if args.api_key_env
                                    else None, channels=args.channels)
    result = evaluate(items, adapter, audio_loader(args.audio_dir))
    if args.answers:
        Path(args.answers).write_text("".join(json.dumps(a) + "\n" for a in result["answers"]))
    del result["answers"]
    return result


def cmd_topline(args) -> dict:
    model, thresholds = load_judge(args.checkpoint)
    return {"adapter": "supervised judge (topline)", "beds": topline(read_items(args.items), _conversations(args),
                                                                     model, thresholds.metrics)}


def cmd_prompts(args) -> dict:
    return {f"{bed}/{event}": {"prompt": text, "positive_option": opt} for (bed, event), text_opt in PROMPTS.items()
            for text, opt in [text_opt]}


def format_beds(report: dict) -> str:
    if "written" in report:
        lines = [f"wrote {report['items']} items to {report['written']}"]
        lines += [f"  {k:40s} +{v['positive']:5d} -{v['negative']:5d}  max {v['max_clip_s']:.1f} s"
                  for k, v in report["beds"].items()]
        return "\n".join(lines)
    if "beds" not in report:
        return "\n\n".join(f"{k} (positive option {v['positive_option']}):\n{v['prompt']}" for k, v in report.items())
    lines = [report["adapter"]]
    for k, v in report["beds"].items():
        acc = "n/a" if v["accuracy"] is None else f"{100 * v['accuracy']:.1f}% [{100 * v['wilson_95'][0]:.1f}, " \
                                                   f"{100 * v['wilson_95'][1]:.1f}]"
        lines.append(f"  {k:40s} n {v['n']:5d}  accuracy {acc}  (random 50.0%)")
    return "\n".join(lines)


def _handler(compute):
    return report_command(compute, format_beds)


def _sources(p) -> None:
    p.add_argument("--corpus", nargs=2, metavar=("NAME", "DIR"), help="e.g. switchboard /data/swb")
    p.add_argument("--split", default="test", help="Switchboard split list name (DIR/splits/NAME.txt)")
    p.add_argument("--split-list")
    p.add_argument("--limit-conversations", type=int)
    p.add_argument("--recordings", nargs="+", help="voice-activity JSON (with words) or two-channel audio files")


def register(subparsers) -> None:
    tb = subparsers.add_parser("testbeds", help="audio-FM understand/predict test beds (Talking Turns sec. 5)")
    sub = tb.add_subparsers(dest="testbeds_command", required=True)

    p = sub.add_parser("build", help="balanced understand and predict items from a two-channel corpus")
    _sources(p)
    p.add_argument("--per-class", type=int, default=750, help="positives (and negatives) per bed and event")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--stride", type=float, default=5.0, help="understand windows start every STRIDE s")
    p.add_argument("--out", required=True, help="items JSONL to write")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_handler(cmd_build))

    p = sub.add_parser("evaluate", help="ask an audio FM (or the random baseline) every item")
    p.add_argument("--items", required=True)
    p.add_argument("--audio-dir", required=True, help="two-channel recordings named <conversation>.wav etc.")
    p.add_argument("--adapter", choices=("random", "openai"), default="random")
    p.add_argument("--base-url", help="OpenAI-compatible API root, e.g. http://localhost:8000/v1")
    p.add_argument("--model")
    p.add_argument("--api-key-env", help="environment variable holding the API key")
    p.add_argument("--channels", choices=("mix", "stereo"), default="mix")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--limit", type=int)
    p.add_argument("--answers", help="write every raw answer to this JSONL")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_handler(cmd_evaluate))

    p = sub.add_parser("topline", help="the supervised judge's accuracy on the predict items")
    p.add_argument("--items", required=True)
    _sources(p)
    p.add_argument("--checkpoint")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_handler(cmd_topline))

    p = sub.add_parser("prompts", help="print the prompt templates")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_handler(cmd_prompts))
