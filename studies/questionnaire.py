"""The questionnaire a participant answers after each call and, once, after the last call.

A study file may write its own; without one the study gets `DEFAULT_QUESTIONNAIRE`, on
turn-taking (answered at the right time, interrupted me, made me wait, let me finish,
backchannels, overall naturalness, and an open comment), and, with two systems or more, a ranking
of the systems after the last call:

    questionnaire:
      after_call:
        - {id: right_time, kind: scale, text: "The system answered at the right time.",
           points: 5, labels: ["Strongly disagree", "Strongly agree"]}
        - {id: waited, kind: scale, text: "The system made me wait.", points: 7,
           labels: ["Never", "All the time"], reverse_keyed: true}
        - {id: topic_kept, kind: choice, text: "Did the system stay on topic?", options: ["yes", "partly", "no"]}
        - {id: comment, kind: text, text: "Anything else?", required: false}
      after_last:
        - {id: most_natural, kind: pick, text: "Which system was the most natural to talk to?"}
        - {id: ranking, kind: rank, text: "Rank the systems, most natural first."}

Item kinds: `scale` (5 or 7 points, labels of its two ends; `reverse_keyed: true` when a higher
answer means worse turn-taking, e.g. "interrupted me"), `choice` (one of `options`), `text`
(free, at most 2000 characters), and after the last call `pick` (one of the systems) or `rank`
(all of them in order). Every item is required unless it says `required: false`. The systems are
named to the participant as they were during the calls ("System 1", "System 2"): the answers
carry those labels and the stored row the labels' systems.

Answers arrive as a mapping of item id to value; `answer_problem` says in one line what is wrong
with them (the participant API answers 400 with it), else they are stored as given.
"""

from __future__ import annotations

from dataclasses import dataclass

ITEM_KINDS = ("scale", "choice", "text", "pick", "rank")
AFTER_CALL_KINDS = ("scale", "choice", "text")
AFTER_LAST_KINDS = ("scale", "choice", "text", "pick", "rank")
SCALE_POINTS = (5, 7)
TEXT_MAX = 2000
AGREEMENT = ("Strongly disagree", "Strongly agree")


class QuestionnaireError(ValueError):
    """A questionnaire in a study file that cannot be used; the message says which item and why."""


@dataclass(frozen=True)
class QuestionnaireItem:
    id: str
    kind: str  # ITEM_KINDS
    text: str
    required: bool = True
    points: int | None = None  # a scale's number of points
    labels: tuple[str, str] | None = None  # a scale's two ends, lowest first
    reverse_keyed: bool = False  # a scale on which a higher answer means worse turn-taking
    options: tuple[str, ...] = ()  # a choice's options

    def as_dict(self) -> dict:
        data = {"id": self.id, "kind": self.kind, "text": self.text, "required": self.required}
        if self.kind == "scale":
            data |= {"points": self.points, "labels": list(self.labels), "reverse_keyed": self.reverse_keyed}
        if self.kind == "choice":
            data["options"] = list(self.options)
        return data


@dataclass(frozen=True)
class Questionnaire:
    after_call: tuple[QuestionnaireItem, ...]
    after_last: tuple[QuestionnaireItem, ...] = ()

    def as_dict(self) -> dict:
        return {"after_call": [item.as_dict() for item in self.after_call],
                "after_last": [item.as_dict() for item in self.after_last]}

    def part(self, name: str) -> tuple[QuestionnaireItem, ...]:
        """The items of 'after_call' or 'after_last'."""
        return self.after_call if name == "after_call" else self.after_last


def _agreement(item_id: str, text: str, reverse_keyed: bool = False) -> QuestionnaireItem:
    return QuestionnaireItem(item_id, "scale", text, points=5, labels=AGREEMENT, reverse_keyed=reverse_keyed)


DEFAULT_AFTER_CALL = (
    _agreement("right_time", "The system answered at the right time."),
    _agreement("interrupted_me", "The system interrupted me.", reverse_keyed=True),
    _agreement("made_me_wait", "The system made me wait for its answers.", reverse_keyed=True),
    _agreement("let_me_finish", "The system let me finish what I was saying."),
    _agreement("backchannels_natural",
               "The system's short sounds while I was speaking (like \"mm-hmm\") felt natural."),
    _agreement("overall_natural", "Overall, talking with the system felt natural."),
    QuestionnaireItem("comment", "text", "Anything else you noticed about this conversation? (optional)",
                      required=False),
)
DEFAULT_AFTER_LAST = (
    QuestionnaireItem("most_natural", "rank",
                      "Put the systems in order: the one that was most natural to talk to first."),
)


def default_questionnaire(n_systems: int) -> Questionnaire:
    """The default: the turn-taking items after each call; the ranking once there are systems to rank."""
    return Questionnaire(DEFAULT_AFTER_CALL, DEFAULT_AFTER_LAST if n_systems >= 2 else ())


def parse_questionnaire(data, n_systems: int) -> Questionnaire:
    """A study file's `questionnaire`, or a study's stored one (`as_dict`), checked item by item;
    None: the default."""
    if data is None:
        return default_questionnaire(n_systems)
    if not isinstance(data, dict) or set(data) - {"after_call", "after_last"}:
        raise QuestionnaireError("'questionnaire' must be a mapping with 'after_call' and/or 'after_last' "
                                 "(each a list of items)")
    after_call = _items(data.get("after_call") or [], "after_call", AFTER_CALL_KINDS)
    after_last = _items(data.get("after_last") or [], "after_last", AFTER_LAST_KINDS)
    ids = [item.id for item in after_call + after_last]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise QuestionnaireError(f"item id(s) {', '.join(repeated)} used more than once")
    if n_systems < 2 and any(item.kind in ("pick", "rank") for item in after_last):
        raise QuestionnaireError("a 'pick' or 'rank' item needs a study with two systems or more")
    return Questionnaire(after_call, after_last)


