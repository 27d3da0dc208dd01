"""Speech processing: audio I/O and resampling, voice activity detection (Silero), speaker
segmentation (pyannote), ASR (Whisper), the pinned packaged models they load, and the pipeline
that turns a recording into a `turntaking.activity.Conversation`.

Builds on `turntaking` and `storage`; judge, annotation, studies and analysis build on it.
Heavy libraries (onnxruntime, faster-whisper) are imported where they are used.
"""
