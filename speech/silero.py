"""Silero VAD, fast: per-channel speech segments for hours of audio in seconds.

Silero's own `get_speech_timestamps` calls the model once per 32 ms frame from Python (about
150x real time here). silero-vad 6.2.3 also ships a "sequence" ONNX export of the same network:
it takes a block of frames (each with the 64 samples of context in front of it), runs the
convolutional encoder on every frame and the LSTM through them, and gives the same per-frame
probabilities as the streaming model.

We run that export in two parts. The encoder sees each frame on its own, so it is a handful of
matrix products over a whole block of frames, done here in numpy with the export's own weights
(onnxruntime runs these convolutions one tiny frame at a time: 90% of its time went there).
The LSTM and the output layer, the sequential part, run in onnxruntime as a sub-model cut from
the same export. Blocks of 2048 frames (65 s) per call, channels in parallel threads: one hour
of two-channel audio in about 3.3 s on two cores (onnxruntime alone: 7.4 s). Probabilities
agree with the streaming model to ~1e-4 (float32 sums in another order).

(Cutting channels into pieces with a warm-up and stepping them as one batch is about as fast
but not exact: the recurrent state keeps long memory, and single frames differed by up to 0.36
in probability from the streaming model even with 4 s of warm-up.)

The probability track is turned into segments the way silero's `get_speech_timestamps` does it
(threshold with hysteresis, minimum speech and silence, padding), with TurnNat's defaults.
"""

from __future__ import annotations

import functools
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

from speech.cpus import usable_cpus
from speech.models import silero_vad_path
from turntaking.segment import Segment

SAMPLE_RATE = 16000
FRAME = 512  # samples per model frame at 16 kHz (32 ms)
CONTEXT = 64  # samples of the previous frame the model sees in front of each frame
FRAME_S = FRAME / SAMPLE_RATE


@dataclass(frozen=True)
class SileroParams:
    threshold: float = 0.5
    neg_threshold: float | None = None  # None: threshold - 0.15 (silero's default)
    min_speech_ms: float = 120.0
    min_silence_ms: float = 120.0
    speech_pad_ms: float = 40.0
    block_frames: int = 2048  # frames per model call
    threads: int = 2  # channels run in parallel


ENCODER_OUTPUT = "/Transpose_output_0"  # the export's LSTM input, (frames, 1, 128)


@dataclass(frozen=True)
class SileroEncoder:
    """The export's per-frame encoder as matrix products: STFT magnitude, then four 1-D convolutions.

    A frame is 576 samples, reflect-padded by 64 on the right, cut into 4 windows of 256 (hop 128);
    the convolutions (kernel 3, padding 1, strides 1, 2, 2, 1) shrink those 4 steps to 1.
    Convolution weights are stored as (kernel * in, out) for im2col products.
    """

    stft: np.ndarray  # (256, 258): real and imaginary parts of 129 bins
    conv1: np.ndarray  # (3 * 129, 128)
    conv2: np.ndarray  # (3 * 128, 64)
    conv3: np.ndarray  # (3 * 64, 64)
    conv4: np.ndarray  # (64, 128): only the middle tap meets a 1-step input
    biases: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]

    @classmethod
    def from_initializers(cls, w: dict[str, np.ndarray]) -> "SileroEncoder":
        def im2col(weight):  # (out, in, k) -> (k * in, out), rows ordered tap by tap
            return np.ascontiguousarray(weight.transpose(2, 1, 0).reshape(-1, weight.shape[0]))

        return cls(
            stft=np.ascontiguousarray(w["stft.forward_basis_buffer"][:, 0, :].T),
            conv1=im2col(w["encoder.0.weight"]),
            conv2=im2col(w["encoder.1.weight"]),
            conv3=im2col(w["encoder.2.weight"]),
            conv4=np.ascontiguousarray(w["encoder.3.weight"][:, :, 1].T),
            biases=tuple(w[f"encoder.{k}.bias"] for k in range(4)),
        )

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        """(n, 576) model inputs -> (n, 128) LSTM inputs."""
        n = len(rows)
        b1, b2, b3, b4 = self.biases
        padded = np.concatenate([rows, rows[:, -2:-66:-1]], axis=1)  # reflect: x[574] ... x[511]
        windows = np.lib.stride_tricks.as_strided(padded, (n, 4, 256), (padded.strides[0], 128 * 4, 4))
        spec = (windows.reshape(n * 4, 256) @ self.stft).reshape(n, 4, 258)
        x = np.sqrt(spec[..., :129] ** 2 + spec[..., 129:] ** 2)  # (n, 4, 129)
        x = np.concatenate([np.zeros((n, 1, 129), np.float32), x, np.zeros((n, 1, 129), np.float32)], axis=1)
        taps = np.lib.stride_tricks.as_strided(x, (n, 4, 3 * 129), (x.strides[0], 129 * 4, 4))
        x = np.maximum(taps.reshape(n * 4, -1) @ self.conv1 + b1, 0).reshape(n, 4, 128)
        x = np.concatenate([np.zeros((n, 1, 128), np.float32), x], axis=1)  # steps -1 .. 3
        taps = np.stack([x[:, 0:3].reshape(n, -1), x[:, 2:5].reshape(n, -1)], axis=1)  # stride 2: 2 steps
        x = np.maximum(taps.reshape(n * 2, -1) @ self.conv2 + b2, 0).reshape(n, 128)
        x = np.concatenate([np.zeros((n, 64), np.float32), x], axis=1)  # stride 2 on steps -1 .. 1: 1 step
        x = np.maximum(x @ self.conv3 + b3, 0)
        return np.maximum(x @ self.conv4 + b4, 0)


