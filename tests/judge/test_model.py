"""The judge model family: causal outputs, audio-conditioned variants, checkpoints."""

import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest
import torch

from turntaking.activity import Conversation
from judge.features import SAMPLE_RATE, va_features
from judge.labels import LABELS, n_chunks
from judge.model import (
    CheckpointError,
    JudgeConfig,
    JudgeModel,
    load_checkpoint,
    packaged_checkpoint_dir,
    predict,
    predict_many,
    save_checkpoint,
)
from tests.rendered_speech import Utterance, render_speech
from tests.scripted import DURATION, scripted_conversation

REPO = Path(__file__).resolve().parents[2]
TINY_WHISPER = {
    "d_model": 16,
    "encoder_layers": 2,
    "encoder_attention_heads": 2,
    "encoder_ffn_dim": 32,
    "decoder_layers": 1,
    "decoder_attention_heads": 2,
    "decoder_ffn_dim": 32,
    "num_mel_bins": 16,
    "max_source_positions": 50,  # 1 s blocks: a 3 s clip exercises the block loop
    "vocab_size": 64,
}


def model_of(inputs="va", **kw) -> JudgeModel:
    torch.manual_seed(0)
    return JudgeModel(JudgeConfig(inputs=inputs, whisper_config=TINY_WHISPER if inputs == "whisper" else None, **kw))


def features(conv) -> torch.Tensor:
    return torch.from_numpy(va_features(conv.frames(50)))[None]


def test_va_features_are_causal_and_exact():
    va = np.zeros((2, 10))
    va[0, 2:5] = 1
    f = va_features(va)
    assert f.shape == (10, 6)
    assert f[:, 0].tolist() == va[0].tolist()
    # speaker 0: silent 0.02 s per frame since frame 4; run length 0.02 .. 0.06 s in frames 2..4
    assert f[5, 2] == pytest.approx(np.log1p(0.02)) and f[9, 2] == pytest.approx(np.log1p(0.10))
    assert f[4, 4] == pytest.approx(np.log1p(0.06)) and f[5, 4] == 0.0
    changed = va.copy()
    changed[1, 7:] = 1
    assert np.array_equal(va_features(changed)[:7], f[:7])


def test_outputs_up_to_t_do_not_depend_on_later_input():
    model = model_of().eval()
    conv = scripted_conversation()
    x = features(conv)
    t0 = 401  # frames <= 400 identical
    y = x.clone()
    y[:, t0:] = torch.rand_like(y[:, t0:])
    with torch.no_grad():
        lx, vx = model(x)
        ly, vy = model(y)
    assert torch.equal(vx[:, :t0], vy[:, :t0])
    assert not torch.allclose(vx[:, t0:], vy[:, t0:])
    # label row i reads frames < 2i: rows with 2i <= t0 are unchanged, the next one is not
    k = t0 // 2 + 1
    assert torch.equal(lx[:, :k], ly[:, :k])
    assert not torch.allclose(lx[:, k:], ly[:, k:])


def test_predict_shapes_and_batching():
    model = model_of()
    conv = scripted_conversation()
    short = Conversation(3.3, ([(0.2, 1.0)], [(1.5, 3.0)]))
    pred = predict(model, conv)
    n, m = n_chunks(DURATION), round(DURATION * 50)
    assert pred.label_probs.shape == (n, len(LABELS)) and pred.va_log_probs.shape == (m, 256)
    assert np.allclose(pred.label_probs.sum(1), 1, atol=1e-5)
    assert np.allclose(np.exp(pred.va_log_probs).sum(1), 1, atol=1e-4)
    both = predict_many(model, [conv, short])
    assert np.allclose(both[0].label_probs, pred.label_probs, atol=1e-6)
    assert np.allclose(both[0].va_log_probs, pred.va_log_probs, atol=1e-5)
    alone = predict(model, short)
    assert both[1].label_probs.shape == (n_chunks(3.3), 5)
    assert np.allclose(both[1].va_log_probs, alone.va_log_probs, atol=1e-5)
    classes = np.array([3] * m)
    classes[-100:] = -1
    nll = pred.frame_nll(classes)
    assert np.isnan(nll[-100:]).all() and np.allclose(nll[:-100], -pred.va_log_probs[:-100, 3])
    with pytest.raises(ValueError, match="empty"):
        predict(model, Conversation(0.0, ([], [])))


