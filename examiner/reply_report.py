"""Whether a system's answers in a run answer the questions asked (studies.reply_quality): for the
smooth turn-taking task, each example's question (its `example.json` text) and what the system
said (its `output.json` words, as FDB's scoring reads them), with the relevance measured against
the run's other questions, apologies, assistant disclaimers and long answers.

Any kind gets the same reading (the words come from the output audio, not the system's own
log), so an embedded cascade and a researcher's server are compared alike.
"""

from __future__ import annotations

import json
from pathlib import Path

from studies.reply_quality import ReplyLikelihood, reply_qualities, summarize

REPLY_TASKS = ("smooth_turn_taking",)


def answered_examples(task_dir: Path) -> list[tuple[str, str, str]]:
    """(example, question, answer) of each called example with words written (output.json)."""
    rows = []
    for folder in sorted((p for p in task_dir.iterdir() if (p / "call.json").exists()), key=lambda p: int(p.name)):
        facts = json.loads((folder / "example.json").read_text())
        output = folder / "output.json"
        answer = json.loads(output.read_text()).get("text", "") if output.exists() else ""
        rows.append((folder.name, str(facts.get("text", "")), str(answer).strip()))
    return rows


def reply_report(task_dir: Path, scorer: ReplyLikelihood) -> dict:
    """The task's answers, each measured, and their summary (CallReplyQuality's figures)."""
    rows = answered_examples(task_dir)
    qualities = reply_qualities(scorer, [q for _, q, _ in rows], [a for _, _, a in rows])
    answered = [q for row, q in zip(rows, qualities) if row[2]]
    return {**summarize(answered).as_dict(),
            "rows": [{"example": row[0], "question": row[1], "answer": row[2],
                      "relevance": None if q.relevance is None else round(q.relevance, 3),
                      "echo": q.echo, "apology": q.apology, "disclaimer": q.disclaimer, "sentences": q.sentences}
                     for row, q in zip(rows, qualities)]}