@functools.cache
def _model_parts() -> tuple[SileroEncoder, bytes]:
    """The sequence export split at the LSTM: numpy encoder, and the rest as a serialized ONNX model.

    The weights come from the export itself (its sha256 is checked by `silero_vad_path`); the
    package's silero_vad_16k.safetensors holds other weights and gives other probabilities."""
    import onnx
    from onnx import numpy_helper, shape_inference, utils

    model = onnx.load(str(silero_vad_path()))
    encoder = SileroEncoder.from_initializers({i.name: numpy_helper.to_array(i) for i in model.graph.initializer})
    recurrent = utils.Extractor(shape_inference.infer_shapes(model)).extract_model(
        [ENCODER_OUTPUT, "h", "c"], ["speech_probs", "hn", "cn"]
    )
    return encoder, recurrent.SerializeToString()


_preparing = threading.Lock()


def prepare() -> None:
    """Build the batch model now rather than at its first use: about 0.9 s, most of it holding the
    interpreter's lock (onnx's import, its shape inference), which stalls every other thread of
    the process, a server's live calls among them. Once per process; callers may race."""
    with _preparing:
        _model_parts()


_sessions = threading.local()


def _recurrent_session():
    # One onnxruntime session per thread (the LSTM part is 0.5 MB), each single-threaded.
    if getattr(_sessions, "session", None) is None:
        import onnxruntime

        # Its telemetry thread looks up a Microsoft host name; in a Ray worker that lookup's
        # dlopen deadlocked against the session's thread creation (glibc loader lock), seen once.
        onnxruntime.disable_telemetry_events()
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        _sessions.session = onnxruntime.InferenceSession(
            _model_parts()[1], sess_options=options, providers=["CPUExecutionProvider"]
        )
    return _sessions.session


def _frame_rows(signal: np.ndarray, first: int, n_frames: int) -> np.ndarray:
    """(n_frames, CONTEXT + FRAME) model inputs for frames first.. (zeros before and after the signal).

    Built a block at a time: a padded copy of the whole channel would be 230 MB an hour, each
    page of it faulted in (page faults are slow on this VM)."""
    begin = first * FRAME - CONTEXT
    block = np.zeros(CONTEXT + n_frames * FRAME, dtype=np.float32)
    part = signal[max(begin, 0):begin + len(block)]
    block[max(-begin, 0):max(-begin, 0) + len(part)] = part
    return np.lib.stride_tricks.as_strided(
        block, shape=(n_frames, CONTEXT + FRAME), strides=(FRAME * 4, 4), writeable=False
    )


