"""The cascade's LLM with float32 and int8 weights (one thread): time to the first token, ms a
token, and the greedy replies to the fitting conversations (written to OUT_DIR/TYPE.json).

    PYTHONPATH=. HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/llm_compute_type_probe.py float32 OUT_DIR
"""
import json
import statistics
import sys
import time
from pathlib import Path

import speech  # noqa: F401  (the OpenMP policy the systems run with)
from systems.cascaded import CascadedSettings
from systems.language_models import CTranslate2LLM

compute_type, out = sys.argv[1], Path(sys.argv[2])
settings = CascadedSettings()
conversations = json.loads((Path(__file__).parent / "data/conversations_fitting.json").read_text())["conversations"]
llm = CTranslate2LLM(threads=1, compute_type=compute_type)
replies, firsts, per_token = [], [], []
for conversation in conversations:
    llm.warm(settings.reply_messages(conversation["topic"], [], "")[:1])
    history = []
    for turn in conversation["turns"]:
        text = turn["say"] if isinstance(turn, dict) else turn
        messages = settings.reply_messages(conversation["topic"], history, text)
        start, stamps, reply = time.perf_counter(), [], ""
        for piece in llm.stream(messages, settings.max_new_tokens, decoding=settings.decoding(len(history))):
            stamps.append(time.perf_counter())
            reply += piece
        firsts.append(stamps[0] - start)
        if len(stamps) > 2:
            per_token.append((stamps[-1] - stamps[0]) / (len(stamps) - 1))
        history.append((text, reply.strip()))
        replies.append(reply.strip())
print(compute_type, "first token ms", round(1000 * statistics.median(firsts), 1),
      "ms a token", round(1000 * statistics.median(per_token), 1))
out.mkdir(parents=True, exist_ok=True)
(out / f"{compute_type}.json").write_text(json.dumps(replies, indent=0))
