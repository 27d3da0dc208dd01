"""The language model stage: chat models that stream a reply as text pieces, local
(CTranslate2, transformers, llama.cpp) or an OpenAI-compatible endpoint, and how tokens are chosen."""

from __future__ import annotations

import json
import os
import queue
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator


from speech.models import SMOLLM2_GGUF, packaged_model_path
from systems.api_keys import ApiKeyError, bearer_header
from systems.base import SystemError_
from systems.models import ctranslate2_llm_dir, llm_location


@dataclass(frozen=True)
class Decoding:
    """How a reply's tokens are chosen. The default is greedy; the cascade samples (its settings).

    Greedy decoding of a small model with its previous answer in the prompt tends to copy that
    answer; a repetition penalty keeps it from doing so and stays reproducible. Top-k sampling
    varies replies further; `seed` fixes each reply's draw (transformers, llama.cpp, an endpoint
    that honours it; CTranslate2 seeds once per process)."""

    repetition_penalty: float = 1.0  # > 1: a token already in the prompt or the reply is less likely
    sampling_topk: int = 1  # 1: greedy (temperature and seed unused)
    sampling_temperature: float = 1.0
    seed: int = 0
    suppressed_words: tuple[str, ...] = ()  # never generated, in any capitalisation the tokenizer spells alike

    def suppressed_sequences(self, tokenizer) -> list[list[int]]:
        """Token id sequences of the suppressed words as they may appear: with and without a
        leading space, lower case and capitalised."""
        sequences = []
        for word in self.suppressed_words:
            for form in dict.fromkeys((word, word.lower(), word.capitalize())):
                for text in (form, " " + form):
                    ids = tokenizer.encode(text, add_special_tokens=False)
                    if ids and ids not in sequences:
                        sequences.append(ids)
        return sequences

    @property
    def greedy(self) -> bool:
        return self.sampling_topk == 1


GREEDY = Decoding()


class ChatLLM:
    """Streams a chat reply as text pieces. `stream(messages, max_new_tokens, stop, decoding)`."""

    @staticmethod
    def from_settings(settings) -> "ChatLLM":
        if settings.llm_endpoint:
            return EndpointLLM(settings.llm_endpoint, settings.llm_api_model, settings.llm_key_config,
                               settings.llm_timeout_s)
        if settings.llm_runtime == "llama.cpp":
            return LlamaCppLLM(settings.llm, threads=1)
        if settings.llm_runtime == "transformers":
            return LocalLLM(settings.llm, threads=1, data_root=settings.data_root)
        return CTranslate2LLM(settings.llm, threads=settings.threads, data_root=settings.data_root,
                              compute_type=settings.llm_compute_type)

    def stream(self, messages: list[dict], max_new_tokens: int, stop: Callable[[], bool] = lambda: False,
               decoding: Decoding = GREEDY) -> Iterator[str]:
        raise NotImplementedError

    def warm(self, messages: list[dict]) -> None:
        """Prepare for prompts starting with `messages` (e.g. the system prompt at call start)."""

    def check(self) -> None:
        """SystemError_ if the model cannot serve a call now (a server unreachable, a key refused,
        a model it does not serve); a model in this process always can."""


