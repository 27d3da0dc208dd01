"""Benchmarks of turn-taking predictors: eot-bench (end of turn, `eot/`), SID-bench (semantic
interruption detection, `sid/`) and the audio-FM test beds of Talking Turns section 5
(`testbeds/`), with `python -m predictorbench eot | sid | testbeds ...`.

Builds on the judge (its turn-change adapter, the labels and metrics of the test beds), speech and
turntaking; nothing in the project imports it.
"""
