"""SmolLM2-135M-Instruct (the cascade's default) vs the packaged Gemma 3 270M (base model, Q4_K_M
dequantized to float32), both on CTranslate2 float32 with 2 threads, as the cascade prompts them.

    cd /work/main && PYTHONPATH=/tmp/gemma_pkgs \
        .venv/bin/python benchmarks/gemma_probe_compare.py [--models smollm2,gemma] [--out FILE.json]
"""
import argparse, json, os, re, statistics, sys, time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import speech  # noqa: F401  sets OMP_WAIT_POLICY=PASSIVE as the app does
from studies.reply_variety import reply_variety
from studies.systems.cascaded import CascadedSettings, reply_prompt, _SENTENCE_END
from studies.systems.components import GREEDY, CTranslate2LLM

GEMMA_HF, GEMMA_CT2 = "/tmp/gemma_work/hf", "/tmp/gemma_work/ct2"
# The GGUF (base google/gemma-3-270m) has no chat template: Gemma's turn format, the system prompt
# opening the first user turn as Gemma's own template does (so it is a prefix: CTranslate2's static prompt).
GEMMA_TEMPLATE = (
    "{{ bos_token }}{%- set ns = namespace(open=false) -%}"
    "{%- for m in messages -%}"
    "{%- if m['role'] == 'system' -%}{{ '<start_of_turn>user\n' + m['content'] + '\n\n' }}{%- set ns.open = true -%}"
    "{%- elif m['role'] == 'user' -%}{%- if not ns.open -%}{{ '<start_of_turn>user\n' }}{%- endif -%}"
    "{{ m['content'] + '<end_of_turn>\n' }}{%- set ns.open = false -%}"
    "{%- else -%}{{ '<start_of_turn>model\n' + m['content'] + '<end_of_turn>\n' }}{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<start_of_turn>model\n' }}{%- endif -%}"
)

FACTS = [
    ("What is the capital of France?", r"paris"),
    ("How many days are in a week?", r"seven|7"),
    ("What color is the sky on a clear day?", r"blue"),
    ("How many legs does a spider have?", r"eight|8"),
    ("What is the largest planet in our solar system?", r"jupiter"),
    ("What do we call frozen water?", r"ice"),
    ("Which animal is called the king of the jungle?", r"lions?"),
    ("How many hours are in a day?", r"24|twenty[- ]four"),
    ("What is the opposite of hot?", r"cold"),
    ("Who wrote Romeo and Juliet?", r"shakespeare"),
]
QUESTIONS = {"hike": ("a hike in the mountains", "/work/main/benchmarks/data/reply_questions_hike.txt"),
             "new_york": ("a first trip to New York", "/work/main/benchmarks/data/reply_questions_new_york.txt")}


class GemmaCT2(CTranslate2LLM):
    """CTranslate2LLM's prompting and streaming, on the converted Gemma with its turn format."""

    def __init__(self, threads=2):
        import threading, ctranslate2, torch
        from transformers import AutoTokenizer
        torch.set_num_threads(1)
        self.tokenizer = AutoTokenizer.from_pretrained(GEMMA_HF)
        self.tokenizer.chat_template = GEMMA_TEMPLATE
        self.generator = ctranslate2.Generator(GEMMA_CT2, device="cpu", compute_type="float32", intra_threads=threads)
        self.set_random_seed = ctranslate2.set_random_seed
        self.end_tokens = ["<eos>", "<end_of_turn>"]
        self._lock = threading.Lock()


def load(name):
    return GemmaCT2() if name == "gemma" else CTranslate2LLM(None, threads=2)


def reply(llm, messages, decoding, settings):
    """(text, first-token s, pieces, s from first to last piece) with the cascade's 2-sentence cap."""
    t0 = time.perf_counter()
    text, chunk, sentences, first, last, pieces = "", "", 0, None, None, 0
    for piece in llm.stream(messages, settings.max_new_tokens, decoding=decoding):
        now = time.perf_counter()
        first = first if first is not None else now - t0
        last, pieces = now, pieces + 1
        chunk += piece
        if _SENTENCE_END.search(chunk):
            text, chunk, sentences = text + chunk, "", sentences + 1
            if sentences >= settings.max_sentences:
                break
    text += chunk
    return text.strip(), first, pieces, (last - t0 - first) if last else 0.0


def conversation(llm, topic, questions, greedy, settings):
    system = [{"role": "system", "content": settings.system_prompt.format(topic=topic)}]
    llm.warm(system)
    history, rows = [], []
    for q in questions:
        messages = system + reply_prompt(history, q, settings.history_turns, settings.earlier_user_turns)
        decoding = GREEDY if greedy else settings.decoding(len(history))
        text, first, pieces, rest = reply(llm, messages, decoding, settings)
        history.append((q, text))
        rows.append({"q": q, "reply": text, "first_s": first, "pieces": pieces, "rest_s": rest})
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default="smollm2,gemma")
    parser.add_argument("--out", default="/tmp/coord/gemma_scripts/results.json")
    args = parser.parse_args()
    settings = CascadedSettings()
    results = {}
    for name in args.models.split(","):
        t = time.perf_counter()
        llm = load(name)
        res = {"load_s": time.perf_counter() - t, "loadavg_start": os.getloadavg()}
        for mode in ("cascade", "greedy"):
            for key, (topic, path) in QUESTIONS.items():
                qs = [l.strip() for l in Path(path).read_text().splitlines() if l.strip()]
                rows = conversation(llm, topic, qs, mode == "greedy", settings)
                v = reply_variety([r["reply"] for r in rows])
                res[f"{mode}/{key}"] = {"rows": rows, "distinct": v.distinct, "back_to_back": v.back_to_back}
                print(f"== {name} {mode} {key}: distinct {v.distinct}/12, back-to-back {v.back_to_back}", flush=True)
                for r in rows:
                    print(f"  [{r['first_s']*1000:.0f} ms] Q: {r['q']}\n      A: {r['reply']}", flush=True)
            system = [{"role": "system", "content": settings.system_prompt.format(topic="general knowledge")}]
            llm.warm(system)
            facts = []
            for i, (q, answer) in enumerate(FACTS):
                decoding = GREEDY if mode == "greedy" else settings.decoding(i)
                text, first, pieces, rest = reply(llm, system + [{"role": "user", "content": q}], decoding, settings)
                ok = bool(re.search(rf"\b({answer})\b", text, re.I))
                facts.append({"q": q, "reply": text, "correct": ok, "first_s": first, "pieces": pieces, "rest_s": rest})
                print(f"  fact {'OK ' if ok else 'NO '} Q: {q}  A: {text}", flush=True)
            res[f"{mode}/facts"] = {"rows": facts, "correct": sum(f["correct"] for f in facts)}
            print(f"== {name} {mode} facts: {sum(f['correct'] for f in facts)}/10", flush=True)
        rows = [r for k, v in res.items() if k.startswith("cascade/") for r in v["rows"]]
        firsts = sorted(r["first_s"] * 1000 for r in rows)
        per_token = [r["rest_s"] * 1000 / (r["pieces"] - 1) for r in rows if r["pieces"] > 1]
        res["timing"] = {"first_p50_ms": statistics.median(firsts),
                         "first_p90_ms": statistics.quantiles(firsts, n=10)[-1],
                         "ms_per_token_p50": statistics.median(per_token), "n": len(firsts),
                         "loadavg_end": os.getloadavg()}
        print(f"== {name} timing (cascade decoding, {len(firsts)} replies): {res['timing']} load start {res['loadavg_start']}", flush=True)
        results[name] = res
        del llm
    Path(args.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
