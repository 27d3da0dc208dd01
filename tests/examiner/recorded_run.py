"""A recorded examiner run for the tests that read runs (timelines, the view, the report, the
export, the browser): the run folder a call of `python -m examiner run` leaves, with espeak-ng
speech rendered at known times in place of a live call (a live call costs real time per example;
tests/examiner/test_run_cascade.py makes those). `python -m examiner run` over it resumes
without calling: it scores, writes the timelines and stores them like any run.

    smooth_turn_taking/0   a question, the system's answer 0.6 s after it ends
    user_interruption/0    a question, the system's long answer, the user's "wait, stop" over it
                           (the system talks on: no barge-in)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tests.rendered_speech import Utterance, render_speech

TASKS = ("smooth_turn_taking", "user_interruption")
QUESTION = "what time is it now"
ANSWER = "it is about three in the afternoon"
LONG_ANSWER = "the museum opens at nine in the morning and closes at six in the evening every day of the week"
INTERRUPTION = "wait stop"
DURATION_S = 12.0


@dataclass(frozen=True)
class RecordedRun:
    task_set: Path
    run: Path
    known: dict  # task -> {"turn_end", "answer": (start, end), "event": (start, end)}


def _write(path: Path, utterances) -> list:
    speech = render_speech(utterances, DURATION_S, channels=1)
    speech.write(path)
    return speech.utterances


def output_words_json(placed) -> dict:
    """output.json: each utterance's words spread evenly over its audible span."""
    chunks = []
    for u in placed:
        words = u.text.split()
        step = (u.end - u.start) / len(words)
        chunks += [{"text": w, "timestamp": [round(u.start + k * step, 3), round(u.start + (k + 1) * step, 3)]}
                   for k, w in enumerate(words)]
    return {"text": " ".join(c["text"] for c in chunks), "chunks": chunks}


def recorded_run(root: Path) -> RecordedRun:
    task_set, run = root / "set", root / "run"
    known = {}
    (task_set).mkdir(parents=True)
    (task_set / "manifest.json").write_text(json.dumps({"seed": 0, "tasks": list(TASKS), "per_task": 1,
                                                        "rendered_for_tests": True}))
    for task in TASKS:
        out = run / task / "0"
        out.mkdir(parents=True)
        question = _write(out / "input.wav", [Utterance(0, 0.5, QUESTION)])[0]
        facts = {"task": task, "index": 0, "seed": 0, "voice": "espeak-ng en-us", "duration_s": DURATION_S,
                 "text": QUESTION, "speech": [[question.start, question.end]], "turn_end": question.end}
        call = {"system": "cascaded", "example": str(task_set / task / "0"), "duration_s": DURATION_S,
                "late_blocks": 0, "wall_s": DURATION_S}
        if task == "smooth_turn_taking":
            answer = _write(out / "output.wav", [Utterance(0, question.end + 0.6, ANSWER, "en-us+f3")])
            (out / "turn_taking.json").write_text(json.dumps([{"text": "[TURN-TAKING]",
                                                               "timestamp": [question.end, DURATION_S]}]))
        else:
            answer = _write(out / "output.wav", [Utterance(0, question.end + 0.5, LONG_ANSWER, "en-us+f3")])
            onset = answer[0].start
            both = _write(out / "input.wav", [Utterance(0, 0.5, QUESTION), Utterance(0, onset + 1.5, INTERRUPTION)])
            event = (both[1].start, both[1].end)
            facts.update({"event": list(event), "event_text": INTERRUPTION,
                          "schedule": {"context": "context.wav", "event": "event.wav", "after_system_onset_s": 1.5}})
            call.update({"system_onset_s": onset, "event": list(event), "onset_heard": True})
            (out / "interrupt.json").write_text(json.dumps([{"context": QUESTION, "interrupt": INTERRUPTION,
                                                             "timestamp": list(event)}]))
            known[task] = {"event": event}
        known.setdefault(task, {}).update({"turn_end": question.end, "answer": (answer[0].start, answer[0].end)})
        (out / "output.json").write_text(json.dumps(output_words_json(answer)))
        (out / "example.json").write_text(json.dumps({**facts, "run": call}))
        (out / "call.json").write_text(json.dumps(call))
        (task_set / task / "0").mkdir(parents=True)
        (task_set / task / "0" / "example.json").write_text(json.dumps(facts))
    return RecordedRun(task_set, run, known)
