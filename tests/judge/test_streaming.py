"""The streaming judge (frame by frame, for live calls) predicts exactly what the offline pass
predicts, on a conversation longer than its feature window, with the packaged checkpoint."""

from __future__ import annotations

import numpy as np
import pytest

from turntaking.activity import Conversation
from judge.features import FRAME_RATE
from judge.model import JudgeConfig, JudgeModel, load_checkpoint, predict
from judge.streaming import HISTORY_FRAMES, StreamingJudge


def test_streaming_equals_the_offline_pass():
    # 14 s (longer than the 10 s look-back window), turns, a pause, an overlap, a long silence
    conv = Conversation(14.0, ([(0.3, 2.1), (2.5, 4.0), (11.0, 12.5)], [(4.3, 6.0), (5.8, 7.2), (12.4, 13.0)]))
    model = load_checkpoint()
    offline = predict(model, conv)
    frames = conv.frames(FRAME_RATE)
    assert frames.shape[1] > HISTORY_FRAMES
    judge = StreamingJudge(model)
    np.testing.assert_allclose(judge.label_probs, offline.label_probs[0], atol=1e-5)
    for t in range(frames.shape[1]):
        probs = judge.push(bool(frames[0, t]), bool(frames[1, t]))
        if t % 2 == 1 and (t + 1) // 2 < len(offline.label_probs):  # a chunk boundary
            np.testing.assert_allclose(probs, offline.label_probs[(t + 1) // 2], atol=1e-5)
    assert judge.frames == frames.shape[1]
    assert abs(sum(judge.label_probs) - 1) < 1e-5 and 0 <= judge.prob("T") <= 1


def test_only_the_voice_activity_judge_streams():
    with pytest.raises(ValueError, match="only the voice-activity judge streams"):
        StreamingJudge(JudgeModel(JudgeConfig(inputs="logmel")))
