"""The probe that tried the cascade's reply settings on the fitting conversations (issue 73), text
path, one variant after another: `python benchmarks/reply_settings_probe/probe.py benchmarks/data/conversations_fitting.json benchmarks/reply_settings_probe/vN.json`.
Its answers are the "What was tried" rows of docs/dialogue-systems.md (cascaded); deleted after."""
import json, sys, time, re
sys.path.insert(0, str(__import__("pathlib").Path(__file__).parents[2]))
from studies.systems.components import CTranslate2LLM, chat_ids
from studies.reply_quality import reply_qualities, summarize, sentence_count
llm = CTranslate2LLM()
tok = llm.tokenizer
convs = json.load(open(sys.argv[1]))["conversations"]
variants = json.load(open(sys.argv[2]))

def suppress_seqs(words):
    seqs = []
    for w in words:
        for form in {w, w.capitalize(), w.lower()}:
            for text in (form, " " + form):
                seqs.append(tok.convert_ids_to_tokens(tok.encode(text, add_special_tokens=False)))
    return seqs

def first_sentences(text, n):
    parts = re.findall(r"[^.!?]*[.!?]+|[^.!?]+$", text)
    return "".join(parts[:n]).strip()

def generate(messages, v):
    ids = chat_ids(tok, messages, True)
    res = llm.generator.generate_batch([tok.convert_ids_to_tokens(ids)], max_length=v.get("max_new_tokens", 48),
        repetition_penalty=v.get("repetition_penalty", 1.2), end_token=llm.end_tokens, include_prompt_in_result=False,
        suppress_sequences=suppress_seqs(v.get("suppress", [])) or None, no_repeat_ngram_size=v.get("no_repeat", 0))
    text = tok.decode(res[0].sequences_ids[0], skip_special_tokens=True)
    return first_sentences(text, v.get("max_sentences", 2))

for v in variants:
    t0 = time.time()
    allq, mem_ok, mem_n, per_conv = [], 0, 0, []
    for c in convs:
        history = []
        turns, replies = [], []
        for turn in c["turns"]:
            say = turn if isinstance(turn, str) else turn["say"]
            msgs = [{"role": "system", "content": v["system"].format(topic=c["topic"])}]
            msgs += v.get("examples", [])
            # earlier: user-only turns beyond the last `exchanges`, then whole exchanges
            ex = v.get("exchanges", 0); early = v.get("earlier", 3)
            kept = history[len(history)-ex:] if ex else []
            before = history[:len(history)-len(kept)]
            if early and v.get("form") == "quoted":
                pass
            elif early:
                msgs += [{"role": "user", "content": u} for u, _ in before[-early:]]
            for u, r in kept:
                msgs += [{"role": "user", "content": u}, {"role": "assistant", "content": first_sentences(r, v.get("history_sentences", 9))}]
            if v.get("form") == "quoted" and (before[-early:] if early else []):
                notes = " ".join(u for u, _ in before[-early:])
                last = ""
                if v.get("last_reply") and history:
                    last = f" You said: {first_sentences(history[-1][1], 1)}"
                msgs.append({"role": "user", "content": v.get("template", "(Earlier I said: {notes}{last})\n{say}").format(notes=notes, last=last, say=say)})
            else:
                msgs.append({"role": "user", "content": say})
            reply = generate(msgs, v)
            history.append((say, reply)); turns.append(say); replies.append(reply)
            if not isinstance(turn, str):
                mem_n += 1; mem_ok += any(a in reply.lower() for a in turn["answer"])
        q = reply_qualities(llm, turns, replies)
        allq += q
        per_conv.append(summarize(q).relevance_mean)
        if v.get("show"):
            for t, r in zip(turns, replies): print("   U:", t, "\n   S:", r)
    s = summarize(allq)
    print(v["name"], s.as_dict(), f"memory {mem_ok}/{mem_n}", "per-conv", [round(x,2) for x in per_conv], f"{time.time()-t0:.0f}s", flush=True)
