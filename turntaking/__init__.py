"""Turn-taking definitions, the bottom of the platform: what a two-party conversation is
(voice activity per speaker, words), the events it contains (IPUs, pauses, gaps, overlaps,
backchannels), their statistics and confidence intervals, RTTM timelines and the Switchboard
corpus with its reference statistics; and what every command line and file reader shares
(`commands`: one-line errors, reports as text or JSON; `jsonfiles`: the one JSON / JSONL reader).

Everything above builds on it (speech, jobs, judge, annotation, studies, naturalness,
predictorbench, analysis); it imports only numpy and the standard library.
"""
