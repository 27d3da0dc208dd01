"""Causal turn-taking judge: one recurrent pass over a whole conversation at 50 Hz frames.

Two heads read the GRU state:
- label head: the Talking Turns label of 40 ms chunk i (two frames) from the state after frames
  < 2i, i.e. given only chunks < i (row 0 reads the initial, context-free state);
- future-activity head: the 256-way VAP/TurnNat class at frame t from the state after frames <= t.

Inputs (all causal, see judge/features.py): the voice-activity features of both speakers, and for
the conditioned variants also per-channel features aligned to the same frames:
- "words": each speaker's most recent completed word (an embedding over a fixed vocabulary stored
  in the checkpoint's config) and the time since it ended (judge/words.py);
- "logmel": causal log-mel frames (window ends at the frame end);
- "whisper": a Whisper encoder (transformers WhisperEncoder, frozen by default) run with a causal
  self-attention mask over causal log-mel input delayed by one mel frame, so that encoder frame t
  never sees audio after the end of frame t; conversations longer than the encoder's 30 s position
  table are encoded in consecutive blocks (the GRU above carries context across blocks).
"""

from __future__ import annotations

import pickle
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from judge.checkpoint_files import (  # noqa: F401  (re-exported: judge.model's users read them here)
    DEFAULT_CHECKPOINT,
    CheckpointError,
    expected_sha256,
    packaged_checkpoint_dir,
)
from judge.features import (
    FRAME_RATE,
    N_VA_FEATURES,
    SAMPLE_RATE,
    causal_log_mel,
    va_features,
)
from judge.labels import CHUNK_S, LABELS, n_chunks
from judge.targets import N_CLASSES
from judge.words import N_WORD_FEATURES, conversation_word_inputs, word_index
from storage.files import sha256_file
from turntaking.activity import Conversation

SAMPLES_PER_FRAME = SAMPLE_RATE // FRAME_RATE


@dataclass
class JudgeConfig:
    inputs: str = "va"  # "va", "words", "logmel" or "whisper"
    hidden_size: int = 64
    num_layers: int = 1
    head_hidden: int = 128
    audio_dim: int = 32  # per-channel projection of the audio features
    n_mels: int = 40  # "logmel" variant
    whisper_config: dict | None = None  # "whisper" variant: a WhisperConfig as a dict
    freeze_whisper: bool = True
    word_vocabulary: list[str] = field(default_factory=list)  # "words" variant
    word_dim: int = 16  # "words" variant: embedding size of a word
    extra: dict = field(default_factory=dict)


class LogMelFrontend(nn.Module):
    def __init__(self, n_mels: int):
        super().__init__()
        self.n_mels = n_mels
        self.out_dim = n_mels

    def forward(self, audio: torch.Tensor, n_frames: int) -> torch.Tensor:
        """(B, 2, S) waveform -> (B, 2, n_frames, n_mels)."""
        mel = causal_log_mel(fit_length(audio, n_frames * SAMPLES_PER_FRAME), self.n_mels, SAMPLES_PER_FRAME)
        return (torch.clamp(mel, min=-8.0) + 4.0) / 4.0


class WhisperFrontend(nn.Module):
    """Causal Whisper-encoder features at 50 Hz (see the module docstring)."""

    MEL_HOP = SAMPLE_RATE // 100

    def __init__(self, whisper_config: dict, freeze: bool = True):
        super().__init__()
        from transformers import WhisperConfig
        from transformers.models.whisper.modeling_whisper import WhisperEncoder

        self.config = WhisperConfig(**whisper_config)
        self.encoder = WhisperEncoder(self.config)
        self.out_dim = self.config.d_model
        self.freeze = freeze
        if freeze:
            self.encoder.requires_grad_(False)

    def encode_block(self, mel: torch.Tensor) -> torch.Tensor:
        """(B, n_mels, 2T) mel -> (B, T, d_model) with a causal attention mask."""
        enc = self.encoder
        x = nn.functional.gelu(enc.conv1(mel))
        x = nn.functional.gelu(enc.conv2(x)).permute(0, 2, 1)
        t = x.shape[1]
        x = x + enc.embed_positions.weight[:t]
        mask = torch.full((t, t), torch.finfo(x.dtype).min, dtype=x.dtype).triu(1)[None, None]
        for layer in enc.layers:
            x = layer(x, mask)
        return enc.layer_norm(x)

    def forward(self, audio: torch.Tensor, n_frames: int) -> torch.Tensor:
        b = audio.shape[0]
        audio = fit_length(audio, n_frames * SAMPLES_PER_FRAME).reshape(b * 2, -1)
        mel = causal_log_mel(audio, self.config.num_mel_bins, self.MEL_HOP)  # (B*2, 2M, n_mels)
        mel = (torch.clamp(mel, min=-8.0) + 4.0) / 4.0
        # Delay by one mel frame: encoder frame t then reads mel frames <= 2t+1, which end with it.
        mel = torch.cat([torch.full_like(mel[:, :1], -1.0), mel[:, :-1]], dim=1).transpose(1, 2)
        block = 2 * self.config.max_source_positions
        with torch.set_grad_enabled(torch.is_grad_enabled() and not self.freeze):
            parts = [self.encode_block(mel[:, :, s : s + block]) for s in range(0, mel.shape[-1], block)]
        feats = torch.cat(parts, dim=1)[:, :n_frames]
        return feats.reshape(b, 2, n_frames, -1)


