"""Speech processing: audio I/O and resampling, voice activity detection (Silero), speaker
segmentation (pyannote), ASR (Whisper), Smart Turn, the pinned packaged models they load, and
the pipeline that turns a recording into a `turntaking.activity.Conversation` (`recordings`: the
recordings the judge and the naturalness scorers read).

Builds on `turntaking` and `storage`; judge, annotation, studies, naturalness, predictorbench and
analysis build on it.
Heavy libraries (onnxruntime, faster-whisper) are imported where they are used.
"""

import os

# CTranslate2 (faster-whisper, the cascade's LLM) runs on its own libgomp, whose threads by
# default spin after every step waiting for the next. On a machine doing anything else (a second
# call, the analysis worker, a test suite) two spinning threads fight the thread that has the
# work: the LLM's 2-thread decoding went from 50 to 513 ms a token and burned 148 s of CPU for
# 15 s of work (5 replies of 40 tokens, load 2 on 2 cores); sleeping threads keep it at 52 ms.
# libgomp reads the policy once, when CTranslate2's library loads, and every module that imports
# CTranslate2 imports this package first. A policy set by the user is kept.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
