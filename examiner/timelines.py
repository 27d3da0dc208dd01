"""One examined example on one time axis, as plain JSON (`RUN/<task>/<k>/timeline.json`, stored
per example with `--store`): what the researcher's timeline figure draws, and nothing else.

    channels   both channels' speech (Silero, as the scores read it) and a small waveform
               envelope: "user" is what the system heard (input.wav), "system" what it said
    words      the system's words with times (output.json: given or the packaged ASR's)
    user_text  what the user channel says, on the task's known speech spans
    marks      the task's known times: pause, turn end, the event played (interruption,
               "mm-hmm", background speech, cough) and the system's onset it was scheduled on
    decision   how the score was decided: FDB's take-over turn (first word to last word), the
               latency span, the backchannel segments, the overlap probe's stop time
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from examiner.output_words import SAMPLE_RATE, fdb_speech_segments, output_signal

ENVELOPE_BINS = 400  # enough to see speech on a 10-60 s example; about 8 kB of JSON per example
EVENT_NAMES = {"user_interruption": "interruption", "user_backchannel": "user backchannel",
               "background_speech": "background speech", "noise_burst": "noise burst"}


def _round(values, digits: int = 3):
    return [round(float(v), digits) for v in values]


def envelope(signal: np.ndarray, bins: int = ENVELOPE_BINS) -> dict:
    """{"min", "max"} of the signal in `bins` equal stretches (the figure's waveform)."""
    bins = max(1, min(bins, len(signal)))
    edges = np.linspace(0, len(signal), bins + 1).astype(int)
    if not len(signal):
        return {"min": [], "max": []}
    return {"min": _round(np.minimum.reduceat(signal, edges[:-1]), 4),
            "max": _round(np.maximum.reduceat(signal, edges[:-1]), 4)}


def _segments(signal: np.ndarray) -> list[list[float]]:
    return [_round(pair) for pair in fdb_speech_segments(signal)]


def _words(folder: Path) -> list[dict]:
    path = folder / "output.json"
    if not path.exists():
        return []
    chunks = json.loads(path.read_text()).get("chunks", [])
    return [{"text": c.get("text", ""), "start": c["timestamp"][0], "end": c["timestamp"][1]} for c in chunks]


def _marks(facts: dict, call: dict) -> dict:
    task = facts["task"]
    marks = {"turn_end_s": facts.get("turn_end")}
    if "pause" in facts:
        marks["pause"] = facts["pause"]
    if "pauses" in facts:
        marks["pauses"] = facts["pauses"]
    if task in EVENT_NAMES:
        marks["event"] = call.get("event") or facts.get("event")
        marks["event_name"] = EVENT_NAMES[task]
        marks["event_text"] = facts.get("event_text")
        marks["system_onset_s"] = call.get("system_onset_s")
        marks["onset_heard"] = call.get("onset_heard")
    return marks


def decision_of(task: str, fdb_row: dict | None, overlap_row: dict | None) -> dict:
    """Where the example's score was decided, from its rows in the run's scores."""
    decision: dict = {}
    if fdb_row is not None and task == "backchannel":
        decision.update({"rule": "FDB backchannel scan", "tor": fdb_row["tor"],
                         "backchannels": [list(b) for b in fdb_row["backchannels"]],
                         "frequency_per_s": fdb_row["frequency_per_s"], "jsd": fdb_row["jsd"],
                         "words_from": fdb_row["words_from"]})
    elif fdb_row is not None:
        first, duration = fdb_row["first_word_s"], fdb_row["duration_s"]
        decision.update({"rule": "FDB take-over", "tor": fdb_row["tor"], "words": fdb_row["words"],
                         "turn": None if first is None else [first, first + (duration or 0.0)],
                         "user_end_s": fdb_row["user_end_s"], "latency_s": fdb_row["latency_s"],
                         "words_from": fdb_row["words_from"]})
        if fdb_row["latency_s"] is not None:
            decision["latency"] = [fdb_row["user_end_s"], fdb_row["user_end_s"] + fdb_row["latency_s"]]
    if overlap_row is not None:
        decision["overlap"] = {k: overlap_row[k] for k in ("speaking", "stop_time_s", "stopped", "overlap_s",
                                                         "response_latency_s")}
    return decision


def example_timeline(folder: Path, fdb_row: dict | None = None, overlap_row: dict | None = None) -> dict:
    """The timeline of one run example folder (input.wav, output.wav, example.json, call.json)."""
    facts = json.loads((folder / "example.json").read_text())
    call = json.loads((folder / "call.json").read_text()) if (folder / "call.json").exists() else {}
    heard, said = output_signal(folder / "input.wav"), output_signal(folder / "output.wav")
    duration = len(heard) / SAMPLE_RATE
    speech = facts.get("speech", [])
    # The user's text over its known speech, first start to last end (the channel's speech shows the pauses).
    user_text = [{"text": facts["text"], "start": speech[0][0], "end": speech[-1][1]}] if speech else []
    return {"task": facts["task"], "example": folder.name, "duration_s": round(duration, 3), "voice": facts.get("voice"),
            "channels": {"user": {"speech": _segments(heard), **envelope(heard)},
                         "system": {"speech": _segments(said), **envelope(said)}},
            "words": _words(folder), "user_text": user_text, "marks": _marks(facts, call),
            "decision": decision_of(facts["task"], fdb_row, overlap_row)}
