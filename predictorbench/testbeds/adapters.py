"""The audio FMs the test beds ask: `name` and `answer(audio (channels, n) float32 at 16 kHz,
prompt) -> str`. `OpenAIChatAdapter` talks to any OpenAI-compatible /chat/completions endpoint
that accepts `input_audio` parts (OpenAI audio models, vLLM serving Qwen2-Audio, ...);
`RandomAdapter` is the random baseline."""

from __future__ import annotations

import base64
import io
import random
from dataclasses import dataclass

import numpy as np

from predictorbench.testbeds.items import SAMPLE_RATE, TestbedError


def wav_base64(audio: np.ndarray, sample_rate: int = SAMPLE_RATE) -> str:
    import soundfile

    buf = io.BytesIO()
    soundfile.write(buf, np.asarray(audio, dtype=np.float32).T, sample_rate, format="WAV", subtype="PCM_16")
    return base64.b64encode(buf.getvalue()).decode()


@dataclass
class OpenAIChatAdapter:
    """Any OpenAI-compatible endpoint: POST {base_url}/chat/completions with an input_audio part."""

    base_url: str
    model: str
    api_key: str | None = None
    channels: str = "mix"  # "mix": one mono track (most audio FMs); "stereo": one speaker per channel
    timeout_s: float = 120.0
    max_tokens: int = 256

    @property
    def name(self) -> str:
        return f"openai-compatible:{self.model}"

    def answer(self, audio: np.ndarray, prompt: str) -> str:
        import httpx

        audio = np.atleast_2d(audio)
        if self.channels == "mix":
            audio = audio.mean(axis=0, keepdims=True)
        body = {"model": self.model, "temperature": 0, "max_tokens": self.max_tokens, "messages": [{
            "role": "user", "content": [
                {"type": "text", "text": prompt},
                {"type": "input_audio", "input_audio": {"data": wav_base64(audio), "format": "wav"}},
            ]}]}
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        try:
            r = httpx.post(self.base_url.rstrip("/") + "/chat/completions", json=body, headers=headers,
                           timeout=self.timeout_s)
            r.raise_for_status()
            return r.json()["choices"][0]["message"]["content"] or ""
        except httpx.HTTPError as exc:
            raise TestbedError(f"{self.base_url}: request failed ({exc})") from None
        except (KeyError, IndexError, ValueError):
            raise TestbedError(f"{self.base_url}: not an OpenAI chat completion response") from None


@dataclass
class RandomAdapter:
    """The random baseline: picks (a) or (b) with equal probability."""

    seed: int = 0
    name: str = "random"

    def __post_init__(self):
        self._rng = random.Random(self.seed)

    def answer(self, audio, prompt: str) -> str:
        return self._rng.choice(["(a)", "(b)"])
