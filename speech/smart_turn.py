"""Smart Turn v3.2: P(the utterance is complete) from the last 8 s of one speaker's audio.

The ONNX file ships inside the pinned pipecat-ai wheel (`speech.models.SMART_TURN_V32`), or
$SMART_TURN_ONNX names it; its sha256 is checked at load, and a missing or different file is one
clear `ModelError`. The audio of each clip (16 kHz mono, left-padded with zeros to 8 s) goes in
as Whisper features. Used by the naturalness audio cue (`naturalness.turn_cue`) and wrapped as an
eot-bench adapter (`predictorbench.eot.predictors.SmartTurnAdapter`).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from speech.models import SMART_TURN_V32, ModelError, package_directory
from storage.files import sha256_file

SAMPLE_RATE = 16000

# The file inside the pipecat-ai==1.14.0 wheel (pipecat/audio/turn/smart_turn/data/), pinned in
# the registry of packaged models.
[(SMART_TURN_FILE, SMART_TURN_SHA256)] = SMART_TURN_V32.files.items()
SMART_TURN_PIN = (SMART_TURN_V32.distribution, SMART_TURN_V32.version, SMART_TURN_SHA256)
SMART_TURN_INSTALL = (
    f"`make setup` installs it (requirements-nodeps.txt: `pip install --no-deps pipecat-ai=={SMART_TURN_PIN[1]}`, "
    f"whose wheel ships pipecat/audio/turn/smart_turn/data/{SMART_TURN_FILE}), or extract that "
    f"file from the wheel (or download it from https://huggingface.co/pipecat-ai/smart-turn-v3) and set "
    "SMART_TURN_ONNX=/path/to/it"
)


def find_smart_turn() -> Path | None:
    """The Smart Turn v3.2 ONNX file: $SMART_TURN_ONNX, else inside an installed pipecat-ai."""
    env = os.environ.get("SMART_TURN_ONNX")
    if env:
        return Path(env) if Path(env).is_file() else None
    try:
        candidate = package_directory(SMART_TURN_V32) / SMART_TURN_FILE
    except ModelError:  # pipecat-ai not installed
        return None
    return candidate if candidate.is_file() else None


class SmartTurn:
    """The loaded model: `predict(clips)` -> P(complete) of each clip's end."""

    window_s = 8.0

    def __init__(self, onnx_path=None):
        import onnxruntime

        path = Path(onnx_path) if onnx_path else find_smart_turn()
        if path is None or not path.is_file():
            raise ModelError(f"Smart Turn v3.2 ONNX file not found; {SMART_TURN_INSTALL}")
        from transformers import WhisperFeatureExtractor

        self.path, self.sha256 = str(path), sha256_file(path)
        if self.sha256 != SMART_TURN_PIN[2]:
            raise ModelError(f"{path}: sha256 {self.sha256[:16]}... is not the pinned Smart Turn v3.2 file of "
                             f"{SMART_TURN_PIN[0]}=={SMART_TURN_PIN[1]} ({SMART_TURN_PIN[2][:16]}...)")
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(self.path, sess_options=options,
                                                    providers=["CPUExecutionProvider"])
        self.features = WhisperFeatureExtractor(chunk_length=int(self.window_s))

    def predict(self, clips) -> list[float]:
        """P(complete) at the end of each clip (16 kHz mono; only its last `window_s` count)."""
        n = int(self.window_s * SAMPLE_RATE)
        padded = []
        for audio in clips:
            audio = np.asarray(audio, dtype=np.float32)[-n:]
            padded.append(np.concatenate([np.zeros(n - len(audio), dtype=np.float32), audio]))
        feats = self.features(padded, sampling_rate=SAMPLE_RATE, return_tensors="np", padding="max_length",
                              max_length=n, truncation=True, do_normalize=True).input_features
        name = self.session.get_inputs()[0].name
        probs = self.session.run(None, {name: feats.astype(np.float32)})[0]
        return [float(p) for p in np.asarray(probs).reshape(len(padded), -1)[:, 0]]
