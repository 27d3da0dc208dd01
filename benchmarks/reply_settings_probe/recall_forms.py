import json, sys, re
sys.path.insert(0, str(__import__("pathlib").Path(__file__).parents[2]))
from studies.systems.components import CTranslate2LLM, chat_ids
from studies.systems.cascaded import first_sentences
llm = CTranslate2LLM()
tok = llm.tokenizer
SUP = ["sorry", "apologize", "apologise", "assistant", "AI"]
def seqs(words):
    out = []
    for w in words:
        for form in {w, w.capitalize(), w.lower()}:
            for t in (form, " " + form):
                out.append(tok.convert_ids_to_tokens(tok.encode(t, add_special_tokens=False)))
    return out
def gen(msgs, n=40):
    ids = chat_ids(tok, msgs, True)
    r = llm.generator.generate_batch([tok.convert_ids_to_tokens(ids)], max_length=n, repetition_penalty=1.2,
        end_token=llm.end_tokens, include_prompt_in_result=False, suppress_sequences=seqs(SUP))
    return first_sentences(tok.decode(r[0].sequences_ids[0], skip_special_tokens=True), 2)
PERSONA = "You are Sam. You are chatting on the phone with someone about {topic}. Talk like a friendly person, not like an assistant: reply to what they just said in one or two short sentences."
TEMPLATES = {
 "paren": "(Earlier I said: {notes})\n{say}",
 "now": "Earlier I said: {notes}\nNow I say: {say}",
 "quotes": "Here is what I told you: \"{notes}\"\n{say}",
 "lines": "What I told you so far:\n{lines}\n\n{say}",
 "recall": "{say} Here is what I said before: \"{notes}\"",
}
for f in sys.argv[1:]:
  convs = json.load(open(f))["conversations"]
  for name, tpl in TEMPLATES.items():
    ok = 0; n = 0; outs = []
    for c in convs:
        before = []
        for t in c["turns"]:
            say = t if isinstance(t, str) else t["say"]
            if not isinstance(t, str):
                msgs = [{"role":"system","content":PERSONA.format(topic=c["topic"])}, {"role":"user","content": tpl.format(notes=" ".join(before), lines="\n".join(before), say=say)}]
                r = gen(msgs); n += 1
                good = any(a in r.lower() for a in t["answer"]); ok += good
                outs.append(("+" if good else "-") + " " + say + " -> " + r)
            before.append(say)
    print(name, f"{ok}/{n}", flush=True)
    for o in outs: print("   ", o)
