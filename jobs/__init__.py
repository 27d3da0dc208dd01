"""Jobs over a corpus: one function run over many files as Ray tasks, resumable (`jobs.ray_runs`).

Builds on `turntaking` and `storage`; the command lines of judge, naturalness, annotation and
analysis use it for their `--run-dir` runs.
"""
