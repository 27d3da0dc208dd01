"""The speech detection stage: Silero VAD's P(speech) of a live 16 kHz stream, frame by frame."""

from __future__ import annotations

import numpy as np

from speech.models import silero_vad_path


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