@pytest.fixture(scope="module")
def speech():
    """3 s of real speech: A speaks at 0.2 s, B answers at 1.6 s (espeak-ng, 16 kHz)."""
    return render_speech([Utterance(0, 0.2, "hello how are you"), Utterance(1, 1.6, "fine thanks", voice="en-us+f3")],
                         duration=3.0)


@pytest.mark.parametrize("inputs", ["logmel", "whisper"])
def test_audio_variants_run_and_are_causal(inputs, speech):
    model = model_of(inputs).eval()
    assert model.needs_audio
    placed = speech.utterances
    conv = Conversation(3.0, ([(placed[0].start, placed[0].end)], [(placed[1].start, placed[1].end)]))
    audio = speech.samples
    pred = predict(model, conv, audio)
    assert pred.label_probs.shape == (75, 5) and pred.va_log_probs.shape == (150, 256)
    assert np.isfinite(pred.va_log_probs).all()

    # Replace the audio from frame 100 (2.0 s) on by other real speech: frames < 100 must not move.
    t0 = 100
    other = render_speech([Utterance(0, 0.0, "something else entirely"), Utterance(1, 0.1, "no")], duration=3.0)
    changed = audio.copy()
    changed[:, t0 * 320 :] = other.samples[:, : audio.shape[1] - t0 * 320]
    x = features(conv)
    with torch.no_grad():
        lx, vx = model(x, torch.from_numpy(audio)[None])
        ly, vy = model(x, torch.from_numpy(changed)[None])
    assert torch.allclose(vx[:, :t0], vy[:, :t0], atol=1e-6)
    assert not torch.allclose(vx[:, t0:], vy[:, t0:], atol=1e-6)
    assert torch.allclose(lx[:, : t0 // 2 + 1], ly[:, : t0 // 2 + 1], atol=1e-6)

    with pytest.raises(ValueError, match="audio"):
        predict(model, conv)
    with pytest.raises(ValueError, match=r"\(2, samples\)"):
        predict(model, conv, audio[0])


def test_whisper_variant_needs_a_config_and_unknown_inputs_are_refused():
    with pytest.raises(ValueError, match="whisper_config"):
        JudgeModel(JudgeConfig(inputs="whisper"))
    with pytest.raises(ValueError, match="unknown judge inputs"):
        JudgeModel(JudgeConfig(inputs="video"))


def test_checkpoint_round_trip_and_hash_check(tmp_path, speech):
    model = model_of("whisper")
    path = tmp_path / "w.pt"
    sha = save_checkpoint(model, path, {"note": "test"})
    (tmp_path / "w.manifest.json").write_text(json.dumps({"checkpoint_sha256": sha}))
    loaded = load_checkpoint(path)
    assert loaded.config == model.config and loaded.meta == {"note": "test"}
    for a, b in zip(model.state_dict().values(), loaded.state_dict().values()):
        assert torch.equal(a, b)
    path.write_bytes(path.read_bytes() + b"x")
    with pytest.raises(CheckpointError, match="sha256"):
        load_checkpoint(path)
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="not a judge checkpoint"):
        load_checkpoint(tmp_path / "junk.pt")
    with pytest.raises(CheckpointError, match="not found"):
        load_checkpoint(tmp_path / "missing.pt")


def test_committed_checkpoint_loads_offline():
    """The packaged default loads with HF_HUB_OFFLINE=1 in a fresh interpreter and scores a
    conversation; its manifest hash matches."""
    ckpt = packaged_checkpoint_dir() / "judge_va.pt"
    manifest = json.loads((packaged_checkpoint_dir() / "judge_va.manifest.json").read_text())
    assert manifest["data"]["corpus"] == "switchboard"
    assert (packaged_checkpoint_dir() / "MODEL_CARD.md").is_file()
    code = (
        "from judge.model import load_checkpoint, predict\n"
        "from tests.scripted import scripted_conversation\n"
        "m = load_checkpoint()\n"
        "p = predict(m, scripted_conversation())\n"
        "print(m.config.inputs, p.label_probs.shape, p.va_log_probs.shape)\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "va (500, 5) (1000, 256)"
    assert ckpt.stat().st_size < 5_000_000
    assert asdict(load_checkpoint().config)["inputs"] == "va"
