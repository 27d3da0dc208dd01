"""Kyutai's own Moshi server (`moshi.server` of the PyPI package `moshi`) on CPU, with a tiny
randomly initialised model built from the package's own classes: no weights download, no GPU.

The model says nothing meaningful (its tokens are random), but the server speaks the real
protocol: the bare `b"\\x00"` handshake, a 0x01 Ogg/Opus frame (and maybe a 0x02 text piece) for
every 80 ms frame of input, one conversation at a time behind its lock. The clients' tests test
that protocol, never the content.

Constraints of the package's classes (found by building it): the LM's `n_q` is twice its `dep_q`
(the server gives Mimi max(dep_q, n_q - dep_q) codebooks), `card` equals the quantizer's bins,
`len(delays) == n_q + 1`, `text_card` is no larger than the tokenizer's vocabulary; Mimi keeps
its ratios (24 kHz, 12.5 Hz frames) with every width shrunk.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DEP_Q = 4  # the LM's audio codebooks per stream (Mimi gets as many)
BINS = 64  # Mimi's codebook size, the LM's `card`
TEXT_CARD = 128  # the tokenizer's vocabulary
READY_S = 120  # a start takes about 5 s on an idle machine

# The server's warm-up calls torch.cuda.synchronize() unconditionally, which raises on a CPU
# build: a no-op stands in for it, then the module runs as `python -m moshi.server` would.
LAUNCHER = """
import runpy, torch
torch.cuda.synchronize = lambda *a, **k: None
torch.set_num_threads(1)
runpy.run_module("moshi.server", run_name="__main__")
"""


@dataclass(frozen=True)
class TinyMoshi:
    """The files `moshi.server` loads: LM config, LM and Mimi weights, tokenizer."""

    config: Path
    moshi_weights: Path
    mimi_weights: Path
    tokenizer: Path

    def flags(self) -> list[str]:
        return ["--config-path", str(self.config), "--moshi-weight", str(self.moshi_weights),
                "--mimi-weight", str(self.mimi_weights), "--tokenizer", str(self.tokenizer)]


def _tokenizer(folder: Path) -> Path:
    """A sentencepiece model of TEXT_CARD pieces trained on pseudo-words (a fixed word list gives
    too few pieces)."""
    import sentencepiece

    rng = np.random.default_rng(0)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    lines = [" ".join("".join(rng.choice(letters, rng.integers(2, 8))) for _ in range(12)) for _ in range(400)]
    corpus = folder / "corpus.txt"
    corpus.write_text("\n".join(lines) + "\n")
    prefix = folder / "tokenizer"
    sentencepiece.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(prefix), vocab_size=TEXT_CARD,
                                             model_type="unigram", minloglevel=2)
    return prefix.with_suffix(".model")


def build_tiny_moshi(folder: Path) -> TinyMoshi:
    """Mimi and the Moshi LM from the package's loaders with every size shrunk, random weights."""
    import torch
    from moshi.models import loaders
    from safetensors.torch import save_file

    torch.manual_seed(0)
    folder.mkdir(parents=True, exist_ok=True)
    seanet = {**loaders._seanet_kwargs, "dimension": 32, "n_filters": 4}
    quantizer = {**loaders._quantizer_kwargs, "dimension": 16, "n_q": 2 * DEP_Q, "bins": BINS,
                 "input_dimension": 32, "output_dimension": 32}
    transformer = {**loaders._transformer_kwargs, "d_model": 32, "num_heads": 2, "num_layers": 1,
                   "dim_feedforward": 64, "input_dimension": 32, "output_dimensions": [32]}
    mimi_config = {**loaders._mimi_config, "seanet": seanet, "quantizer": quantizer, "transformer": transformer}
    mimi = loaders.get_mimi(None, mimi_config, device="cpu", num_codebooks=DEP_Q)
    for name, module in mimi.named_modules():  # codebooks start at zero: give them random entries
        if hasattr(module, "embedding_sum") and hasattr(module, "_initialized"):
            module.embedding_sum.data.normal_()
            module._initialized.data.fill_(1)
    lm_kwargs = {**loaders._lm_kwargs, "dim": 32, "text_card": TEXT_CARD, "n_q": 2 * DEP_Q, "dep_q": DEP_Q,
                 "card": BINS, "num_heads": 2, "num_layers": 2, "hidden_scale": 2, "context": 100,
                 "depformer_dim": 32, "depformer_dim_feedforward": 64, "depformer_num_heads": 2,
                 "depformer_num_layers": 1, "delays": [0] + [0, 1, 1, 1] * 2}
    lm = loaders.get_moshi_lm(None, lm_kwargs=lm_kwargs, device="cpu", dtype=torch.float32)

    def save(model, path: Path) -> Path:
        save_file({key: value.detach().clone().contiguous() for key, value in model.state_dict().items()}, str(path))
        return path

    mimi_config_path = folder / "mimi_config.json"
    mimi_config_path.write_text(json.dumps(mimi_config))
    config = folder / "config.json"
    config.write_text(json.dumps({**lm_kwargs, "mimi_config_name": f"file://{mimi_config_path.resolve()}"}))
    return TinyMoshi(config, save(lm, folder / "moshi.safetensors"), save(mimi, folder / "mimi.safetensors"),
                     _tokenizer(folder))