class LocalLLM(ChatLLM):
    """A transformers causal LM, greedy decoding with a KV cache, one token at a time so the
    caller can stop it between tokens (a dropped speculation).

    The cache is kept between replies: a new prompt that starts like the previous one (system
    prompt, earlier turns) only needs its new tokens computed, which keeps the time to the first
    token flat as the conversation grows. One generation at a time (calls share the model).
    """

    def __init__(self, model: str | None = None, threads: int = 1, data_root=None):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        torch.set_num_threads(threads)  # 2 cores shared with ASR, TTS and the call itself
        location = llm_location(model, data_root)
        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(location)
        self.model = AutoModelForCausalLM.from_pretrained(location, dtype=torch.float32).eval()
        self.eos = {self.tokenizer.eos_token_id, self.tokenizer.convert_tokens_to_ids("<|im_end|>")} - {None}
        self._lock = threading.Lock()
        self._cache = None
        self._cached_ids: list[int] = []  # the tokens whose keys/values are in the cache

    def _prefill(self, ids: list[int]):
        """Logits after `ids`, reusing the cached prefix they share with the previous prompt."""
        torch = self.torch
        shared = 0
        for a, b in zip(self._cached_ids, ids[:-1]):  # at least one new token must be computed
            if a != b:
                break
            shared += 1
        if self._cache is None or shared == 0:
            out = self.model(torch.tensor([ids]), use_cache=True)
        else:
            surplus = self._cache.get_seq_length() - shared
            if surplus > 0:
                self._cache.crop(-surplus)
            out = self.model(torch.tensor([ids[shared:]]), past_key_values=self._cache, use_cache=True)
        self._cache, self._cached_ids = out.past_key_values, list(ids)
        return out

    def _ids(self, messages, add_generation_prompt: bool) -> list[int]:
        return chat_ids(self.tokenizer, messages, add_generation_prompt)

    def warm(self, messages):
        with self._lock, self.torch.inference_mode():
            self._prefill(self._ids(messages, add_generation_prompt=False))

    def stream(self, messages, max_new_tokens, stop=lambda: False, decoding=GREEDY):
        ids = self._ids(messages, add_generation_prompt=True)
        with self._lock, self.torch.inference_mode():
            yield from decoded_pieces(self.tokenizer, self._tokens(ids, max_new_tokens, decoding), stop)

    def _next_token(self, logits, seen: list[int], decoding: Decoding, generator) -> int:
        torch = self.torch
        for sequence in decoding.suppressed_sequences(self.tokenizer):  # its last token, after the rest
            if len(sequence) == 1 or seen[len(seen) - len(sequence) + 1:] == sequence[:-1]:
                logits[sequence[-1]] = -float("inf")
        if decoding.repetition_penalty != 1.0:  # as CTRL and CTranslate2: shrink a seen token's score
            index = torch.tensor(sorted(set(seen)))
            scores = logits[index]
            logits[index] = torch.where(scores > 0, scores / decoding.repetition_penalty,
                                        scores * decoding.repetition_penalty)
        if decoding.greedy:
            return int(logits.argmax())
        top = torch.topk(logits / decoding.sampling_temperature, decoding.sampling_topk)
        choice = torch.multinomial(torch.softmax(top.values, -1), 1, generator=generator)
        return int(top.indices[choice])

    def _tokens(self, ids: list[int], max_new_tokens: int, decoding: Decoding) -> Iterator[int]:
        out = self._prefill(ids)
        generator = self.torch.Generator().manual_seed(decoding.seed)
        seen = list(ids)
        for _ in range(max_new_tokens):
            token = self._next_token(out.logits[0, -1].clone(), seen, decoding, generator)
            seen.append(token)
            if token in self.eos:
                return
            yield token
            out = self.model(self.torch.tensor([[token]]), past_key_values=self._cache, use_cache=True)
            self._cached_ids.append(token)


def decoded_pieces(tokenizer, tokens, stop: Callable[[], bool]) -> Iterator[str]:
    """The new text as each token id arrives (held back while it ends inside a character)."""
    ids: list[int] = []
    said = ""
    for token in tokens:
        if stop():
            return
        ids.append(token)
        text = tokenizer.decode(ids, skip_special_tokens=True)
        if len(text) > len(said) and not text.endswith("\ufffd"):
            yield text[len(said):]
            said = text


def chat_ids(tokenizer, messages, add_generation_prompt: bool) -> list[int]:
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=add_generation_prompt, return_dict=True)["input_ids"]
    return list(ids[0] if ids and isinstance(ids[0], list) else ids)


