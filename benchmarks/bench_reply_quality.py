"""Whether the cascade's replies answer the turn and remember the conversation: scripted
conversations played to two or more settings of the cascade side by side, one run.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_reply_quality.py --set fitting --path text
    PYTHONPATH=. .venv/bin/python benchmarks/bench_reply_quality.py --set confirming --path audio --out r.json
    PYTHONPATH=. .venv/bin/python benchmarks/bench_reply_quality.py --set fitting --path text \\
        --config 'shorter={"max_new_tokens": 24}' --config 'defaults={}'

Sets (`benchmarks/data/conversations_SET.json`): `fitting`, on which the settings were chosen,
and `confirming`, written with it and run once the settings were final (`confirming_2`,
`confirming_3` to `confirming_6`, written later, each run once too). Paths: `text` gives the
written turns to the cascade's prompt and language model (what chose the settings: a minute a
setting); `audio` plays each turn, spoken by the examiner's voices in turn (espeak-ng and
Piper), to the whole cascade on the real-time clock (`studies.offline_call`, a participant who
waits for each answer: `TurnByTurnFeed`), and measures the replies it spoke to what its
recogniser heard, and the first system audio after each turn.

Per setting: the relevance measure (studies.reply_quality: nats per token by which a reply is
likelier after its own turn than after the conversation's others), apologies and assistant
disclaimers, replies over 3 sentences, the memory questions answered right (a turn with
`answer`: the reply holds one of its words), and (audio) the latency p50. Against the first
setting, the conversations whose mean relevance is higher. The default settings compared are
`before` (the cascade's assistant-prompt settings until 6 Dec 2026, below) and `now` (today's defaults).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy.stats import bootstrap
from tqdm import tqdm

from examiner.voices import VOICES, speak
from studies.call_manager import models_key
from studies.offline_call import TurnByTurnFeed, run_offline_feed
from studies.reply_quality import exchanges_from_log, reply_qualities, summarize
from systems.cascaded import CascadedSettings
from systems.reply_prompts import first_sentences
from systems.stages import load_stages
from systems.language_models import CTranslate2LLM
from systems.kinds import system_kind
from studies.timing import read_timing_log

os.environ.setdefault("HF_HUB_OFFLINE", "1")
DATA = Path(__file__).parent / "data"
RATE = 16000
# The cascade's reply settings until 6 Dec 2026 (the assistant prompt, three earlier turns, 48
# tokens, nothing suppressed, no recall prompt), for side-by-side runs.
BEFORE = {
    "system_prompt": "You are a friendly voice assistant talking with a person about {topic}. "
                     "Answer in one or two short spoken sentences. No lists, no emojis.",
    "max_new_tokens": 48, "history_turns": 0, "history_reply_sentences": 0, "earlier_user_turns": 3,
    "suppressed_words": [], "recall_turns": 0,
}
LONG_SENTENCES = 3  # the bound: no reply over 3 sentences


def load_set(name: str) -> list[dict]:
    path = DATA / f"conversations_{name}.json"
    if not path.is_file():
        raise SystemExit(f"error: no conversation set {name!r} ({path} does not exist)")
    return json.loads(path.read_text())["conversations"]


def said(turn) -> str:
    return turn if isinstance(turn, str) else turn["say"]


def text_replies(llm, settings: CascadedSettings, conversation: dict) -> list[tuple[str, str]]:
    """The cascade's replies to the written turns: its prompt, its decoding, its sentence limit."""
    history: list[tuple[str, str]] = []
    for turn in conversation["turns"]:
        text = settings.recalled_reply(history, said(turn))
        if text is None:
            messages = settings.reply_messages(conversation["topic"], history, said(turn))
            text = "".join(llm.stream(messages, settings.max_new_tokens, decoding=settings.decoding(len(history))))
        history.append((said(turn), first_sentences(text, settings.max_sentences)))
    return history


def audio_replies(components, config: dict, conversation: dict, index: int, work: Path):
    """(exchanges as the system heard and answered them, the reply of each written turn, latencies)."""
    voice = VOICES[index % len(VOICES)]
    feed = TurnByTurnFeed([speak(said(turn), voice) for turn in conversation["turns"]])
    system = system_kind("cascaded").build(dict(config), components=components)
    result = run_offline_feed(feed, work / f"call{index}.wav", system=system, topic=conversation["topic"])
    events = read_timing_log(result.log_path)
    starts = [s / RATE for s in feed.starts] + [float("inf")]
    per_turn = ["" for _ in conversation["turns"]]
    replies_by_turn: dict[int, str] = {}
    for event in events:
        if event["event"] == "reply" and event.get("text"):
            replies_by_turn[event.get("turn")] = event["text"]
    heard_at = {e.get("turn"): e["mic_s"] for e in events if e["event"] == "transcript"}
    for turn, reply in replies_by_turn.items():
        at = heard_at.get(turn)
        if at is None:
            continue
        k = max(i for i in range(len(starts) - 1) if starts[i] <= at) if at >= starts[0] else 0
        per_turn[k] = (per_turn[k] + " " + reply).strip()
    return exchanges_from_log(events), per_turn, result.latencies_s


def measure(name: str, config: dict, conversation: dict, index: int, path: str, components, work: Path) -> dict:
    """One conversation played to one setting: its exchanges, the reply to each written turn, latencies."""
    if path == "text":
        exchanges = text_replies(components[2], CascadedSettings.from_config(dict(config)), conversation)
        return {"exchanges": exchanges, "per_turn": [reply for _, reply in exchanges], "latencies": []}
    call = work / name
    call.mkdir(exist_ok=True)
    exchanges, per_turn, latencies = audio_replies(components, config, conversation, index, call)
    return {"exchanges": exchanges, "per_turn": per_turn, "latencies": latencies}


