"""The cascade's LLM runtimes on the packaged SmolLM2-135M-Instruct: CTranslate2 (the default)
writes the same greedy reply as transformers, decodes only the tokens asked for, and stops when
told; and the reply is cut into speakable chunks as the cascade does it."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from studies.call_manager import models_key
from systems import SystemError_
from systems.cascaded import CascadedSettings
from systems.reply_worker import breaks_before, ends_chunk, trim_leading_silence
from systems.language_models import CTranslate2LLM, LocalLLM
from systems.models import ctranslate2_llm_dir, packaged_llm_dir
from tests.command_line import run_cli_process

MESSAGES = [
    {"role": "system", "content": "You are a friendly voice assistant talking with a person about preparing for "
                                  "a hike. Answer in one or two short spoken sentences. No lists, no emojis."},
    {"role": "user", "content": "Is it better to go early in the morning?"},
]


@pytest.fixture(scope="module")
def ct2_llm(cascade_components):
    llm = cascade_components[2]
    assert isinstance(llm, CTranslate2LLM)  # the default runtime
    return llm


def test_ctranslate2_writes_what_transformers_writes(ct2_llm):
    reference = LocalLLM(None, threads=1)
    expected = "".join(reference.stream(MESSAGES, 24))
    ct2_llm.warm(MESSAGES[:1])  # the cached system prompt must not change the reply
    got = "".join(ct2_llm.stream(MESSAGES, 24))
    assert expected.strip() and got == expected


def test_ctranslate2_decodes_on_demand_and_stops(ct2_llm):
    pieces = []
    for piece in ct2_llm.stream(MESSAGES, 40, stop=lambda: len(pieces) >= 3):
        pieces.append(piece)
    assert len(pieces) == 3
    # Abandoning the stream mid-way leaves no decoding thread behind, and the model is free.
    stream = ct2_llm.stream(MESSAGES, 40)
    next(stream)
    stream.close()
    assert not [t for t in threading.enumerate() if t.name == "llm-decode"]
    assert "".join(ct2_llm.stream(MESSAGES, 5)).strip()


def test_unknown_runtime_is_refused():
    with pytest.raises(SystemError_, match="llm_runtime must be one of ctranslate2, transformers, llama.cpp"):
        CascadedSettings.from_config({"llm_runtime": "vllm"})


def test_unknown_compute_type_is_refused():
    with pytest.raises(SystemError_, match="llm_compute_type must be one of float32, int8, got 'int16'"):
        CascadedSettings.from_config({"llm_compute_type": "int16"})


def test_int8_weights_are_a_model_of_their_own(ct2_llm):
    """`llm_compute_type: int8` loads the weights quantized (calls with it do not share the float32
    model) and still writes a reply; the default stays float32."""
    assert ct2_llm.generator.compute_type == "float32"
    int8 = CTranslate2LLM(compute_type="int8")
    assert int8.generator.compute_type.startswith("int8")
    assert "".join(int8.stream(MESSAGES, 12)).strip()
    assert models_key(CascadedSettings()) != models_key(CascadedSettings.from_config({"llm_compute_type": "int8"}))


def test_reply_chunks():
    # sentences end chunks; the first chunk also ends at a clause
    assert ends_chunk("It really depends.", first=False)
    assert ends_chunk("Yes,", first=True) and not ends_chunk("Yes,", first=False)
    assert not ends_chunk(",", first=True)
    # a long first sentence breaks before a phrase-opening word once it has 3 words, or at 8
    assert breaks_before("The amount of water you need", " can", 3, 8)
    assert not breaks_before("It really", " depends", 3, 8)
    assert not breaks_before("The amount", " of", 3, 8)
    assert breaks_before("one two three four five six seven eight", " nine", 3, 8)
    assert not breaks_before("The amount of water you need", "s", 3, 8)  # mid-word
    assert not breaks_before("The amount of water you need", " can", 0, 8)  # turned off


def test_leading_silence_is_trimmed():
    audio = np.zeros(1600, dtype=np.float32)
    audio[800:] = 0.5
    trimmed = trim_leading_silence(audio)
    assert len(trimmed) == 800 + 80  # 5 ms kept before the first loud sample
    silent = np.zeros(100, dtype=np.float32)
    assert trim_leading_silence(silent) is silent


def test_prepare_models_fills_the_cache_the_runtimes_load_from():
    # make test runs it before the tests; here on the suite's cache (converted by then: a second
    # run finds both copies and converts nothing)
    done = run_cli_process("studies", "prepare-models")
    assert done.returncode == 0, done.stderr
    transformers_dir = packaged_llm_dir()
    expected = [transformers_dir, ctranslate2_llm_dir(str(transformers_dir))]
    assert done.stdout.splitlines() == [f"ready: {folder}" for folder in expected]
    assert all((folder / "converted.json").is_file() for folder in expected)
