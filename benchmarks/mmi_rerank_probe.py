"""Probe: would re-ranking candidate replies by how much their own turn explains them (maximum
mutual information, Li et al. 2016) lift the replies' relevance above the assistant prompt's in
most conversations? Fitting conversations, text path; the candidates come from the cascade's own
prompt and decoding (beam search's n-best, or samples), the re-ranking sees only the turns so far.

    PYTHONPATH=. HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/mmi_rerank_probe.py --set fitting
"""

from __future__ import annotations

import argparse
import json
import time

from tqdm import tqdm

from benchmarks.bench_reply_quality import BEFORE, load_set, said, text_replies
from studies.reply_quality import reply_qualities, summarize
from systems.cascaded import CascadedSettings
from systems.language_models import CTranslate2LLM
from systems.reply_prompts import first_sentences

GENERIC = "Okay."  # the contrast of a first turn, which has no turn before it


def candidates(llm, settings, messages, n: int, how: str) -> list[str]:
    tokens, static = llm._prompt(messages, True)
    decoding = settings.decoding(0)
    common = dict(max_length=settings.max_new_tokens, repetition_penalty=decoding.repetition_penalty,
                  end_token=llm.end_tokens, suppress_sequences=llm._suppressed(decoding), static_prompt=static,
                  cache_static_prompt=static is not None, include_prompt_in_result=False, num_hypotheses=n)
    if how == "beam":
        result = llm.generator.generate_batch([tokens], beam_size=n, **common)
    else:
        result = llm.generator.generate_batch([tokens], beam_size=1, sampling_topk=20, sampling_temperature=0.9, **common)
    texts = [llm.tokenizer.decode(ids, skip_special_tokens=True) for ids in result[0].sequences_ids]
    return [first_sentences(t, settings.max_sentences) for t in texts if t.strip()]


def mmi_choice(llm, cands: list[str], turn: str, earlier: list[str]) -> str:
    contrasts = (earlier[-5:] or [GENERIC])
    pairs = [(t, c) for c in cands for t in [turn, *contrasts]]
    scores = llm.log_likelihoods(pairs)
    k = 1 + len(contrasts)
    best = max(range(len(cands)), key=lambda i: scores[i * k] - sum(scores[i * k + 1:(i + 1) * k]) / len(contrasts))
    return cands[best]


def reranked(llm, settings, conversation, n, how, times):
    history: list[tuple[str, str]] = []
    for turn in conversation["turns"]:
        text = said(turn)
        messages = settings.reply_messages(conversation["topic"], history, text)
        start = time.perf_counter()
        greedy = "".join(llm.stream(messages, settings.max_new_tokens, decoding=settings.decoding(len(history))))
        cands = [first_sentences(greedy, settings.max_sentences)] + candidates(llm, settings, messages, n, how)
        reply = mmi_choice(llm, list(dict.fromkeys(cands)), text, [u for u, _ in history])
        times.append(time.perf_counter() - start)
        history.append((text, reply))
    return history


def figures(llm, conversations, played):
    per, memory, every = [], [], []
    for conversation, exchanges in zip(conversations, played):
        q = reply_qualities(llm, [t for t, _ in exchanges], [r for _, r in exchanges])
        every += q
        per.append(summarize(q).relevance_mean)
        for turn, (_, reply) in zip(conversation["turns"], exchanges):
            if not isinstance(turn, str):
                memory.append(any(w in reply.lower() for w in turn["answer"]))
    return {"relevance": round(summarize(every).relevance_mean, 3), "per_conversation": [round(p, 3) for p in per],
            "memory": f"{sum(memory)}/{len(memory)}"}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--set", default="fitting")
    parser.add_argument("--n", type=int, default=6)
    parser.add_argument("--out")
    args = parser.parse_args()
    conversations = load_set(args.set)
    llm = CTranslate2LLM()
    now, before = CascadedSettings(), CascadedSettings.from_config(dict(BEFORE))
    runs = {"before": [text_replies(llm, before, c) for c in tqdm(conversations, desc="before")],
            "now": [text_replies(llm, now, c) for c in tqdm(conversations, desc="now")]}
    times: dict[str, list] = {}
    for how in ("beam", "sample"):
        times[how] = []
        runs[f"mmi_{how}"] = [reranked(llm, now, c, args.n, how, times[how]) for c in tqdm(conversations, desc=how)]
    report = {name: figures(llm, conversations, played) for name, played in runs.items()}
    base = report["before"]["per_conversation"]
    for name, r in report.items():
        r["above_before"] = sum(b > a for a, b in zip(base, r["per_conversation"]))
        if name.startswith("mmi_"):
            r["seconds_a_reply"] = round(sum(times[name[4:]]) / len(times[name[4:]]), 3)
        print(name, json.dumps(r))
    if args.out:
        json.dump({"report": report, "runs": runs}, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