class CTranslate2LLM(ChatLLM):
    """The default runtime: the same model (a transformers directory or id) converted once to
    CTranslate2, greedy decoding, the same tokens as transformers in float32.

    Why: transformers spends ~65 ms a token on SmolLM2-135M here, with one or two threads
    (Python overhead in every layer, weights read at 8-15 GB/s); CTranslate2 takes ~25 ms with two
    spinning threads on an idle machine, ~45-60 ms with the sleeping threads `speech` sets up (the
    spin costs 2-10x as soon as anything else runs: benchmarks/bench_llm_under_load.py), and ~42 ms
    with one thread, which has no other to wake: one is the default. `compute_type="int8"` is faster
    still (25 against 36 ms a token, the first token 85 against 144 ms, on one thread) but its
    replies answer the turn less well (the cascade's `llm_compute_type`: docs/dialogue-systems.md),
    so it is not the default. The system prompt's keys/values are computed once per call (`warm`)
    and reused by every reply.
    """

    def __init__(self, model: str | None = None, threads: int = 1, data_root=None, compute_type: str = "float32"):
        import ctranslate2
        import torch
        from transformers import AutoTokenizer

        # torch (loaded by transformers) brings its own OpenMP pool; left at two threads it
        # competes with CTranslate2's and doubles the time per token (measured 24 -> 45 ms).
        torch.set_num_threads(1)
        location = llm_location(model, data_root)
        self.tokenizer = AutoTokenizer.from_pretrained(location)
        self.generator = ctranslate2.Generator(str(ctranslate2_llm_dir(location, data_root)), device="cpu",
                                               compute_type=compute_type, intra_threads=threads)
        # CTranslate2 samples with one generator per worker thread, seeded at its first draw: a
        # sampled reply is reproducible from a fresh process, not from a seed given per reply.
        ctranslate2.set_random_seed(0)
        eos = [self.tokenizer.eos_token, "<|im_end|>"]
        self.end_tokens = [t for t in eos if t and self.tokenizer.convert_tokens_to_ids(t) is not None]
        self._lock = threading.Lock()

    def _prompt(self, messages, add_generation_prompt: bool) -> tuple[list[str], list[str] | None]:
        """(tokens, static prompt): the system message's tokens are the static prompt when they
        are a prefix of the whole prompt (CTranslate2 caches the model state after them)."""
        to_tokens = self.tokenizer.convert_ids_to_tokens
        ids = chat_ids(self.tokenizer, messages, add_generation_prompt)
        if messages and messages[0]["role"] == "system":
            static = chat_ids(self.tokenizer, messages[:1], False)
            if 0 < len(static) < len(ids) and ids[: len(static)] == static:
                return to_tokens(ids[len(static):]), to_tokens(static)
        return to_tokens(ids), None

    def _steps(self, tokens, static, max_new_tokens: int, decoding: Decoding = GREEDY) -> Iterator[int]:
        """Token ids, each decoded only when the caller asks for it.

        CTranslate2's own `generate_tokens` decodes ahead on its thread while the caller works;
        the cascade synthesizes the first clause while it holds the stream, and two threads of
        decoding beside Piper slowed that synthesis 3-4x (0.11 -> 0.35-0.46 s). Here the
        generation thread waits in the token callback until the next token is wanted.
        """
        steps: queue.Queue = queue.Queue()
        wanted = threading.Semaphore(0)
        stopping = threading.Event()

        def on_token(step) -> bool:  # CTranslate2's thread; True ends the decoding
            steps.put(step.token_id)
            wanted.acquire()
            return stopping.is_set()

        def generate() -> None:
            try:
                self.generator.generate_batch(
                    [tokens], max_length=max_new_tokens, sampling_topk=decoding.sampling_topk,
                    sampling_temperature=decoding.sampling_temperature,
                    repetition_penalty=decoding.repetition_penalty, end_token=self.end_tokens,
                    suppress_sequences=self._suppressed(decoding), static_prompt=static, cache_static_prompt=static is not None, callback=on_token,
                    include_prompt_in_result=False)
            except Exception as exc:  # reaches the caller instead of dying on this thread
                steps.put(exc)
            steps.put(None)

        thread = threading.Thread(target=generate, name="llm-decode", daemon=True)
        thread.start()
        try:
            while (step := steps.get()) is not None:
                if isinstance(step, Exception):
                    raise step
                yield step
                wanted.release()
        finally:
            stopping.set()
            wanted.release()
            thread.join()

    def _suppressed(self, decoding: Decoding) -> list[list[str]] | None:
        to_tokens = self.tokenizer.convert_ids_to_tokens
        return [to_tokens(ids) for ids in decoding.suppressed_sequences(self.tokenizer)] or None

    def warm(self, messages):
        if messages and messages[0]["role"] == "system":
            probe = list(messages[:1]) + [{"role": "user", "content": "hello"}]
            with self._lock:
                for _ in self._steps(*self._prompt(probe, True), 1):
                    pass

    def stream(self, messages, max_new_tokens, stop=lambda: False, decoding=GREEDY):
        tokens, static = self._prompt(messages, True)
        with self._lock:
            yield from decoded_pieces(self.tokenizer, self._steps(tokens, static, max_new_tokens, decoding), stop)

    def log_likelihoods(self, pairs) -> list[float]:
        """For each (turn, reply): the reply's mean log-probability per token after the bare
        turn as the user's message (studies.reply_quality.ReplyLikelihood)."""
        to_tokens = self.tokenizer.convert_ids_to_tokens
        batch, lengths = [], []
        for turn, reply in pairs:
            prompt = chat_ids(self.tokenizer, [{"role": "user", "content": turn}], True)
            answer = self.tokenizer.encode(reply.strip(), add_special_tokens=False) or [self.tokenizer.eos_token_id]
            batch.append(to_tokens(prompt + answer))
            lengths.append(len(answer))
        with self._lock:
            results = self.generator.score_batch(batch, max_input_length=0)
        # log_probs[k] is the probability of token k+1 given the ones before: the reply's are the last
        return [sum(r.log_probs[-n:]) / n for r, n in zip(results, lengths)]


