"""What `python -m naturalness score | pairs` compute, as functions: the benchmarks and the tests call
them; `naturalness/__main__.py` only parses and prints.

    naturalness_report(recordings)                 # each recording by the default scorer (timing-hazard-words)
    naturalness_report(recordings, "durations")    # ... by another one, by name
    pairs_from_manifest(manifest)                  # score difference, pair accuracy, C-index
RECORDING: a two-channel audio file (one speaker per channel) or a voice-activity JSON.
"""

from __future__ import annotations

from pathlib import Path

from tqdm import tqdm

from naturalness.pairs import pairs_report, read_pairs_manifest, score_pairs
from naturalness.score import Score, Scorer, refuse_cues
from naturalness.scorers import DEFAULT_SCORER, load_scorer
from naturalness.turn_cue import smart_turn_cues
from speech.models import ModelError
from speech.recordings import RecordingError, load_recording_audio
from speech.smart_turn import SmartTurn

CUE = "smart-turn-v3.2"


def _bar(items, desc: str, unit: str, total: int | None = None):
    """A tqdm bar over `items` on stderr when it is a terminal (counts, rate, ETA); none in logs."""
    return tqdm(items, desc=desc, unit=unit, total=total, disable=None)


def recording_scorer(scorer: Scorer, audio_cue: bool = False):
    """`score_file(path) -> Score`; with `audio_cue`, Smart Turn cues from the recording's audio
    inform a scorer that `takes_cues` (timing-hazard)."""
    if not audio_cue:
        return scorer.score_recording
    if not scorer.takes_cues:
        refuse_cues(scorer.name, audio_cue)
    try:
        cue_model = SmartTurn()
    except ModelError as exc:  # the file is missing or not the pinned one
        raise ValueError(f"--audio-cue: {exc}") from None

    def score_file(path) -> Score:
        path = Path(path)
        if path.suffix.lower() == ".json":
            raise RecordingError(f"{path}: --audio-cue needs two-channel audio, not voice activity")
        conv, audio = load_recording_audio(path)
        return scorer.score(conv, smart_turn_cues(audio, conv, cue_model))

    return score_file


def naturalness_report(recordings, scorer_name: str = DEFAULT_SCORER, model_file=None, audio_cue: bool = False) -> dict:
    """Naturalness of each recording by one named scorer (naturalness.scorers)."""
    scorer = load_scorer(scorer_name, model_file)
    score_file = recording_scorer(scorer, audio_cue)
    rows = [{"recording": str(p), **score_file(p).as_dict()} for p in _bar(recordings, "naturalness", "recording")]
    return {"scorer": scorer.name, "audio_cue": CUE if audio_cue else None, "units": scorer.units,
            "dialogues": rows, "params": scorer.params}


def pairs_from_manifest(manifest, scorer_name: str = DEFAULT_SCORER, model_file=None, audio_cue: bool = False) -> dict:
    """Score difference (perturbed - natural), pair accuracy and C-index of one named scorer on a
    pairs manifest."""
    entries = read_pairs_manifest(manifest)
    scorer = load_scorer(scorer_name, model_file)
    files = list(dict.fromkeys(p for e in entries for p in (e.natural, e.perturbed)))
    if audio_cue:
        score_file = recording_scorer(scorer, audio_cue)
        scores = {p: score_file(p) for p in _bar(files, "clips", "clip")}
    else:
        scores = dict(zip(files, _bar(scorer.score_recordings(files), "clips", "clip", total=len(files))))
    report = pairs_report(score_pairs(entries, scores.__getitem__))
    report.update({"manifest": str(manifest), "scorer": scorer.name, "audio_cue": CUE if audio_cue else None,
                   "units": scorer.units, "params": scorer.params})
    return report
