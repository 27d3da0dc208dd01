"""The automatic examiner's stored rows (`python -m examiner run --store`) for a study's systems,
FDB v1.0's published rows beside them, each stored example with its timeline, and each system's
examiner row beside what the study measured of it. Read only: the examiner computes them."""

from __future__ import annotations

import pandas as pd
from sqlmodel import Session, select

from analysis.study import StudyData, finite
from examiner.table import JUDGE_NOTE, PUBLISHED_FDB_V1, system_label
from storage.models import DialogueSystem, ExaminerExample, ExaminerRun
from storage.records import examiner_examples, examiner_runs
from systems import SystemError_, system_kind

FDB_COLUMNS = ("pause_tor", "backchannel_tor", "backchannel_frequency_per_s", "backchannel_jsd", "smooth_tor",
               "smooth_latency_s", "interruption_tor", "interruption_latency_s", "interruption_judge")
PROBE_COLUMNS = ("barge_in_stopped", "barge_in_stop_time_s", "false_barge_in_backchannel",
                 "false_barge_in_background", "false_barge_in_noise")
# the monologues' backchannels against Switchboard's listeners on the same speech
# (examiner/switchboard_backchannels.py)
SWITCHBOARD_COLUMNS = ("backchannel_rate_ratio_switchboard", "backchannel_timing_jsd_switchboard",
                       "backchannel_timing_jsd_listener")  # a listener timed as Switchboard's, as many backchannels
INTERVAL_COLUMNS = ("smooth_tor_ci95", "smooth_latency_ci95", "interruption_tor_ci95", "interruption_latency_ci95")


def _interval(value) -> str | None:
    return None if not value else f"{value[0]:.3f}-{value[1]:.3f}"


def canonical_kind(kind: str) -> str:
    """The kind's registry name (a database row may carry an alias: "full-duplex", the demo's kind before)."""
    try:
        return system_kind(kind).name
    except SystemError_:
        return kind


def examined_labels(kind: str, config: dict) -> list[str]:
    """The labels a system's examiner runs may be stored under: its kind's name with its config,
    then the kind's former names (a run stored before the kind was renamed)."""
    try:
        names = (system_kind(kind).name, *system_kind(kind).aliases)
    except SystemError_:
        names = (kind,)
    return [system_label(name, config) for name in names]


def latest_runs(engine, data: StudyData) -> list[tuple[DialogueSystem, str, ExaminerRun | None]]:
    """(study system, the label it is examined as, its latest stored run or None), by system id."""
    out = []
    with Session(engine) as session:
        systems = session.exec(select(DialogueSystem).where(DialogueSystem.study_id == data.study_id)
                               .order_by(DialogueSystem.id)).all()
        for system in systems:
            labels = examined_labels(system.kind, dict(system.config or {}))
            found = next(((label, stored[0]) for label in labels if (stored := examiner_runs(session, label))), None)
            out.append((system, *(found or (labels[0], None))))
    return out


def examiner_table(engine, data: StudyData) -> pd.DataFrame:
    """One row per study system: its latest stored examiner row (empty cells where none is stored).
    `interruption_judge` stays empty: FDB's GPT-4 rating has no offline equal (JUDGE_NOTE)."""
    # the measures right after the system's name, what it was examined as (a long label) last: on a
    # laptop's screen the measures were off to the right
    columns = ["system", *FDB_COLUMNS, *INTERVAL_COLUMNS, *PROBE_COLUMNS, *SWITCHBOARD_COLUMNS, "calls",
               "task_set_seed", "kind", "examined_as", "stored_at"]
    rows = []
    for system, label, latest in latest_runs(engine, data):
        row = {"system": system.name, "kind": system.kind, "examined_as": label}
        if latest is not None:
            row.update({"calls": latest.calls, "task_set_seed": latest.task_set.get("seed"),
                        "stored_at": latest.updated_at.isoformat(timespec="seconds")})
            row.update({c: latest.summary.get(c) for c in (*FDB_COLUMNS, *PROBE_COLUMNS, *SWITCHBOARD_COLUMNS)})
            row.update({c: _interval(latest.summary.get(c)) for c in INTERVAL_COLUMNS})
        rows.append(row)
    table = pd.DataFrame(rows, columns=columns)
    # numbers, empty where none (interruption_judge always): a CSV reads an empty cell back as NaN
    for column in (*FDB_COLUMNS, *PROBE_COLUMNS, *SWITCHBOARD_COLUMNS):
        table[column] = table[column].astype(float)
    return table


EXAMPLE_COLUMNS = ("example_id", "system", "examined_as", "task", "example", "tor", "latency_s", "words",
                   "first_word_s", "user_end_s", "event_start_s", "event_end_s", "speaking_at_event", "stopped",
                   "stop_time_s", "interruption_judge", "words_from")