class LlamaCppLLM(ChatLLM):
    """The GGUF itself through llama.cpp (llama-cpp-python, built from source: see the README).
    llama.cpp keeps the previous prompt's keys/values and reuses the shared prefix by itself."""

    def __init__(self, model: str | None = None, threads: int = 1):
        try:
            from llama_cpp import Llama
        except ImportError:
            raise SystemError_(
                "llm_runtime 'llama.cpp' needs llama-cpp-python (pip install llama-cpp-python, built from "
                "source); or use the default runtime 'transformers'"
            ) from None

        path = Path(model) if model is not None else packaged_model_path(SMOLLM2_GGUF)
        if path.suffix != ".gguf" or not path.is_file():
            raise SystemError_(f"llm_runtime 'llama.cpp' needs a .gguf file, got {path}")
        self._lock = threading.Lock()
        # n_batch 1: this build's batched prompt kernels ran at 100-400 ms per token here (Q4_1,
        # GGML_NATIVE=OFF), one token at a time at 18-24 ms.
        self.llama = Llama(model_path=str(path), n_ctx=2048, n_threads=threads, n_batch=1, n_ubatch=1, verbose=False)

    def warm(self, messages):
        with self._lock:
            for _ in self.llama.create_chat_completion(messages=messages, max_tokens=1, temperature=0.0, stream=True):
                pass

    def stream(self, messages, max_new_tokens, stop=lambda: False, decoding=GREEDY):
        with self._lock:
            chunks = self.llama.create_chat_completion(
                messages=messages, max_tokens=max_new_tokens, stream=True,
                temperature=0.0 if decoding.greedy else decoding.sampling_temperature,
                top_k=decoding.sampling_topk, repeat_penalty=decoding.repetition_penalty, seed=decoding.seed,
            )
            for chunk in chunks:
                if stop():
                    return
                piece = chunk["choices"][0].get("delta", {}).get("content")
                if piece:
                    yield piece


