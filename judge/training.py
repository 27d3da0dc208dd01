"""Train a judge on Switchboard: chunk labels + 256-way future voice activity.

Inputs (`inputs`): "va", the voice-activity features only, or "words", the voice-activity
features plus each speaker's most recent completed word and the time since it ended
(judge/words.py; the vocabulary is the `vocabulary_size` most frequent words of the training
conversations and is stored in the checkpoint).

Inputs and targets of every conversation are computed once and cached as numpy arrays (a cache
file per conversation list and code version). Training reads fixed-length windows at a random
offset every epoch; each window starts from a zero GRU state. Loss = class-weighted label cross
entropy + future-activity NLL weighted alpha (`tbu_weight`) inside TBUs and 1 elsewhere
(TurnNat eq. 5-6). The epoch with the lowest validation loss is kept.
"""

from __future__ import annotations

import hashlib
import json
import math
import platform
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from judge.features import FRAME_RATE, va_features
from judge.labels import LABELS, chunk_states
from judge.model import JudgeConfig, JudgeModel, save_checkpoint
from judge.targets import future_activity_classes, tbu_frame_mask, turn_boundary_units
from judge.words import build_vocabulary, conversation_word_inputs, word_index
from turntaking import switchboard
from turntaking.activity import Conversation
from turntaking.events import EventParams
from turntaking.git_commit import git_commit

CORPORA = ("switchboard",)
CODE_FILES = ("labels.py", "targets.py", "features.py", "words.py", "model.py", "training.py")
INPUTS = ("va", "words")


class TrainingError(ValueError):
    """Bad training input (corpus, options)."""


@dataclass
class TrainOptions:
    epochs: int = 6
    window_s: float = 20.0
    batch_size: int = 64
    windows_per_epoch: int = 0  # 0 = every window; else a random sample of this many
    learning_rate: float = 2e-3
    weight_decay: float = 1e-4
    tbu_weight: float = 1.0  # alpha of TurnNat eq. 6
    # Join word-level activity closer than this before finding TBUs (why it is not
    # EventParams.ipu_silence_s: see "Joining speech regions" in turntaking/events.py).
    tbu_merge_gap_s: float = 0.18
    label_weighting: str = "balanced"  # "balanced" (inverse frequency), "sqrt" or "none"
    label_loss_weight: float = 1.0
    hidden_size: int = 64
    num_layers: int = 1
    threads: int = 1
    seed: int = 0
    max_conversations: int = 0  # 0 = all (small values for smoke runs)
    inputs: str = "va"  # "va" or "words" (voice activity + most recent word per speaker)
    vocabulary_size: int = 1000  # "words": the most frequent training words, the rest share one id
    word_dim: int = 16  # "words": embedding size
    events: EventParams = field(default_factory=EventParams)  # how the chunk labels' events are found


@dataclass
class CorpusArrays:
    """Concatenated per-conversation arrays; conversation c spans frames[c] / chunks[c]."""

    ids: list[str]
    feats: np.ndarray  # (sum M, F) float16: 6 voice-activity features (+ 2 word timings)
    classes: np.ndarray  # (sum M,) int16, -1 = no target
    tbu: np.ndarray  # (sum M,) bool
    labels: np.ndarray  # (sum N,) int8
    frame_offsets: np.ndarray  # (C + 1,)
    chunk_offsets: np.ndarray  # (C + 1,)
    word_ids: np.ndarray | None = None  # (sum M, 2) int16 for the "words" inputs


def conversation_arrays(conv: Conversation, tbu_merge_gap_s: float, index: dict[str, int] | None = None,
                        events: EventParams = EventParams()):
    """(features, future classes, TBU mask, chunk labels, word ids or None) of one conversation."""
    va = conv.frames(FRAME_RATE)
    units = turn_boundary_units(conv, merge_gap_s=tbu_merge_gap_s)
    feats = va_features(va)
    ids = None
    if index is not None:
        ids, word_feats = conversation_word_inputs(conv, va.shape[1], index)
        feats = np.concatenate([feats, word_feats], axis=1)
        ids = ids.astype(np.int16)
    return (
        feats.astype(np.float16),
        future_activity_classes(va).astype(np.int16),
        tbu_frame_mask(units, va.shape[1]),
        chunk_states(conv, event_params=events).labels.astype(np.int8),
        ids,
    )