class MoshiServer:
    """`moshi.server` in its own process on `port`; `url` is its /api/chat address."""

    def __init__(self, model: TinyMoshi, port: int, log_path: Path):
        self.url = f"ws://127.0.0.1:{port}/api/chat"
        self.log_path = log_path
        # NO_TORCH_COMPILE: the package's own switch (moshi.utils.compile) for its lazy torch.compile.
        # The protocol is the same; the compile only costs CPU: 47 CPU s for the two test files with
        # a warm inductor cache and 61 s with a fresh one (a CI machine), 31 s without it.
        env = {"HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1", "NO_TORCH_COMPILE": "1"}
        self._log = open(log_path, "w")
        self.process = subprocess.Popen(
            [sys.executable, "-c", LAUNCHER, *model.flags(), "--device", "cpu", "--static", "none",
             "--host", "127.0.0.1", "--port", str(port)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**os.environ, **env})
        self._ready = threading.Event()
        self._frames = threading.Condition()
        self.frames_handled = 0  # 80 ms input frames the server has answered (its log says each)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self._log.write(line)
            self._log.flush()
            if "Running on" in line:  # aiohttp's line once the port is open
                self._ready.set()
            if "frame handled in" in line:
                with self._frames:
                    self.frames_handled += 1
                    self._frames.notify_all()
        self._ready.set()  # ended: wait_ready says so
        with self._frames:
            self._frames.notify_all()

    def wait_frames(self, count: int, timeout_s: float = 60) -> bool:
        """Until the server has handled `count` frames since it started (False: it did not)."""
        with self._frames:
            return self._frames.wait_for(lambda: self.frames_handled >= count or self.process.poll() is not None,
                                         timeout_s) and self.frames_handled >= count

    def wait_ready(self) -> None:
        if not self._ready.wait(READY_S) or self.process.poll() is not None:
            raise RuntimeError(f"moshi.server did not start: {self.log_path.read_text()[-3000:]}")

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)

    def log(self) -> str:
        return self.log_path.read_text()


@contextmanager
def moshi_servers(model: TinyMoshi, folder: Path, ports: list[int]):
    """A server of `model` on each port, started side by side; all stopped at the end."""
    folder.mkdir(parents=True, exist_ok=True)
    servers = [MoshiServer(model, port, folder / f"server-{port}.log") for port in ports]
    try:
        for server in servers:
            server.wait_ready()
        yield servers
    finally:
        for server in servers:
            server.kill()