class EndpointLLM(ChatLLM):
    """An OpenAI-compatible server's /chat/completions, streamed (server-sent events): vLLM,
    llama.cpp's server, Ollama, a lab's own model.

    The key is named, never written in the config (`key_config`: {"api_key_env": NAME} or
    {"api_key_file": PATH}, as systems.api_keys reads it) and read at each request, so a
    changed key holds from the next reply. `check` asks the server which models it serves: some
    servers (llama.cpp's) answer any model name with their own model, so a misspelt name would
    otherwise go unnoticed. `timeout_s` bounds the wait for the first token and between tokens;
    past it, as when the server stops mid-reply, `stream` raises SystemError_ and the call ends
    failed with the reason."""

    def __init__(self, base_url: str, model: str | None = None, key_config: dict | None = None,
                 timeout_s: float = 10.0):
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + "/chat/completions"
        self.model = model  # None: the server's only model (check() finds it)
        self.key_config = dict(key_config or {})
        self.timeout_s = timeout_s

    def _headers(self) -> dict:
        try:
            return bearer_header(self.key_config, os.environ)
        except ApiKeyError as e:
            raise SystemError_(f"LLM endpoint {self.base_url}: cannot send the API key: {e}") from None

    def _refused(self, response) -> SystemError_:
        words = response.read().decode("utf-8", errors="replace").strip().replace("\n", " ")[:200]
        why = " (the API key is missing or wrong)" if response.status_code in (401, 403) else ""
        return SystemError_(f"LLM endpoint {response.url} answered HTTP {response.status_code}{why}: {words}")

    def served_models(self) -> list[str]:
        """The model names the server lists at GET /models; SystemError_ if it cannot be asked."""
        import httpx

        try:
            with httpx.stream("GET", self.base_url + "/models", headers=self._headers(), timeout=self.timeout_s) as r:
                if r.status_code != 200:
                    raise self._refused(r)
                return [entry["id"] for entry in json.loads(r.read()).get("data", [])]
        except httpx.HTTPError as e:
            raise SystemError_(f"LLM endpoint {self.base_url} cannot be reached: {type(e).__name__}: {e}") from None
        except (ValueError, KeyError, TypeError, AttributeError):
            raise SystemError_(f"LLM endpoint {self.base_url}/models did not answer an OpenAI model list") from None

    def check(self) -> None:
        served = self.served_models()
        if self.model is None:
            if len(served) != 1:
                raise SystemError_(f"LLM endpoint {self.base_url} serves {len(served)} models "
                                   f"({', '.join(served) or 'none'}): name one with llm_api_model")
            self.model = served[0]
        elif self.model not in served:
            raise SystemError_(f"LLM endpoint {self.base_url} does not serve the model {self.model!r} "
                               f"(it serves: {', '.join(served) or 'none'}): check llm_api_model")

    def stream(self, messages, max_new_tokens, stop=lambda: False, decoding=GREEDY):
        import httpx

        if self.model is None:
            self.check()
        # The OpenAI API has no top-k or repetition penalty: the temperature and the seed carry over.
        body = {"model": self.model, "messages": messages, "max_tokens": max_new_tokens, "stream": True,
                "temperature": 0.0 if decoding.greedy else decoding.sampling_temperature, "seed": decoding.seed}
        pieces, answering = 0, False  # answering: the server took the request and began its reply
        try:
            with httpx.stream("POST", self.url, json=body, headers=self._headers(),
                              timeout=httpx.Timeout(self.timeout_s, connect=5.0)) as response:
                if response.status_code != 200:
                    raise self._refused(response)
                answering = True
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
                        pieces += 1
                        yield delta
        except httpx.ReadTimeout:
            what = "its next token" if pieces else "a first token"
            raise SystemError_(f"LLM endpoint {self.url} did not send {what} within {self.timeout_s:g} s "
                               "(the study's llm_timeout_s)") from None
        except httpx.HTTPError as e:
            if answering:
                raise SystemError_(f"LLM endpoint {self.url} stopped mid-reply after {pieces} pieces: "
                                   f"{type(e).__name__}: {e}") from None
            raise SystemError_(f"LLM endpoint {self.url} cannot be reached: {type(e).__name__}: {e}") from None
        if not stop():
            raise SystemError_(f"LLM endpoint {self.url} ended its reply without [DONE] after {pieces} pieces")
