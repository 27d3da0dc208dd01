"""How much of the cascade's first token is the prompt, and would caching the state after the
earlier turn (CTranslate2's static prompt: system prompt + the participant's turn before) make it
sooner? Time to the first token with the system prompt alone cached, then with the earlier turn
cached too (warmed with another turn first), on five turns of a hiking conversation, three rounds.

    PYTHONPATH=. HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/static_prompt_probe.py
"""
import time, statistics as st
from systems.language_models import CTranslate2LLM, chat_ids
from systems.cascaded import CascadedSettings
s = CascadedSettings()
llm = CTranslate2LLM(threads=1)
tok = llm.tokenizer
system = [{"role": "system", "content": s.system_prompt.format(topic="a hiking trip")}]
turns = ["We are planning to walk the West Highland Way next spring.", "My brother Tom wants to carry a tent the whole way.",
         "Do you think we should book the hostels early?", "I am a bit worried about the weather in April.",
         "How many days should we plan for the whole route?", "We also want to see Loch Lomond on the way."]
to_tokens = tok.convert_ids_to_tokens
def first_token(static_msgs, msgs):
    ids = chat_ids(tok, msgs, True)
    static = chat_ids(tok, static_msgs, False)
    assert ids[:len(static)] == static, "not a prefix"
    t = time.perf_counter()
    for _ in llm._steps(to_tokens(ids[len(static):]), to_tokens(static), 1):
        break
    return time.perf_counter() - t, len(ids) - len(static)
a, b = [], []
for rep in range(3):
    for k in range(1, len(turns)):
        msgs = system + [{"role": "user", "content": turns[k-1]}, {"role": "user", "content": turns[k]}]
        first_token(system, msgs)  # warm the system prompt
        ta, na = first_token(system, msgs)
        prefix = system + [{"role": "user", "content": turns[k-1] + f" ({rep})"}]
        msgs2 = prefix + [{"role": "user", "content": turns[k]}]
        first_token(prefix, prefix + [{"role": "user", "content": "hello"}])  # warm: the earlier turn cached
        tb, nb = first_token(prefix, msgs2)
        a.append(ta); b.append(tb)
        print(f"system static: {ta*1000:.0f} ms ({na} tokens); with the earlier turn: {tb*1000:.0f} ms ({nb} tokens)")
print("median", st.median(a)*1000, st.median(b)*1000)