def channel_probability_blocks(signal: np.ndarray, block_frames: int = 2048):
    """Speech probabilities of one 16 kHz channel's 32 ms frames (the last one zero-padded), a
    block of frames at a time: a caller that has seen enough stops early."""
    encoder, session = _model_parts()[0], _recurrent_session()
    signal = np.asarray(signal, dtype=np.float32)
    n_frames = -(-len(signal) // FRAME)
    h = np.zeros((1, 1, 128), dtype=np.float32)
    c = np.zeros((1, 1, 128), dtype=np.float32)
    for first in range(0, n_frames, block_frames):
        features = encoder(_frame_rows(signal, first, min(block_frames, n_frames - first)))
        p, h, c = session.run(["speech_probs", "hn", "cn"], {ENCODER_OUTPUT: features[:, None, :], "h": h, "c": c})
        yield np.asarray(p, dtype=np.float32).reshape(-1)


def channel_probabilities(signal: np.ndarray, block_frames: int = 2048) -> np.ndarray:
    """Speech probability of every 32 ms frame of one 16 kHz channel (the last frame zero-padded)."""
    n_frames = -(-len(signal) // FRAME)
    probs = np.empty(n_frames, dtype=np.float32)
    first = 0
    for block in channel_probability_blocks(signal, block_frames):
        probs[first:first + len(block)] = block
        first += len(block)
    return probs


def speech_probabilities(channels: np.ndarray, params: SileroParams = SileroParams()) -> np.ndarray:
    """Per-frame speech probabilities (channels, ceil(n / 512)) of 16 kHz audio (channels, n)."""
    channels = np.atleast_2d(np.asarray(channels, dtype=np.float32))
    threads = max(1, min(params.threads, len(channels), usable_cpus()))
    # One BLAS thread per channel thread: two threads each asking OpenBLAS for two cores made the
    # encoder 1.6 times slower than this.
    with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(threads) as pool:
        return np.stack(list(pool.map(lambda ch: channel_probabilities(ch, params.block_frames), channels)))


def probabilities_to_segments(probs: np.ndarray, n_samples: int,
                              params: SileroParams = SileroParams()) -> list[Segment]:
    """Speech segments (start_s, end_s) from one channel's frame probabilities.

    Speech starts at a frame >= threshold and ends after `min_silence_ms` of frames below
    neg_threshold (frames in between the thresholds keep the current state); segments not
    longer than `min_speech_ms` are dropped; each is padded by `speech_pad_ms`, or meets its
    neighbour halfway when the silence between them is shorter than two pads.
    """
    neg = params.neg_threshold if params.neg_threshold is not None else max(params.threshold - 0.15, 0.01)
    min_speech = SAMPLE_RATE * params.min_speech_ms / 1000
    min_silence = SAMPLE_RATE * params.min_silence_ms / 1000
    pad = SAMPLE_RATE * params.speech_pad_ms / 1000

    found: list[list[int]] = []
    start = None  # sample where the current speech began
    silence_from = None  # sample where the current run of low probabilities began
    for i, p in enumerate(probs.tolist()):
        sample = i * FRAME
        if p >= params.threshold:
            silence_from = None
            if start is None:
                start = sample
        elif start is not None and p < neg:
            if silence_from is None:
                silence_from = sample
            if sample - silence_from >= min_silence:
                if silence_from - start > min_speech:
                    found.append([start, silence_from])
                start = silence_from = None
    if start is not None and n_samples - start > min_speech:
        found.append([start, n_samples])

    for k, seg in enumerate(found):
        if k == 0:
            seg[0] = int(max(0, seg[0] - pad))
        if k + 1 < len(found):
            gap = found[k + 1][0] - seg[1]
            shift = gap // 2 if gap < 2 * pad else pad
            seg[1] = int(seg[1] + shift)
            found[k + 1][0] = int(max(0, found[k + 1][0] - shift))
        else:
            seg[1] = int(min(n_samples, seg[1] + pad))
    return [Segment(s / SAMPLE_RATE, e / SAMPLE_RATE) for s, e in found]


def silero_segments(channels: np.ndarray, params: SileroParams = SileroParams()) -> list[list[Segment]]:
    """Speech segments of each channel of 16 kHz audio (channels, n)."""
    channels = np.atleast_2d(channels)
    probs = speech_probabilities(channels, params)
    return [probabilities_to_segments(p, channels.shape[1], params) for p in probs]


# Quieter than this everywhere (-80 dBFS) is digital silence: no model call needed to know it.
SILENT_PEAK = 1e-4


def speech_seconds(signal: np.ndarray, params: SileroParams = SileroParams(), enough_s: float | None = None) -> float:
    """Seconds of speech (Silero's segments, as `silero_segments` finds them) in one 16 kHz
    channel; with `enough_s`, counting stops once that much is found (whether a channel holds
    speech is then known after its first minute or so, not its whole length)."""
    signal = np.asarray(signal, dtype=np.float32)
    if not len(signal) or float(np.abs(signal).max()) < SILENT_PEAK:
        return 0.0
    seen: list[np.ndarray] = []
    total = 0.0
    for block in channel_probability_blocks(signal, params.block_frames):
        seen.append(block)
        # Segments of the frames seen so far (an open one ends where they end).
        done = min(len(signal), sum(map(len, seen)) * FRAME)
        total = sum(e - s for s, e in probabilities_to_segments(np.concatenate(seen), done, params))
        if enough_s is not None and total >= enough_s:
            break
    return total