def example_row(system: str, label: str, example: ExaminerExample) -> dict:
    """One stored example in the examples table (and the dataset export's examiner split); a run's
    examples are numbered folders (examiner/runs.py)."""
    timeline = example.timeline
    decision, marks = timeline.get("decision", {}), timeline.get("marks", {})
    overlap = decision.get("overlap", {})
    event = marks.get("event") or (None, None)
    return {"example_id": example.id, "system": system, "examined_as": label, "task": example.task,
            "example": int(example.example), "tor": example.tor, "latency_s": example.latency_s,
            "words": decision.get("words"), "first_word_s": (decision.get("turn") or (None,))[0],
            "user_end_s": decision.get("user_end_s"), "event_start_s": event[0], "event_end_s": event[1],
            "speaking_at_event": overlap.get("speaking"), "stopped": overlap.get("stopped"),
            "stop_time_s": overlap.get("stop_time_s"), "interruption_judge": None,
            "words_from": decision.get("words_from")}


def stored_examples(engine, data: StudyData) -> list[tuple[str, str, ExaminerExample]]:
    """(study system, examined as, example) of every study system's latest stored run."""
    out = []
    for system, label, latest in latest_runs(engine, data):
        if latest is None:
            continue
        with Session(engine) as session:
            out += [(system.name, label, example) for example in examiner_examples(session, latest.id)]
    return out


def examples_table(engine, data: StudyData) -> pd.DataFrame:
    """Every stored example of the study systems' latest runs, one row each."""
    rows = [example_row(system, label, example) for system, label, example in stored_examples(engine, data)]
    table = pd.DataFrame(rows, columns=list(EXAMPLE_COLUMNS))
    # 1 / 0, empty where the system was not speaking at the event: a column of numbers, as the
    # probe's shares in the examiner's row (a CSV cannot say "no value" in a column of booleans)
    for column in ("speaking_at_event", "stopped", "interruption_judge"):
        table[column] = table[column].astype(float)
    return table


def example_label(system: str, task: str, example: str) -> str:
    return f"{system} / {task} / {example}"


def example_choices(engine, data: StudyData) -> list[tuple[str, int]]:
    """(system / task / example, the stored example's id), for the view's dropdown."""
    return [(example_label(system, example.task, example.example), example.id)
            for system, _, example in stored_examples(engine, data)]


def stored_example(engine, data: StudyData, example_id: int) -> tuple[str, ExaminerExample] | None:
    """(study system, example) of one of the study's stored examples (None: not one of them)."""
    for system, _, example in stored_examples(engine, data):
        if example.id == int(example_id):
            return system, example
    return None


def published_table() -> pd.DataFrame:
    return pd.DataFrame([{"system": f"{name} (FDB v1.0, published)", **row} for name, row in PUBLISHED_FDB_V1.items()],
                        columns=["system", *FDB_COLUMNS])


def interruption_judge_note() -> str:
    return f"interruption_judge is empty: {JUDGE_NOTE}."


# -- the examiner's row beside what the study measured of the same system -------------------------

STUDY_SIDE_NOTE = ("The study's statistics are pooled over both speakers of a system's sessions (participant and "
                   "system), as the statistics view shows them; the examiner's are the system's alone.")


def _study_measures(system: str, per_system: dict, interruptions: pd.DataFrame, agreement: pd.DataFrame,
                    naturalness: pd.DataFrame) -> dict:
    """The study's numbers of one system, looked up in the tables the other views show."""
    out = {}
    stats = per_system.get(system)
    if stats is not None:
        out["fto_median_s"] = finite(stats["floor_transfer_offset"]["percentiles_s"].get("50"))
        out["gap_per_minute"] = finite(stats["per_minute"].get("gap"))
        out["overlap_percent"] = finite(stats["percent"].get("overlap"))
        out["backchannel_words_per_minute"] = finite(stats.get("backchannel_rate_wpm"))
    own = interruptions[interruptions["system"] == system] if len(interruptions) else interruptions
    if len(own):
        out["user_interruptions"] = int(own.iloc[0]["user_interruptions"])
        out["floor_taking_percent"] = finite(own.iloc[0]["floor_taking_percent"])
    if len(agreement):
        for metric in ("speak_up", "backchannel", "handle_interruption"):
            rows = agreement[(agreement["series"] == system) & (agreement["metric"] == metric)]
            if len(rows):  # the first decision: the positive one ("speaks up", "backchannels", ...)
                out[f"judge_{metric}"] = (rows.iloc[0]["decision"], finite(rows.iloc[0]["agreement_percent"]))
    own = naturalness[naturalness["system"] == system] if len(naturalness) else naturalness
    if len(own):
        out["naturalness"] = finite(own.iloc[0]["mean_naturalness"])
    return out