def fit_length(audio: torch.Tensor, n_samples: int) -> torch.Tensor:
    """Trim or zero-pad the last axis to n_samples."""
    if audio.shape[-1] >= n_samples:
        return audio[..., :n_samples]
    return nn.functional.pad(audio, (0, n_samples - audio.shape[-1]))


class JudgeModel(nn.Module):
    def __init__(self, config: JudgeConfig = JudgeConfig()):
        super().__init__()
        self.config = config
        in_dim = N_VA_FEATURES
        self.audio = None
        self.word_embedding = None
        if config.inputs == "words":
            if not config.word_vocabulary:
                raise ValueError("the words variant needs word_vocabulary (the training vocabulary)")
            # ids 0 = no word yet, 1 = out of vocabulary (judge/words.py)
            self.word_embedding = nn.Embedding(len(config.word_vocabulary) + 2, config.word_dim)
            self.word_index = word_index(config.word_vocabulary)
            in_dim += N_WORD_FEATURES + 2 * config.word_dim
        elif config.inputs == "logmel":
            self.audio = LogMelFrontend(config.n_mels)
        elif config.inputs == "whisper":
            if not config.whisper_config:
                raise ValueError("the whisper variant needs whisper_config (a WhisperConfig as a dict)")
            self.audio = WhisperFrontend(config.whisper_config, config.freeze_whisper)
        elif config.inputs != "va":
            raise ValueError(f"unknown judge inputs {config.inputs!r}: use 'va', 'words', 'logmel' or 'whisper'")
        if self.audio is not None:
            self.audio_proj = nn.Linear(self.audio.out_dim, config.audio_dim)
            in_dim += 2 * config.audio_dim
        self.input_proj = nn.Sequential(nn.Linear(in_dim, config.hidden_size), nn.ReLU())
        self.gru = nn.GRU(config.hidden_size, config.hidden_size, config.num_layers, batch_first=True)
        self.label_head = nn.Linear(config.hidden_size, len(LABELS))
        self.va_head = nn.Sequential(
            nn.Linear(config.hidden_size, config.head_hidden), nn.ReLU(), nn.Linear(config.head_hidden, N_CLASSES)
        )

    @property
    def needs_audio(self) -> bool:
        return self.audio is not None

    @property
    def needs_words(self) -> bool:
        return self.word_embedding is not None

    def encode(self, va_feats: torch.Tensor, audio: torch.Tensor | None = None,
               word_ids: torch.Tensor | None = None) -> torch.Tensor:
        """(B, M, F) features [+ (B, 2, S) audio | (B, M, 2) word ids] -> (B, M, H) states after each frame.
        F = 6 voice-activity features, + 2 word-timing features for the words variant."""
        x = va_feats
        if self.word_embedding is not None:
            if word_ids is None:
                raise ValueError("the 'words' judge needs word ids")
            e = self.word_embedding(word_ids)  # (B, M, 2, D)
            x = torch.cat([x, e[:, :, 0], e[:, :, 1]], dim=-1)
        if self.audio is not None:
            if audio is None:
                raise ValueError(f"the {self.config.inputs!r} judge needs two-channel audio")
            a = self.audio_proj(self.audio(audio, va_feats.shape[1]))  # (B, 2, M, D)
            x = torch.cat([x, a[:, 0], a[:, 1]], dim=-1)
        h, _ = self.gru(self.input_proj(x))
        return h

    def forward(self, va_feats: torch.Tensor, audio: torch.Tensor | None = None,
                word_ids: torch.Tensor | None = None):
        """Label logits (B, M // 2 + 1, 5) for chunks 0.. and future-activity logits (B, M, 256)."""
        h = self.encode(va_feats, audio, word_ids)
        before = torch.cat([torch.zeros_like(h[:, :1]), h], dim=1)  # before[:, t] = state after frames < t
        return self.label_head(before[:, 0::2]), self.va_head(h)