def _items(entries, part: str, kinds: tuple[str, ...]) -> tuple[QuestionnaireItem, ...]:
    if not isinstance(entries, list):
        raise QuestionnaireError(f"'{part}' must be a list of items")
    return tuple(_item(entry, f"{part} item #{n}", kinds) for n, entry in enumerate(entries, 1))


def _item(entry, where: str, kinds: tuple[str, ...]) -> QuestionnaireItem:
    if not isinstance(entry, dict):
        raise QuestionnaireError(f"{where} must be a mapping (id, kind, text, ...)")
    known = {"id", "kind", "text", "required", "points", "labels", "reverse_keyed", "options"}
    unknown = sorted(set(entry) - known)
    if unknown:
        raise QuestionnaireError(f"{where} has unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    item_id = entry.get("id")
    if not isinstance(item_id, str) or not item_id.replace("_", "").replace("-", "").isalnum():
        raise QuestionnaireError(f"{where} needs an 'id' of letters, digits, '-' and '_'")
    where = f"{where} ({item_id})"
    kind = entry.get("kind")
    if kind not in kinds:
        raise QuestionnaireError(f"{where} has unknown kind {kind!r} (known here: {', '.join(kinds)})")
    text = entry.get("text")
    if not isinstance(text, str) or not text.strip():
        raise QuestionnaireError(f"{where} has no 'text' (the question the participant reads)")
    required = entry.get("required", True)
    if not isinstance(required, bool):
        raise QuestionnaireError(f"{where}: 'required' must be true or false")
    if kind == "scale":
        points = entry.get("points", 5)
        if points not in SCALE_POINTS or isinstance(points, bool):
            raise QuestionnaireError(f"{where}: 'points' must be 5 or 7, got {points!r}")
        labels = entry.get("labels")
        if (not isinstance(labels, list) or len(labels) != 2
                or not all(isinstance(label, str) and label.strip() for label in labels)):
            raise QuestionnaireError(f"{where}: a scale needs 'labels': the texts of its two ends, lowest first")
        reverse = entry.get("reverse_keyed", False)
        if not isinstance(reverse, bool):
            raise QuestionnaireError(f"{where}: 'reverse_keyed' must be true or false")
        return QuestionnaireItem(item_id, kind, text.strip(), required, points,
                                 (labels[0].strip(), labels[1].strip()), reverse)
    extra = sorted({"points", "labels", "reverse_keyed"} & set(entry))
    if extra:
        raise QuestionnaireError(f"{where}: {', '.join(extra)} belong(s) to a scale, not a {kind}")
    if kind == "choice":
        options = entry.get("options")
        if (not isinstance(options, list) or len(options) < 2
                or not all(isinstance(o, str) and o.strip() for o in options) or len(set(options)) != len(options)):
            raise QuestionnaireError(f"{where}: a choice needs 'options': two different texts or more")
        return QuestionnaireItem(item_id, kind, text.strip(), required, options=tuple(o.strip() for o in options))
    if "options" in entry:
        raise QuestionnaireError(f"{where}: 'options' belong to a choice, not a {kind}")
    return QuestionnaireItem(item_id, kind, text.strip(), required)


def answer_problem(items: tuple[QuestionnaireItem, ...], answers, system_labels: list[str] = ()) -> str | None:
    """What is wrong with a participant's answers, in one line; None when they can be stored.

    `system_labels` are the labels of the systems the participant met ("system-1", ...), which
    a pick or a rank chooses among.
    """
    if not isinstance(answers, dict):
        return "'answers' must be a mapping of item id to answer"
    by_id = {item.id: item for item in items}
    unknown = sorted(set(answers) - set(by_id))
    if unknown:
        return f"unknown item(s) {', '.join(map(str, unknown))}"
    for item in items:
        value = answers.get(item.id)
        if value is None or value == "" or value == []:
            if item.required:
                return f"please answer: {item.text}"
            continue
        problem = _value_problem(item, value, list(system_labels))
        if problem:
            return f"{item.text} {problem}"
    return None


def _value_problem(item: QuestionnaireItem, value, labels: list[str]) -> str | None:
    if item.kind == "scale":
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= item.points:
            return f"needs a whole number from 1 to {item.points}"
    elif item.kind == "choice":
        if value not in item.options:
            return f"needs one of: {', '.join(item.options)}"
    elif item.kind == "text":
        if not isinstance(value, str):
            return "needs a text"
        if len(value) > TEXT_MAX:
            return f"is at most {TEXT_MAX} characters (got {len(value)})"
        if item.required and not value.strip():
            return "needs an answer"
    elif item.kind == "pick":
        if value not in labels:
            return f"needs one of the systems you talked to ({', '.join(labels)})"
    elif item.kind == "rank":
        if not isinstance(value, list) or sorted(value) != sorted(labels):
            return f"needs every system you talked to once, in your order ({', '.join(labels)})"
    return None
