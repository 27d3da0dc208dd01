"""A task set of two short examples in FDB's layout, for examining a remote system in real time
(the Moshi server, the pipecat bot): a question, then the room to answer."""

from __future__ import annotations

import json

from tests.rendered_speech import Utterance, render_speech

EXAMPLE_S = 4.0  # short examples: the call runs in real time
QUESTIONS = {"smooth_turn_taking": "what time is it now", "pause_handling": "i would like to"}


def short_task_set(root):
    """Two examples in FDB's layout, 4 s each, made as `make-tasks` makes them (a question, then
    the room to answer), shorter so that the real-time calls stay short."""
    (root).mkdir(parents=True)
    (root / "manifest.json").write_text(json.dumps({"seed": 0, "tasks": list(QUESTIONS), "per_task": 1,
                                                    "example_s": EXAMPLE_S}))
    for task, text in QUESTIONS.items():
        folder = root / task / "0"
        folder.mkdir(parents=True)
        speech = render_speech([Utterance(0, 0.5, text)], EXAMPLE_S, channels=1)
        speech.write(folder / "input.wav")
        placed = speech.utterances[0]
        facts = {"task": task, "index": 0, "seed": 0, "voice": "espeak-ng en-us", "duration_s": EXAMPLE_S,
                 "text": text, "speech": [[placed.start, placed.end]], "turn_end": placed.end}
        (folder / "example.json").write_text(json.dumps(facts))
        if task == "smooth_turn_taking":
            (folder / "turn_taking.json").write_text(json.dumps([{"text": "[TURN-TAKING]",
                                                                  "timestamp": [placed.end, EXAMPLE_S]}]))
    return root