def code_version() -> dict:
    here = Path(__file__).parent
    h = hashlib.sha256()
    for name in CODE_FILES:
        h.update((here / name).read_bytes())
    return {"git_commit": git_commit(here), "judge_code_sha256": h.hexdigest()}


def ids_hash(ids: list[str]) -> str:
    return hashlib.sha256("\n".join(ids).encode()).hexdigest()


def load_arrays(corpus_dir, ids: list[str], cache_dir, tbu_merge_gap_s: float, desc: str,
                vocabulary: list[str] | None = None, events: EventParams = EventParams()) -> CorpusArrays:
    """Arrays of the conversations `ids` (word ids too when a vocabulary is given), cached."""
    vocab_key = ids_hash(vocabulary) if vocabulary is not None else "va"
    key = hashlib.sha256(
        f"{ids_hash(ids)}|{code_version()['judge_code_sha256']}|{tbu_merge_gap_s}|{vocab_key}|"
        f"{json.dumps(events.as_dict(), sort_keys=True)}".encode()
    ).hexdigest()[:16]
    cache = Path(cache_dir) / f"{desc}-{key}.npz"
    if cache.is_file():
        d = np.load(cache)
        return CorpusArrays(ids, d["feats"], d["classes"], d["tbu"], d["labels"], d["frame_offsets"],
                            d["chunk_offsets"], d["word_ids"] if "word_ids" in d else None)
    index = word_index(vocabulary) if vocabulary is not None else None
    parts = [
        conversation_arrays(switchboard.load_conversation(corpus_dir, i), tbu_merge_gap_s, index, events)
        for i in tqdm(ids, desc=f"preparing {desc}", file=sys.stderr, mininterval=5)
    ]
    frame_offsets = np.concatenate([[0], np.cumsum([len(p[1]) for p in parts])])
    chunk_offsets = np.concatenate([[0], np.cumsum([len(p[3]) for p in parts])])
    arrays = CorpusArrays(
        ids,
        np.concatenate([p[0] for p in parts]),
        np.concatenate([p[1] for p in parts]),
        np.concatenate([p[2] for p in parts]),
        np.concatenate([p[3] for p in parts]),
        frame_offsets,
        chunk_offsets,
        np.concatenate([p[4] for p in parts]) if index is not None else None,
    )
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(".tmp.npz")
    extra = {"word_ids": arrays.word_ids} if arrays.word_ids is not None else {}
    np.savez(tmp, feats=arrays.feats, classes=arrays.classes, tbu=arrays.tbu, labels=arrays.labels,
             frame_offsets=frame_offsets, chunk_offsets=chunk_offsets, **extra)
    tmp.rename(cache)
    return arrays


