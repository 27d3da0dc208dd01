"""The cascade's parts, each small and swappable: streaming Silero VAD, Whisper ASR, a chat LLM
(local transformers model or an OpenAI-compatible endpoint) that streams text, Piper TTS."""

from __future__ import annotations

import json
from typing import Callable, Iterator

import numpy as np

from analysis.audio import resample
from analysis.models import silero_vad_path
from studies.systems.base import SAMPLE_RATE, SystemError_

VAD_FRAME = 512  # samples per Silero frame at 16 kHz (32 ms)
VAD_CONTEXT = 64


def load_vad_session():
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(str(silero_vad_path()), sess_options=options, providers=["CPUExecutionProvider"])


class StreamingVAD:
    """Silero speech probabilities of a live 16 kHz stream, one per 32 ms frame (~0.3 ms each).

    Uses the packaged sequence ONNX model one frame at a time, carrying its LSTM state; each
    call of the session is independent, so one session serves many calls.
    """

    frame = VAD_FRAME

    def __init__(self, session, threshold: float = 0.5):
        self.session = session
        self.threshold = threshold
        self._buffer = np.zeros(0, dtype=np.float32)
        self._context = np.zeros(VAD_CONTEXT, dtype=np.float32)
        self._h = np.zeros((1, 1, 128), dtype=np.float32)
        self._c = np.zeros((1, 1, 128), dtype=np.float32)

    def push(self, samples: np.ndarray) -> list[float]:
        self._buffer = np.concatenate([self._buffer, np.asarray(samples, dtype=np.float32)])
        probabilities = []
        while len(self._buffer) >= VAD_FRAME:
            frame, self._buffer = self._buffer[:VAD_FRAME], self._buffer[VAD_FRAME:]
            model_input = np.concatenate([self._context, frame])[None, :]
            p, self._h, self._c = self.session.run(
                ["speech_probs", "hn", "cn"], {"input": model_input, "h": self._h, "c": self._c}
            )
            self._context = frame[-VAD_CONTEXT:]
            probabilities.append(float(np.asarray(p).reshape(-1)[0]))
        return probabilities


class WhisperASR:
    """faster-whisper (the packaged tiny.en by default) on one utterance."""

    def __init__(self, model: str | None = None, threads: int = 1):
        from analysis.asr import load_whisper

        self.model = load_whisper(model, cpu_threads=threads)

    def transcribe(self, audio: np.ndarray) -> str:
        segments, _ = self.model.transcribe(
            np.asarray(audio, dtype=np.float32), language="en", beam_size=1, without_timestamps=True,
            condition_on_previous_text=False, vad_filter=False,
        )
        return " ".join(segment.text.strip() for segment in segments).strip()


class ChatLLM:
    """Streams a chat reply as text pieces. `stream(messages, max_new_tokens, stop)`."""

    @staticmethod
    def from_settings(settings) -> "ChatLLM":
        if settings.llm_endpoint:
            return EndpointLLM(settings.llm_endpoint, settings.llm_api_model or "default", settings.llm_api_key)
        return LocalLLM(settings.llm, threads=1, data_root=settings.data_root)

    def stream(self, messages: list[dict], max_new_tokens: int, stop: Callable[[], bool] = lambda: False) -> Iterator[str]:
        raise NotImplementedError


class LocalLLM(ChatLLM):
    """A transformers causal LM, greedy decoding with a KV cache, one token at a time so the
    caller can stop it between tokens (a dropped speculation)."""

    def __init__(self, model: str | None = None, threads: int = 1, data_root=None):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from studies.systems.models import llm_location

        torch.set_num_threads(threads)  # 2 cores shared with ASR, TTS and the call itself
        location = llm_location(model, data_root)
        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(location)
        self.model = AutoModelForCausalLM.from_pretrained(location, dtype=torch.float32).eval()
        self.eos = {self.tokenizer.eos_token_id, self.tokenizer.convert_tokens_to_ids("<|im_end|>")} - {None}

    def stream(self, messages, max_new_tokens, stop=lambda: False):
        torch = self.torch
        ids = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)["input_ids"]
        tokens: list[int] = []
        said = ""
        with torch.inference_mode():
            out = self.model(ids, use_cache=True)
            for _ in range(max_new_tokens):
                if stop():
                    return
                token = int(out.logits[0, -1].argmax())
                if token in self.eos:
                    return
                tokens.append(token)
                text = self.tokenizer.decode(tokens, skip_special_tokens=True)
                if len(text) > len(said) and not text.endswith("\ufffd"):
                    yield text[len(said):]
                    said = text
                out = self.model(torch.tensor([[token]]), past_key_values=out.past_key_values, use_cache=True)


class EndpointLLM(ChatLLM):
    """An OpenAI-compatible /chat/completions endpoint with streaming (vLLM, llama.cpp server, ...)."""

    def __init__(self, base_url: str, model: str, api_key: str | None = None):
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key = api_key

    def stream(self, messages, max_new_tokens, stop=lambda: False):
        import httpx

        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        body = {"model": self.model, "messages": messages, "max_tokens": max_new_tokens, "stream": True}
        try:
            with httpx.stream("POST", self.url, json=body, headers=headers, timeout=30) as response:
                if response.status_code != 200:
                    raise SystemError_(f"LLM endpoint {self.url} answered HTTP {response.status_code}")
                for line in response.iter_lines():
                    if stop():
                        return
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        return
                    delta = json.loads(data)["choices"][0].get("delta", {}).get("content")
                    if delta:
                        yield delta
        except httpx.HTTPError as e:
            raise SystemError_(f"LLM endpoint {self.url} cannot be reached: {e}") from None


class PiperTTS:
    """Piper voice (the packaged en_US-joe-medium by default); yields 16 kHz float32 audio per sentence."""

    def __init__(self, voice: str | None = None):
        from piper import PiperVoice

        from studies.systems.models import piper_voice_files

        model, config = piper_voice_files(voice)
        self.voice = PiperVoice.load(str(model), config_path=str(config))

    def synthesize(self, text: str) -> Iterator[np.ndarray]:
        for chunk in self.voice.synthesize(text):
            audio = chunk.audio_int16_array.astype(np.float32) / 32768.0
            yield resample(audio, chunk.sample_rate, SAMPLE_RATE)
