"""Probe (committed once, then removed): does Whisper hear a conversation's turns better with the turns
heard before as its prompt? Each set's turns spoken as bench_reply_quality.py's audio path speaks them.

    PYTHONPATH=. HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/asr_context_probe.py fitting confirming confirming_2 confirming_3
"""
import json, re, sys
from pathlib import Path
from examiner.voices import VOICES, speak
from systems.recognition import WhisperASR
from tqdm import tqdm

def words(t): return re.findall(r"[a-z0-9']+", t.lower().replace("-", " "))
def edits(a, b):
    d = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, d[0] = d[0], i
        for j, y in enumerate(b, 1):
            prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (x != y))
    return d[len(b)]
asr = WhisperASR(None, threads=1)
SETS = sys.argv[1:]
modes = {"none": 0, "prev1": 1, "prev3": 3}
err = {m: 0 for m in modes}; err_mem = {m: 0 for m in modes}; n = n_mem = 0
for name in SETS:
    convs = json.loads(Path(f"benchmarks/data/conversations_{name}.json").read_text())["conversations"]
    for ci, c in enumerate(tqdm(convs, desc=name)):
        voice = VOICES[ci % len(VOICES)]
        heard = {m: [] for m in modes}
        for t in c["turns"]:
            text = t if isinstance(t, str) else t["say"]
            mem = not isinstance(t, str)
            audio = speak(text, voice)
            ref = words(text); n += len(ref); n_mem += len(ref) * mem
            for m, k in modes.items():
                prompt = " ".join(heard[m][-k:]) if k else None
                hyp = asr.transcribe(audio, prompt)
                heard[m].append(hyp)
                e = edits(ref, words(hyp)); err[m] += e; err_mem[m] += e * mem
print({m: round(100 * err[m] / n, 2) for m in modes}, "words", n)
print("memory questions", {m: round(100 * err_mem[m] / n_mem, 2) for m in modes}, "words", n_mem)