def summary(name: str, config: dict, conversations: list[dict], played: list[dict], scorer) -> dict:
    """A setting's figures over the conversations played to it."""
    per_conversation, every, memory, latencies, examples = [], [], [], [], []
    for conversation, call in zip(conversations, played):
        exchanges = call["exchanges"]
        qualities = reply_qualities(scorer, [t for t, _ in exchanges], [r for _, r in exchanges])
        every += qualities
        per_conversation.append(summarize(qualities).relevance_mean)
        for turn, reply in zip(conversation["turns"], call["per_turn"]):
            if not isinstance(turn, str):
                memory.append(any(word in reply.lower() for word in turn["answer"]))
        latencies += call["latencies"]
        examples.append({"topic": conversation["topic"], "exchanges": exchanges, "latencies_s": call["latencies"]})
    return {
        "setting": name, "config": config, **summarize(every).as_dict(),
        "over_3_sentences": sum(q.sentences > LONG_SENTENCES for q in every),
        "memory_right": sum(memory), "memory_asked": len(memory),
        "relevance_per_conversation": [None if r is None else round(r, 3) for r in per_conversation],
        "latency_p50_s": round(float(np.percentile(latencies, 50)), 3) if latencies else None,
        "latency_p90_s": round(float(np.percentile(latencies, 90)), 3) if latencies else None,
        "latency_mean_s": round(float(np.mean(latencies)), 3) if latencies else None,
        "replies_timed": len(latencies),
        "conversations": examples,
    }


def paired_latency(base: dict, other: dict) -> dict | None:
    """The mean first-audio latency per conversation, other minus base, with a 95% bootstrap
    interval over conversations (the same conversations, played one after the other)."""
    pairs = [(np.mean(a["latencies_s"]), np.mean(b["latencies_s"]))
             for a, b in zip(base["conversations"], other["conversations"]) if a["latencies_s"] and b["latencies_s"]]
    if len(pairs) < 2:
        return None
    differences = np.array([b - a for a, b in pairs])
    interval = bootstrap((differences,), np.mean, n_resamples=9999, random_state=0).confidence_interval
    return {"mean_difference_s": round(float(differences.mean()), 3),
            "ci95_s": [round(float(interval.low), 3), round(float(interval.high), 3)], "conversations": len(pairs)}


def parse_configs(values: list[str]) -> list[tuple[str, dict]]:
    if not values:
        return [("before", BEFORE), ("now", {})]
    configs = []
    for value in values:
        name, sep, text = value.partition("=")
        try:
            config = json.loads(text) if sep else None
        except ValueError as exc:
            raise SystemExit(f"error: --config {name}: not JSON: {exc}")
        if not isinstance(config, dict):
            raise SystemExit(f"error: --config takes NAME=JSON_OBJECT, got {value!r}")
        configs.append((name, config))
    return configs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", default="fitting", help="fitting (default), confirming or confirming_2 to _6")
    parser.add_argument("--path", choices=("text", "audio"), default="text")
    parser.add_argument("--config", action="append", default=[], metavar="NAME=JSON",
                        help="a setting to compare (repeatable; default: before and now)")
    parser.add_argument("--out", help="write the results (with every exchange) as JSON here")
    args = parser.parse_args()
    conversations = load_set(args.set)
    configs = parse_configs(args.config)
    try:
        settings = {name: CascadedSettings.from_config(dict(config)) for name, config in configs}
    except Exception as exc:
        raise SystemExit(f"error: --config: {exc}")
    # Each setting's models, loaded once for all the settings that name the same ones; the
    # scorer is always the packaged float32 model, whatever the settings generate with.
    loaded: dict[str, object] = {}
    for chosen in settings.values():
        if models_key(chosen) not in loaded:
            loaded[models_key(chosen)] = load_stages(chosen)
    models = {name: loaded[models_key(chosen)] for name, chosen in settings.items()}
    default = loaded.get(models_key(CascadedSettings()))
    scorer = default[2] if default and isinstance(default[2], CTranslate2LLM) else CTranslate2LLM()
    # Conversation by conversation, each setting in turn: a machine that slows down meanwhile
    # slows every setting alike (the latencies are compared per conversation).
    played: dict[str, list[dict]] = {name: [] for name, _ in configs}
    with tempfile.TemporaryDirectory() as tmp:
        for index, conversation in enumerate(tqdm(conversations, desc=f"{args.set} ({args.path})", unit="conversation")):
            for name, config in configs:
                played[name].append(measure(name, config, conversation, index, args.path, models[name], Path(tmp)))
    results = [summary(name, config, conversations, played[name], scorer) for name, config in configs]
    base = results[0]
    for result in results[1:]:
        pairs = [(a, b) for a, b in zip(base["relevance_per_conversation"], result["relevance_per_conversation"])
                 if a is not None and b is not None]
        result[f"conversations_more_relevant_than_{base['setting']}"] = f"{sum(b > a for a, b in pairs)}/{len(pairs)}"
        result[f"latency_minus_{base['setting']}"] = paired_latency(base, result)
    report = {"set": args.set, "path": args.path, "load_average": os.getloadavg(), "results": results}
    for result in results:
        line = {k: v for k, v in result.items() if k not in ("conversations", "config")}
        print(json.dumps(line))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