def windows(data: CorpusArrays, window_frames: int, rng: np.random.Generator | None):
    """(conversation, start frame) of every whole window; random even offset when rng is given."""
    out = []
    for c in range(len(data.ids)):
        m = data.frame_offsets[c + 1] - data.frame_offsets[c]
        offset = 2 * int(rng.integers(0, window_frames // 2)) if rng is not None else 0
        if m < window_frames:  # a short conversation: one window from its start
            out.append((c, 0))
            continue
        out.extend((c, s) for s in range(offset, m - window_frames + 1, window_frames))
    return out


def make_batch(data: CorpusArrays, items, window_frames: int, tbu_weight: float):
    """(features, classes, loss weights, labels, word ids or None) of a batch of windows;
    padding has class -1 and label -1."""
    b, w = len(items), window_frames
    feats = np.zeros((b, w, data.feats.shape[1]), np.float32)
    word_ids = np.zeros((b, w, 2), np.int64) if data.word_ids is not None else None
    classes = np.full((b, w), -1, np.int64)
    weights = np.zeros((b, w), np.float32)
    labels = np.full((b, w // 2 + 1), -1, np.int64)
    for j, (c, s) in enumerate(items):
        f0, f1 = data.frame_offsets[c], data.frame_offsets[c + 1]
        n = min(w, f1 - f0 - s)
        feats[j, :n] = data.feats[f0 + s : f0 + s + n]
        if word_ids is not None:
            word_ids[j, :n] = data.word_ids[f0 + s : f0 + s + n]
        classes[j, :n] = data.classes[f0 + s : f0 + s + n]
        weights[j, :n] = np.where(data.tbu[f0 + s : f0 + s + n], tbu_weight, 1.0)
        c0, c1 = data.chunk_offsets[c], data.chunk_offsets[c + 1]
        first = s // 2
        k = min(w // 2 + 1, c1 - c0 - first)
        labels[j, :k] = data.labels[c0 + first : c0 + first + k]
        labels[j, 0] = -1  # the window's first chunk has no context inside the window
    weights[classes < 0] = 0.0
    tensors = tuple(torch.from_numpy(a) for a in (feats, classes, weights, labels))
    return (*tensors, None if word_ids is None else torch.from_numpy(word_ids))


def label_class_weights(labels: np.ndarray, mode: str) -> torch.Tensor:
    counts = np.bincount(labels[labels >= 0], minlength=len(LABELS)).astype(np.float64)
    freq = np.maximum(counts / counts.sum(), 1e-6)
    if mode == "balanced":
        w = 1.0 / freq
    elif mode == "sqrt":
        w = 1.0 / np.sqrt(freq)
    elif mode == "none":
        w = np.ones_like(freq)
    else:
        raise TrainingError(f"unknown label_weighting {mode!r}: use balanced, sqrt or none")
    w = w / (w * freq).sum()  # the average weight of a chunk is 1
    return torch.tensor(w, dtype=torch.float32)


def batch_losses(model, batch, class_weights):
    feats, classes, weights, labels, word_ids = batch
    label_logits, va_logits = model(feats, None, word_ids)
    label_loss = torch.nn.functional.cross_entropy(
        label_logits.reshape(-1, len(LABELS)), labels.reshape(-1), weight=class_weights, ignore_index=-1,
        reduction="sum",
    )
    label_norm = class_weights[labels.clamp(min=0)].mul(labels >= 0).sum()
    nll = torch.nn.functional.cross_entropy(
        va_logits.reshape(-1, va_logits.shape[-1]), classes.clamp(min=0).reshape(-1), reduction="none"
    )
    va_loss = (nll * weights.reshape(-1)).sum()
    return label_loss, label_norm, va_loss, weights.sum()


def run_validation(model, data, window_frames, options, class_weights) -> dict:
    model.eval()
    sums = np.zeros(4)
    items = windows(data, window_frames, None)
    with torch.no_grad():
        for i in range(0, len(items), options.batch_size):
            batch = make_batch(data, items[i : i + options.batch_size], window_frames, options.tbu_weight)
            sums += [float(x) for x in batch_losses(model, batch, class_weights)]
    label_loss, va_loss = float(sums[0] / max(sums[1], 1e-9)), float(sums[2] / max(sums[3], 1e-9))
    return {"label_loss": label_loss, "va_loss": va_loss, "loss": options.label_loss_weight * label_loss + va_loss}


def corpus_ids(corpus_dir, split, split_list=None, limit=0) -> list[str]:
    try:
        ids = switchboard.conversation_ids(corpus_dir, split=split, split_list=split_list)
    except switchboard.CorpusError as exc:
        raise TrainingError(str(exc)) from None
    if not ids:
        raise TrainingError(f"no conversations in the {split} list of {corpus_dir}")
    return ids[:limit] if limit else ids


def train(
    corpus_dir,
    out,
    tbu_weight: float = 1.0,
    corpus: str = "switchboard",
    train_list=None,
    val_list=None,
    cache_dir="/tmp/judge_cache",
    log=print,
    **options,
) -> dict:
    """Train a judge; write `out` (checkpoint), `<stem>.manifest.json` and `<stem>.card.md`."""
    if corpus not in CORPORA:
        raise TrainingError(f"unknown corpus {corpus!r}: supported {', '.join(CORPORA)}")
    unknown = set(options) - set(TrainOptions.__dataclass_fields__)
    if unknown:
        raise TrainingError(f"unknown training option(s): {', '.join(sorted(unknown))}")
    opts = TrainOptions(tbu_weight=tbu_weight, **options)
    if opts.tbu_weight <= 0 or opts.epochs < 1 or opts.window_s <= 0:
        raise TrainingError("tbu_weight, epochs and window_s must be positive")
    if opts.inputs not in INPUTS:
        raise TrainingError(f"unknown inputs {opts.inputs!r}: use {' or '.join(INPUTS)} (audio needs an audio corpus)")
    if opts.inputs == "words" and opts.vocabulary_size < 1:
        raise TrainingError("vocabulary_size must be positive")
    corpus_dir, out = Path(corpus_dir), Path(out)
    train_ids = corpus_ids(corpus_dir, "train", train_list, opts.max_conversations)
    val_ids = corpus_ids(corpus_dir, "val", val_list, opts.max_conversations)

    torch.set_num_threads(opts.threads)
    torch.manual_seed(opts.seed)
    rng = np.random.default_rng(opts.seed)
    started = time.time()
    vocabulary = None
    if opts.inputs == "words":  # from the training conversations only
        vocabulary = build_vocabulary(
            (switchboard.load_conversation(corpus_dir, i) for i in train_ids), opts.vocabulary_size)
    train_data = load_arrays(corpus_dir, train_ids, cache_dir, opts.tbu_merge_gap_s, "train", vocabulary, opts.events)
    val_data = load_arrays(corpus_dir, val_ids, cache_dir, opts.tbu_merge_gap_s, "val", vocabulary, opts.events)
    prepare_s = time.time() - started

    window_frames = 2 * int(round(opts.window_s * FRAME_RATE / 2))
    model = JudgeModel(JudgeConfig(inputs=opts.inputs, hidden_size=opts.hidden_size, num_layers=opts.num_layers,
                                   word_vocabulary=vocabulary or [], word_dim=opts.word_dim))
    optimizer = torch.optim.AdamW(model.parameters(), lr=opts.learning_rate, weight_decay=opts.weight_decay)
    class_weights = label_class_weights(train_data.labels, opts.label_weighting)

    n_windows = len(windows(train_data, window_frames, None))
    if opts.windows_per_epoch:
        n_windows = min(n_windows, opts.windows_per_epoch)
    total_steps = opts.epochs * math.ceil(n_windows / opts.batch_size)
    # Cosine decay of the learning rate over the whole run.
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: 0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * min(step / total_steps, 1.0)))
    )
    history, best, best_state = [], None, None
    for epoch in range(1, opts.epochs + 1):
        t0 = time.time()
        items = windows(train_data, window_frames, rng)
        rng.shuffle(items)
        if opts.windows_per_epoch:
            items = items[: opts.windows_per_epoch]
        model.train()
        n_batches = math.ceil(len(items) / opts.batch_size)
        bar = tqdm(range(n_batches), desc=f"epoch {epoch}/{opts.epochs}", file=sys.stderr, mininterval=10)
        running = None
        for i in bar:
            batch = make_batch(train_data, items[i * opts.batch_size : (i + 1) * opts.batch_size], window_frames,
                               opts.tbu_weight)
            label_loss, label_norm, va_loss, va_norm = batch_losses(model, batch, class_weights)
            loss = opts.label_loss_weight * label_loss / label_norm.clamp(min=1e-9) + va_loss / va_norm.clamp(min=1e-9)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            value = loss.item()
            running = value if running is None else 0.98 * running + 0.02 * value
            bar.set_postfix(loss=f"{running:.3f}")
        train_s = time.time() - t0
        val = run_validation(model, val_data, window_frames, opts, class_weights)
        record = {"epoch": epoch, "train_loss": running, "train_s": round(train_s, 1),
                  "train_windows": len(items), **{f"val_{k}": v for k, v in val.items()}}
        history.append(record)
        log(f"epoch {epoch}: train loss {running:.4f}, val loss {val['loss']:.4f} "
            f"(labels {val['label_loss']:.4f}, future activity {val['va_loss']:.4f}), {train_s:.0f} s")
        if best is None or val["loss"] < best["val_loss"]:
            best = record
            best_state = {k: v.clone() for k, v in model.state_dict().items()}
            # The best model so far is written at once: a run stopped early still leaves one.
            write_outputs(out, best_state, model.config, corpus, corpus_dir, train_ids, val_ids, train_data,
                          opts, history, best, prepare_s, started)
    return write_outputs(out, best_state, model.config, corpus, corpus_dir, train_ids, val_ids, train_data,
                         opts, history, best, prepare_s, started)


def write_outputs(out: Path, state: dict, config: JudgeConfig, corpus: str, corpus_dir: Path, train_ids, val_ids,
                  train_data: CorpusArrays, opts: TrainOptions, history: list, best: dict, prepare_s: float,
                  started: float) -> dict:
    """Write the checkpoint of `state`, its manifest and model card; return the manifest."""
    model = JudgeModel(config)
    model.load_state_dict(state)
    manifest = {
        "data": {
            "corpus": corpus,
            "corpus_dir": str(corpus_dir),
            "train_conversations": train_ids,
            "val_conversations": val_ids,
            "train_list_sha256": ids_hash(train_ids),
            "val_list_sha256": ids_hash(val_ids),
            "train_frames": int(len(train_data.classes)),
            "train_chunk_label_counts": dict(zip(LABELS, np.bincount(train_data.labels, minlength=5).tolist())),
        },
        "options": asdict(opts),
        "model_config": asdict(model.config),
        "code_version": code_version(),
        "environment": {"python": platform.python_version(), "torch": torch.__version__},
        "history": history,
        "epochs_done": len(history),
        "best_epoch": best["epoch"],
        "validation": {k: v for k, v in best.items() if k.startswith("val_")},
        "prepare_s": round(prepare_s, 1),
        "total_s": round(time.time() - started, 1),
    }
    meta = {"best_epoch": best["epoch"], "train_list_sha256": manifest["data"]["train_list_sha256"],
            "options": asdict(opts)}
    manifest["checkpoint"] = out.name
    manifest["checkpoint_sha256"] = save_checkpoint(model, out, meta)
    manifest_path = out.with_name(out.stem + ".manifest.json")
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    card_path = out.with_name(out.stem + ".card.md")
    card_path.write_text(model_card(manifest))
    return manifest


def inputs_text(cfg: dict) -> tuple[str, int]:
    """The model card's description of the inputs, and the input width of the first layer."""
    va = ("each speaker's activity, log(1 + seconds since the speaker was last active) and log(1 + seconds\n"
          "the speaker's current active stretch has lasted), both capped at 10 s.")
    if cfg.get("inputs") != "words":
        return ("Voice activity of both speakers only (no audio, no words), as six causal features per frame:\n"
                f"{va}\nBackchannel flags are *not* an input: they need the words of a whole utterance.", 6)
    n_vocab, dim = len(cfg["word_vocabulary"]), cfg["word_dim"]
    text = (f"Voice activity and words of both speakers. Six voice-activity features per frame: {va}\n"
            "Per speaker and frame also the most recent word that has *ended* by the end of the frame\n"
            f"(`judge/words.py`): an embedding ({dim} dims) over the {n_vocab} most frequent (normalised) words\n"
            "of the training conversations, plus one id for other words and one for no word yet, and\n"
            "log(1 + seconds since that word ended), capped at 10 s. A word never reaches frames that end\n"
            "before it does. Scoring needs the words with their times: Switchboard alignments, a\n"
            "voice-activity JSON with \"words\", or faster-whisper on a two-channel recording.")
    return text, 6 + 2 + 2 * dim


def model_card(manifest: dict) -> str:
    opts, val, cfg = manifest["options"], manifest["validation"], manifest["model_config"]
    data = manifest["data"]
    inputs, in_dim = inputs_text(cfg)
    kind = "voice activity and words" if cfg.get("inputs") == "words" else "voice activity"
    history = "\n".join(
        f"| {h['epoch']} | {h['train_loss']:.4f} | {h['val_loss']:.4f} | {h['val_label_loss']:.4f} "
        f"| {h['val_va_loss']:.4f} | {h['train_s']} |"
        for h in manifest["history"]
    )
    return f"""# Turn-taking judge `{manifest['checkpoint']}`

A causal GRU judge over two-speaker {kind} at 50 Hz (code: `judge/model.py`). One pass
over a conversation gives, for every 40 ms chunk, the distribution of its Talking Turns label
(C, BC, T, I, NA) given only the earlier chunks, and for every 20 ms frame the distribution of the
256 future voice-activity classes (2 s horizon, bins 0-200-600-1200-2000 ms per speaker).

## Inputs
{inputs}

## Architecture
Linear({in_dim} -> {cfg['hidden_size']}) + ReLU, GRU ({cfg['num_layers']} layer, {cfg['hidden_size']} units),
label head Linear({cfg['hidden_size']} -> 5) on the state before each chunk, future-activity head
MLP({cfg['hidden_size']} -> {cfg['head_hidden']} -> 256) on the state after each frame.

## Data
Switchboard-1, ISIP Mississippi State MS-98 manually corrected word alignments (publicly released
by ISIP for research use). Voice activity of a side = union of its word intervals. Backchannels
for the BC label: isolated one- or two-word IPUs from the packaged backchannel list
(`turntaking/data/backchannels.txt`) inside the other speaker's turn (`turntaking.events`); the SWDA
dialog-act tags are not used. Training: {len(data['train_conversations'])} conversations of the VAP
train split (list sha256 `{data['train_list_sha256'][:16]}...`); model selection:
{len(data['val_conversations'])} conversations of the val split (sha256 `{data['val_list_sha256'][:16]}...`).
Licence: research use (ISIP alignments); the Switchboard audio is LDC-licensed and not used.

## Training
{opts['epochs']} epochs of {opts['window_s']} s windows (batch {opts['batch_size']},
{opts['windows_per_epoch'] or 'all'} windows per epoch), AdamW lr {opts['learning_rate']},
weight decay {opts['weight_decay']}; label loss: cross entropy with {opts['label_weighting']} class
weights (the paper balances the classes by downsampling); future-activity loss: NLL with weight
alpha = {opts['tbu_weight']} on frames inside TBUs (utterances >= 200 ms after joining gaps
< {opts['tbu_merge_gap_s']} s) and 1 elsewhere. Best epoch by validation loss: {manifest['best_epoch']}.

| epoch | train loss | val loss | val label CE | val future-activity NLL | train s |
|---|---|---|---|---|---|
{history}

## Validation figures
Best epoch: label cross entropy {val['val_label_loss']:.4f} (class-weighted), future-activity NLL
{val['val_va_loss']:.4f} nats/frame (TBU-weighted). Full evaluation (ROC-AUC, F1): run
`python -m judge evaluate --checkpoint {manifest['checkpoint']} --corpus switchboard DIR --split-list DIR/splits/val.txt --json`.

Code version: `{manifest['code_version']}`.
"""
