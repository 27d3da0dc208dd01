"""Turn-taking definitions, the bottom of the platform: what a two-party conversation is
(voice activity per speaker, words), the events it contains (IPUs, pauses, gaps, overlaps,
backchannels), their statistics and confidence intervals, RTTM timelines and the Switchboard
corpus with its reference statistics.

Everything above builds on it (speech, judge, annotation, studies, analysis); it imports only
numpy and the standard library.
"""
