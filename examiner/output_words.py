"""The system's words with times, where an example has no `output.json`: the packaged ASR
(faster-whisper tiny.en, `speech/asr.py`, on the output's Silero speech regions) in FDB's
`output.json` form, with FDB's crop for user interruption (`get_transcript/asr.py`: the audio
from the interruption's end on, that time added back to every word).

FDB itself uses NeMo parakeet-tdt-0.6b-v2, which is not packaged here: TOR moves with the ASR, so
every `output.json` this module writes names its ASR under "asr", and the scores say which
examples' words came from it. Silero VAD and speech output, in FDB's other script, the
backchannel scan, run the `silero_vad` package's own `get_speech_timestamps` with its defaults,
as `eval_backchannel.py` does.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from speech.asr import transcribe_tracks
from speech.audio import load_audio, mono_mixture
from speech.silero import silero_segments
from turntaking.segment import Segment

SAMPLE_RATE = 16000
PACKAGED_ASR = "faster-whisper tiny.en (packaged; speech/asr.py on Silero VAD regions)"


def output_signal(path) -> np.ndarray:
    """The output as 16 kHz mono (FDB averages the channels of a multichannel file)."""
    samples, _ = load_audio(path, SAMPLE_RATE)
    return mono_mixture(samples) if samples.shape[0] > 1 else samples[0]


def transcribe_output(signal: np.ndarray, crop_s: float = 0.0) -> dict:
    """An FDB `output.json` of the 16 kHz `signal` from `crop_s` on, times in the whole signal's."""
    cropped = signal[int(crop_s * SAMPLE_RATE):]
    chunks = []
    if len(cropped):
        activity = silero_segments(cropped[None])[0]
        words = transcribe_tracks([cropped], [activity])[0] if activity else []
        chunks = [{"text": w.text, "timestamp": [round(w.start + crop_s, 3), round(w.end + crop_s, 3)]}
                  for w in words]
    return {"text": " ".join(c["text"] for c in chunks), "chunks": chunks, "asr": PACKAGED_ASR,
            "asr_crop_s": crop_s}


def fdb_speech_segments(signal: np.ndarray) -> list[Segment]:
    """Silero's `get_speech_timestamps` with its defaults, in seconds, as eval_backchannel.py calls it."""
    import torch
    from silero_vad import get_speech_timestamps

    found = get_speech_timestamps(torch.from_numpy(np.ascontiguousarray(signal, dtype=np.float32)), _silero_model(),
                                  return_seconds=True)
    return [Segment(float(s["start"]), float(s["end"])) for s in found]


@lru_cache(maxsize=1)
def _silero_model():
    """One Silero model per process (loading it takes a second)."""
    from silero_vad import load_silero_vad

    return load_silero_vad()
