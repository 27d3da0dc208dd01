"""Speech processing: audio I/O and resampling, voice activity detection (Silero), speaker
segmentation (pyannote), ASR (Whisper), Smart Turn, the pinned packaged models they load, and
the pipeline that turns a recording into a `turntaking.activity.Conversation` (`recordings`: the
recordings the judge and the naturalness scorers read).

Builds on `turntaking` and `storage`; judge, annotation, studies, naturalness, predictorbench and
analysis build on it.
Heavy libraries (onnxruntime, faster-whisper) are imported where they are used.
"""
