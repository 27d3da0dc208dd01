"""How well a system heard the examiner's questions: the word error rate of each smooth
turn-taking call's final transcript (the last `transcript` event of its timing log: a pause
restarts the recognition with the words before, so the last holds the whole turn) against the
question spoken. Systems that log no transcript (a Moshi or realtime peer) have none.

Compared between two runs by `python -m examiner compare` (examiner.paired_runs): a change to the
recognition (streaming, a smaller window) must not hear the questions worse.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from speech.word_errors import compared_words, edit_distance

QUESTION_TASK = "smooth_turn_taking"  # its examples hold the question spoken ("text")


@dataclass(frozen=True)
class TranscriptErrors:
    calls: int  # calls with a question and a transcript
    words: int  # the questions' words
    errors: int  # edits from the transcripts to the questions

    @property
    def word_error_rate(self) -> float | None:
        return self.errors / self.words if self.words else None


def final_transcript(call_log: Path) -> str | None:
    """The last transcript a call's timing log (call.jsonl) holds; None: none."""
    if not call_log.is_file():
        return None
    last = None
    for line in call_log.read_text().splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut by a call that ended abruptly
        if event.get("event") == "transcript" and isinstance(event.get("text"), str):
            last = event["text"]
    return last


def example_word_errors(run: Path | str) -> dict[str, tuple[int, int]]:
    """{example: (the question's words, edits from the final transcript to them)} of a run's
    smooth turn-taking calls that hold a question and logged a transcript."""
    folder, per_example = Path(run) / QUESTION_TASK, {}
    for example in sorted(folder.iterdir()) if folder.is_dir() else ():
        facts = example / "example.json"
        heard = final_transcript(example / "call.jsonl")
        if heard is None or not facts.is_file():
            continue
        question = compared_words(json.loads(facts.read_text()).get("text") or "")
        if question:
            per_example[example.name] = (len(question), edit_distance(compared_words(heard), question))
    return per_example


def transcript_errors(per_example: dict[str, tuple[int, int]], examples) -> TranscriptErrors:
    """The word errors summed over `examples` (names in `per_example`)."""
    return TranscriptErrors(len(examples), sum(per_example[e][0] for e in examples),
                            sum(per_example[e][1] for e in examples))
