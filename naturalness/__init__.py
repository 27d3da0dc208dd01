"""Dialogue naturalness: the scorers a researcher can choose by name (`naturalness.scorers`), each
in the module named as it is (`timing_hazard/`, `durations.py`, `turnnat_va.py`), all keeping
the contract of `naturalness.score`; the audio cue (`turn_cue.py`), scorers on natural/perturbed
pairs (`pairs.py`), reports and corpus runs, and `python -m naturalness`.

Builds on the judge (turnnat-va pools the judge's future voice-activity head), speech,
turntaking, storage and jobs; analysis builds on it.
"""
