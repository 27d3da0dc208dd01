"""How related two sets of words are, by the packaged language model's input embeddings.

A question about what the participant said may share no word with the turn that answers it
("Which country did I say we were in?" after "We are on holiday in Scotland"). The rows of
SmolLM2-135M's token embedding matrix place "country" nearer "Scotland" than "cottage" or
"museums": enough to find the turn, at the cost of reading a few rows of a file already on disk
(no forward pass; scoring the turns with the model itself took 0.85-1.7 s a question here).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

from systems.models import llm_location

EMBEDDINGS = "model.embed_tokens.weight"


class WordVectors:
    """A word's vector: the mean of its tokens' (with a leading space) embedding rows, unit length."""

    def __init__(self, model_dir: str | Path):
        from safetensors import safe_open
        from tokenizers import Tokenizer

        model_dir = Path(model_dir)
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        # Rows are read on demand (the file is memory-mapped): 113 MB of float32 never loaded whole.
        self._rows = safe_open(str(model_dir / "model.safetensors"), framework="numpy").get_slice(EMBEDDINGS)

    @lru_cache(maxsize=4096)
    def vector(self, word: str) -> np.ndarray:
        ids = self.tokenizer.encode(" " + word, add_special_tokens=False).ids
        v = np.mean([self._rows[i:i + 1][0] for i in ids], axis=0)
        return v / (np.linalg.norm(v) or 1.0)

    def relatedness(self, words: list[str], others: list[str]) -> float:
        """The highest cosine between a word of `words` and one of `others` (-1 if either is empty)."""
        if not words or not others:
            return -1.0
        a = np.stack([self.vector(w) for w in words])
        b = np.stack([self.vector(w) for w in others])
        return float((a @ b.T).max())


@lru_cache(maxsize=2)
def packaged_word_vectors(data_root: str | None = None) -> WordVectors:
    """The packaged SmolLM2's word vectors, loaded once per process."""
    return WordVectors(llm_location(None, data_root))