@dataclass
class Predictions:
    label_probs: np.ndarray  # (N_chunks, 5) at 25 Hz, row i = p(label of chunk i | chunks < i)
    va_log_probs: np.ndarray  # (M, 256) at 50 Hz, row t = log p(future class at t | frames <= t)
    chunk_s: float = CHUNK_S
    frame_rate: int = FRAME_RATE

    def frame_nll(self, classes: np.ndarray) -> np.ndarray:
        """(M,) NLL of the observed future classes; NaN where the class is -1 (horizon past the end)."""
        classes = np.asarray(classes)
        out = np.full(len(classes), np.nan)
        ok = classes >= 0
        out[ok] = -self.va_log_probs[np.flatnonzero(ok), classes[ok]]
        return out


def audio_tensor(audio, model: JudgeModel) -> torch.Tensor:
    if audio is None:
        raise ValueError(f"the {model.config.inputs!r} judge needs the conversation's two-channel audio")
    audio_t = torch.as_tensor(np.asarray(audio), dtype=torch.float32)
    if audio_t.ndim != 2 or audio_t.shape[0] != 2:
        raise ValueError(f"audio must be (2, samples) at {SAMPLE_RATE} Hz, got shape {tuple(audio_t.shape)}")
    return audio_t


def predict_many(model: JudgeModel, convs: list[Conversation], audios=None, batch_size: int = 16):
    """`predict` for several conversations, batched (end padding cannot reach earlier outputs)."""
    out: list[Predictions | None] = [None] * len(convs)
    feats, ids = [], []
    for conv in convs:
        va = conv.frames(FRAME_RATE)
        if va.shape[1] == 0:
            raise ValueError(f"{conv.source or 'conversation'}: empty conversation (duration {conv.duration} s)")
        f = va_features(va)
        if model.needs_words:
            word_ids, word_feats = conversation_word_inputs(conv, va.shape[1], model.word_index)
            f = np.concatenate([f, word_feats], axis=1)
            ids.append(word_ids)
        feats.append(f)
    order = sorted(range(len(convs)), key=lambda i: len(feats[i]))
    model.eval()
    for b in range(0, len(order), batch_size):
        idx = order[b : b + batch_size]
        m = max(len(feats[i]) for i in idx)
        x = torch.zeros(len(idx), m, feats[idx[0]].shape[1])
        word_t = torch.zeros(len(idx), m, 2, dtype=torch.long) if model.needs_words else None
        for j, i in enumerate(idx):
            x[j, : len(feats[i])] = torch.from_numpy(feats[i])
            if word_t is not None:
                word_t[j, : len(feats[i])] = torch.from_numpy(ids[i])
        audio_t = None
        if model.needs_audio:
            if audios is None:
                audio_tensor(None, model)  # raises: this judge needs audio
            parts = [fit_length(audio_tensor(audios[i], model), m * SAMPLES_PER_FRAME) for i in idx]
            audio_t = torch.stack(parts)
        with torch.no_grad():
            label_logits, va_logits = model(x, audio_t, word_t)
        for j, i in enumerate(idx):
            n = n_chunks(convs[i].duration)
            probs = torch.softmax(label_logits[j, :n], dim=-1).numpy()
            if len(probs) < n:  # rounding: no frame boundary before the very last chunk
                probs = np.concatenate([probs, probs[-1:].repeat(n - len(probs), 0)])
            log_probs = torch.log_softmax(va_logits[j, : len(feats[i])], dim=-1).numpy()
            out[i] = Predictions(probs, log_probs)
    return out


def predict(model: JudgeModel, conv: Conversation, audio=None) -> Predictions:
    """One causal pass over the conversation. `audio`: (2, samples) at 16 kHz for audio variants."""
    return predict_many(model, [conv], None if audio is None else [audio], batch_size=1)[0]


def save_checkpoint(model: JudgeModel, path, meta: dict | None = None) -> str:
    """Write config + weights (+ meta) and return the file's sha256."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"config": asdict(model.config), "state_dict": model.state_dict(), "meta": meta or {}}, path)
    return sha256_file(path)


def load_checkpoint(path=None) -> JudgeModel:
    """Load a judge; None = the packaged default. The sha256 is checked against the manifest."""
    path = packaged_checkpoint_dir() / DEFAULT_CHECKPOINT if path is None else Path(path)
    if not path.is_file():
        raise CheckpointError(f"judge checkpoint not found: {path}")
    want = expected_sha256(path)
    if want is not None and sha256_file(path) != want:
        raise CheckpointError(f"{path}: sha256 differs from its manifest (file changed or corrupt)")
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
        model = JudgeModel(JudgeConfig(**data["config"]))
        model.load_state_dict(data["state_dict"])
    except (RuntimeError, KeyError, TypeError, EOFError, pickle.UnpicklingError) as exc:
        raise CheckpointError(f"{path}: not a judge checkpoint ({exc.__class__.__name__})") from None
    model.meta = data.get("meta", {})
    model.eval()
    return model
