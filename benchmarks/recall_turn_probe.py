"""Probe (committed once, then removed): where a recall question shares no word with any earlier
turn, which turn does it ask about? Compared on the written turns of the spent conversation sets:
the packaged model's likelihood of "You said <turn>" after the question (given), the same less its
likelihood after "What did I say?" (pmi), the bare turn (bare), and the highest cosine between the
words' input embedding rows (emb). h_*: shared words first, the candidate where none.

    PYTHONPATH=. HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/recall_turn_probe.py
"""
import json, re
from pathlib import Path
import numpy as np
from safetensors.numpy import load_file
from transformers import AutoTokenizer
from systems.reply_prompts import recalled_answer, _content_words, said_back
from systems.language_models import CTranslate2LLM, llm_location
loc = llm_location(None, None)
tok = AutoTokenizer.from_pretrained(loc)
W = load_file(str(Path(loc) / "model.safetensors"))
E = [v for k, v in W.items() if "embed_tokens" in k][0].astype(np.float32)
E /= np.linalg.norm(E, axis=1, keepdims=True)
def vec(word):
    ids = tok.encode(" " + word, add_special_tokens=False)
    v = E[ids].mean(0); return v / np.linalg.norm(v)
def words(t):  # content words keeping case
    return [w for w in re.findall(r"[A-Za-z0-9']+", t) if w.lower() in _content_words(w)]
def emb_score(q, turn):
    qs, ts = words(q), words(turn)
    if not qs or not ts: return -1
    return max(float(vec(a) @ vec(b)) for a in qs for b in ts)
llm = CTranslate2LLM(data_root=None)
SETS = ["fitting", "confirming", "confirming_2", "confirming_3", "confirming_4"]
def said(t): return t if isinstance(t, str) else t["say"]
tot = {}
for name in SETS:
    for c in json.loads(Path(f"benchmarks/data/conversations_{name}.json").read_text())["conversations"]:
        hist = []
        for t in c["turns"]:
            if isinstance(t, dict) and "answer" in t:
                q = t["say"]
                a = recalled_answer(hist, q, 8)
                told = [u for u, _ in hist]
                ok = lambda s: any(w in s.lower() for w in t["answer"])
                cands = ["You said " + said_back(u) + "." for u in told]
                given = llm.log_likelihoods([(q, x) for x in cands])
                bare = llm.log_likelihoods([(q, said_back(u)) for u in told])
                prior = llm.log_likelihoods([("What did I say?", x) for x in cands])
                em = [emb_score(q, u) for u in told]
                pick = lambda s: cands[max(range(len(s)), key=lambda i: s[i])]
                res = {"overlap": bool(a) and ok(a), "pmi": ok(pick([g-p for g,p in zip(given,prior)])),
                       "given": ok(pick(given)), "bare": ok(pick(bare)), "emb": ok(pick(em))}
                for k in ["pmi", "given", "bare", "emb"]:
                    res["h_" + k] = res["overlap"] if a else res[k]
                for k, v in res.items(): tot[k] = tot.get(k, 0) + v
                if not a: print(name, q, {k: int(v) for k, v in res.items() if not k.startswith("h_")}, pick(em)[:60])
            hist.append((said(t), "ok"))
print(tot)
