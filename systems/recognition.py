"""The recognition stage: faster-whisper's Whisper on one utterance, fast on short turns."""

from __future__ import annotations

import numpy as np

from speech.asr import load_whisper, window_features
from systems.base import SAMPLE_RATE


# The most tokens an utterance is decoded to: 16 and 12 a second, twice a fast speaker's.
UTTERANCE_TOKENS, UTTERANCE_TOKENS_PER_S = 16, 12


class WhisperASR:
    """faster-whisper's model (the packaged tiny.en by default) on one utterance, fast.

    Whisper's encoder normally always sees a 30 s window; a short utterance padded to 30 s pays
    for 30 s (~1 s here on a busy core). Like whisper.cpp's reduced audio context, we give the
    encoder only a 10, 20 or 30 s window around the utterance: same words on short turns at a
    quarter of the time (measured: 0.29 s instead of 1.28 s for a 2.4 s question).
    """

    # Smaller windows (3-8 s, 2 s after the utterance) took 125 ms a question against 219 ms but
    # misheard a call through Opus ("go hiking" as "know how i can"): git show 10bd352:benchmarks/whisper_window_probe.py
    WINDOWS_S = (10, 20, 30)

    def __init__(self, model: str | None = None, threads: int = 1):
        from faster_whisper.tokenizer import Tokenizer

        self.model = load_whisper(model, cpu_threads=threads)
        self.tokenizer = Tokenizer(self.model.hf_tokenizer, self.model.model.is_multilingual,
                                   task="transcribe", language="en")

    def transcribe(self, audio: np.ndarray, previous_text: str | None = None) -> str:
        """The words of `audio`. `previous_text` is Whisper's prompt, read as the text before the
        audio: it sets the spelling and style the model expects (Whisper drops or respells
        fillers and backchannels unless its prompt has some: OpenAI's prompting guide)."""
        import ctranslate2

        audio = np.asarray(audio, dtype=np.float32)
        if len(audio) > (self.WINDOWS_S[-1] - 1) * SAMPLE_RATE:  # a very long turn: the whole pipeline
            segments, _ = self.model.transcribe(audio, language="en", beam_size=1, without_timestamps=True,
                                                condition_on_previous_text=False, initial_prompt=previous_text)
            return " ".join(segment.text.strip() for segment in segments).strip()
        window = next(w for w in self.WINDOWS_S if len(audio) <= (w - 1) * SAMPLE_RATE)
        features = np.ascontiguousarray(window_features(self.model, audio, window))
        encoded = self.model.model.encode(ctranslate2.StorageView.from_array(features[None]), to_cpu=False)
        previous = self.tokenizer.encode(" " + previous_text.strip()) if previous_text else []
        prompt = self.model.get_prompt(self.tokenizer, previous, without_timestamps=True)
        # No one says more than ~7 tokens a second: more is Whisper looping on short audio
        # ("Yeah. Yeah. Yeah. ..." to the 224-token limit, ~0.5 s of decoding for nothing).
        # (CTranslate2's max_length counts the prompt.)
        most = min(224, len(prompt) + UTTERANCE_TOKENS + int(UTTERANCE_TOKENS_PER_S * len(audio) / SAMPLE_RATE))
        result = self.model.model.generate(encoded, [prompt], beam_size=1, max_length=most, suppress_blank=True)
        ids = [t for t in result[0].sequences_ids[0] if t < self.tokenizer.eot]
        return self.tokenizer.decode(ids).strip()