def _pairs(row: dict, study: dict) -> list[tuple[str, str, object, str, object]]:
    """(behaviour, examiner measure, its value, study measure, its value) of one system."""
    def judge(metric):
        decision, value = study.get(f"judge_{metric}", (None, None))
        return f"judge {metric}: agreement % ({decision or '-'})", value

    return [
        ("answers at a turn end", "smooth_tor", row.get("smooth_tor"), "gap /min", study.get("gap_per_minute")),
        ("answers at a turn end", "smooth_latency_s", row.get("smooth_latency_s"), "floor-transfer offset median s",
         study.get("fto_median_s")),
        ("answers at a turn end", "smooth_tor", row.get("smooth_tor"), *judge("speak_up")),
        ("waits through a pause", "pause_tor", row.get("pause_tor"), "overlap % of time", study.get("overlap_percent")),
        ("yields to an interruption", "barge_in_stopped", row.get("barge_in_stopped"),
         "user interruptions that took the floor %", study.get("floor_taking_percent")),
        ("yields to an interruption", "barge_in_stop_time_s", row.get("barge_in_stop_time_s"),
         *judge("handle_interruption")),
        ("yields to an interruption", "interruption_tor", row.get("interruption_tor"), "user interruptions",
         study.get("user_interruptions")),
        ("sound not addressed to it", "false_barge_in_noise", row.get("false_barge_in_noise"), "overlap % of time",
         study.get("overlap_percent")),
        ("sound not addressed to it", "false_barge_in_background", row.get("false_barge_in_background"),
         "overlap % of time", study.get("overlap_percent")),
        ("sound not addressed to it", "false_barge_in_backchannel", row.get("false_barge_in_backchannel"),
         "overlap % of time", study.get("overlap_percent")),
        ("backchannels", "backchannel_frequency_per_s", row.get("backchannel_frequency_per_s"),
         "backchannel words /min", study.get("backchannel_words_per_minute")),
        ("backchannels", "backchannel_tor", row.get("backchannel_tor"), *judge("backchannel")),
        ("overall", "-", None, "mean naturalness (default scorer)", study.get("naturalness")),
    ]


def _number(value):
    return None if value is None or (isinstance(value, float) and value != value) else value


def disagreements(system: str, row: dict, study: dict) -> list[str]:
    """Sentences where the examiner and the study tell different stories of one system."""
    said = []
    latency, fto = _number(row.get("smooth_latency_s")), study.get("fto_median_s")
    if latency is not None and fto is not None and abs(latency - fto) > 0.5:
        said.append(f"{system}: the examiner's latency after a complete question is {latency:.2f} s, the study's "
                    f"median floor-transfer offset {fto:.2f} s (pooled over both speakers)")
    stopped, taking = _number(row.get("barge_in_stopped")), study.get("floor_taking_percent")
    if stopped is not None and taking is not None and (stopped >= 0.5) != (taking >= 50):
        said.append(f"{system}: the examiner says it {'stops' if stopped >= 0.5 else 'does not stop'} when "
                    f"interrupted (stopped {stopped:.2f}), while {taking:.0f}% of the study's user interruptions "
                    "took the floor")
    false = {k.removeprefix("false_barge_in_"): _number(row.get(k))
             for k in ("false_barge_in_noise", "false_barge_in_background", "false_barge_in_backchannel")}
    falling = [k for k, v in false.items() if v is not None and v >= 0.5]
    overlap = study.get("overlap_percent")
    if falling:
        said.append(f"{system}: the examiner says it stops for sound not addressed to it ({', '.join(falling)}), "
                    "which a study with cooperative participants seldom sees"
                    + (f" (its calls: {overlap:.1f}% of the time in overlap)" if overlap is not None else ""))
    return said


def beside_study(examiner: pd.DataFrame, per_system: dict, interruptions: pd.DataFrame, agreement: pd.DataFrame,
                 naturalness: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """(one block of rows per system: the examiner's measure beside the study's of the same
    behaviour; the sentences where they disagree). The inputs are the other views' tables
    (study_metrics.system_statistics, user_interruption_table, agreement_table,
    naturalness_per_system), so no number is computed differently."""
    rows, said = [], []
    for row in examiner.to_dict("records"):
        study = _study_measures(row["system"], per_system, interruptions, agreement, naturalness)
        for behaviour, measure, value, study_measure, study_value in _pairs(row, study):
            rows.append({"system": row["system"], "behaviour": behaviour, "examiner_measure": measure,
                         "examiner": _number(value), "study_measure": study_measure, "study": _number(study_value)})
        said += disagreements(row["system"], row, study)
    columns = ["system", "behaviour", "examiner_measure", "examiner", "study_measure", "study"]
    return pd.DataFrame(rows, columns=columns), said
