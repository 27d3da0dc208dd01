"""Scoring a folder of examples in Full-Duplex-Bench's layout, one task at a time.

    DIR/<example>/input.wav, output.wav (time-aligned, same length)
                 /pause.json | turn_taking.json | interrupt.json
                 /output.json (ASR words; made by the packaged ASR when missing)

Report keys: `tor`, `latency_s` (smooth turn-taking and user interruption), for backchannel
`frequency_per_s` and `jsd`, and `rows` (one per example). FDB's GPT-4 rating of interruption
answers has no offline equal: `judge` stays None and `judge_note` says so.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

from tqdm import tqdm

from examiner.fdb_rules import (
    backchannel_clip,
    bootstrap_interval,
    latency_s,
    mean_or_none,
    takeover,
    words_of_output_json,
)
from examiner.output_words import PACKAGED_ASR, SAMPLE_RATE, fdb_speech_segments, output_signal, transcribe_output
from examiner.table import JUDGE_NOTE
from turntaking.segment import Segment

TASKS = ("pause_handling", "smooth_turn_taking", "user_interruption", "backchannel")
# The file each task's score reads besides the output (pause.json is not read by FDB's pause scoring).
TASK_FILES = {"pause_handling": None, "smooth_turn_taking": "turn_taking.json",
              "user_interruption": "interrupt.json", "backchannel": None}
GIVEN_WORDS = "output.json (given)"
ICC_REFERENCE = Path(__file__).parent / "data" / "icc_gt_distribution.json"
ICC_REFERENCE_SHA256 = "92bcd0ff27246aaa9a0136737b476afd456cd393f003944c3394c140e590f2a8"
# A task set made here carries its own reference next to each example (see examiner/task_sets.py).
OWN_REFERENCE_FILE = "backchannel_reference.json"


class FdbLayoutError(ValueError):
    pass


@lru_cache(maxsize=1)
def icc_reference() -> dict[str, list[float]]:
    """FDB's ground-truth backchannel histograms, per example folder name (sha256 checked)."""
    data = ICC_REFERENCE.read_bytes()
    if hashlib.sha256(data).hexdigest() != ICC_REFERENCE_SHA256:
        raise FdbLayoutError(f"{ICC_REFERENCE} is not FDB's file (sha256 differs); see examiner/data/README.md")
    return json.loads(data)


def example_folders(root: Path) -> list[Path]:
    if not root.is_dir():
        raise FdbLayoutError(f"{root} is not a folder")
    folders = sorted((p for p in root.iterdir() if p.is_dir() and any(
        (p / name).exists() for name in ("output.json", "output.wav"))), key=_natural)
    if not folders:
        raise FdbLayoutError(f"{root} holds no example folders (subfolders with output.json or output.wav)")
    return folders


def _natural(path: Path):
    return (0, int(path.name), "") if path.name.isdigit() else (1, 0, path.name)


def _read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise FdbLayoutError(f"{path} is missing") from None
    except json.JSONDecodeError as e:
        raise FdbLayoutError(f"{path} is not valid JSON: {e}") from None


def user_end_s(folder: Path, task: str) -> float | None:
    """The time latency is measured from: the user's turn end or the interruption's end."""
    if task == "smooth_turn_taking":
        return float(_read_json(folder / "turn_taking.json")[0]["timestamp"][0])
    if task == "user_interruption":
        return float(_read_json(folder / "interrupt.json")[0]["timestamp"][1])
    return None


def output_words(folder: Path, task: str, write: bool = True):
    """(words, where they came from): the folder's output.json, else the packaged ASR's (written
    as output.json, FDB's get_transcript step, when `write`)."""
    path = folder / "output.json"
    if path.exists():
        data = _read_json(path)
        try:
            return words_of_output_json(data), data.get("asr", GIVEN_WORDS)
        except (KeyError, TypeError, ValueError) as e:
            raise FdbLayoutError(f"{path}: not FDB's output.json form ({e})") from None
    if not (folder / "output.wav").exists():
        raise FdbLayoutError(f"{folder} has neither output.json nor output.wav")
    crop = user_end_s(folder, task) if task == "user_interruption" else 0.0
    data = transcribe_output(output_signal(folder / "output.wav"), crop)
    if write:
        path.write_text(json.dumps(data, indent=1))
    return words_of_output_json(data), PACKAGED_ASR


@dataclass(frozen=True)
class TurnRow:
    example: str
    tor: int
    latency_s: float | None
    duration_s: float | None
    words: int
    first_word_s: float | None
    user_end_s: float | None
    words_from: str


@dataclass(frozen=True)
class BackchannelRow:
    example: str
    tor: int
    frequency_per_s: float
    jsd: float | None
    backchannels: tuple[Segment, ...]
    reference: str | None
    words_from: str


def score_turn_example(folder: Path, task: str, write: bool = True) -> TurnRow:
    if TASK_FILES[task] and not (folder / TASK_FILES[task]).exists():
        raise FdbLayoutError(f"{folder / TASK_FILES[task]} is missing")
    words, source = output_words(folder, task, write)
    decision = takeover(words)
    end = user_end_s(folder, task)
    latency = latency_s(decision, end) if end is not None else None
    return TurnRow(folder.name, decision.tor, latency, decision.duration_s, decision.words, decision.first_word_s,
                   end, source)


def backchannel_reference(folder: Path):
    """(histogram, its name): the example's own reference file, else FDB's entry of the same name."""
    own = folder / OWN_REFERENCE_FILE
    if own.exists():
        data = _read_json(own)
        return data["histogram"], data.get("name", OWN_REFERENCE_FILE)
    reference = icc_reference()
    if folder.name in reference:
        return reference[folder.name], f"FDB icc_gt_distribution.json[{folder.name}]"
    return None, None


def score_backchannel_example(folder: Path, write: bool = True) -> BackchannelRow:
    if not (folder / "output.wav").exists():
        raise FdbLayoutError(f"{folder / 'output.wav'} is missing (the backchannel scan reads the audio)")
    signal = output_signal(folder / "output.wav")
    words, source = output_words(folder, "backchannel", write)
    reference, reference_name = backchannel_reference(folder)
    clip = backchannel_clip(fdb_speech_segments(signal), words, len(signal) / SAMPLE_RATE, reference)
    return BackchannelRow(folder.name, clip.tor, clip.frequency_per_s, clip.jsd, clip.backchannels, reference_name,
                          source)


def score_folder(root, task: str, write: bool = True, progress: bool = True) -> dict:
    """FDB's scores of one task over every example folder under `root`."""
    if task not in TASKS:
        raise FdbLayoutError(f"unknown task {task!r}: one of {', '.join(TASKS)}")
    folders = example_folders(Path(root))
    rows = []
    for folder in tqdm(folders, desc=f"fdb {task}", disable=not progress, unit="example"):
        rows.append(score_backchannel_example(folder, write) if task == "backchannel"
                    else score_turn_example(folder, task, write))
    return summarize(task, str(root), rows)


def summarize(task: str, root: str, rows) -> dict:
    report = {"task": task, "dir": root, "examples": len(rows),
              "tor": mean_or_none(r.tor for r in rows), "tor_ci95": bootstrap_interval(r.tor for r in rows),
              "words_from": sorted({r.words_from for r in rows})}
    if task == "backchannel":
        report["frequency_per_s"] = mean_or_none(r.frequency_per_s for r in rows)
        report["jsd"] = mean_or_none(r.jsd for r in rows)
        report["jsd_ci95"] = bootstrap_interval(r.jsd for r in rows)
        report["jsd_examples"] = sum(r.jsd is not None for r in rows)
    else:
        # Mean over take-over examples only (FDB's latency_list); None when there is none.
        report["latency_s"] = mean_or_none(r.latency_s for r in rows) if task != "pause_handling" else None
        report["latency_ci95"] = bootstrap_interval(r.latency_s for r in rows) if task != "pause_handling" else None
    if task == "user_interruption":
        report["judge"] = None
        report["judge_note"] = JUDGE_NOTE
    report["rows"] = [asdict(r) for r in rows]
    return report


def format_report(report: dict) -> str:
    def num(x, digits=3):
        return "-" if x is None else f"{x:.{digits}f}"

    lines = [f"{report['task']} over {report['examples']} example(s) in {report['dir']}",
             f"  TOR {num(report['tor'])}"]
    if "latency_s" in report and report["task"] != "pause_handling":
        lines.append(f"  latency {num(report['latency_s'])} s (mean over take-overs)")
    if report["task"] == "backchannel":
        lines.append(f"  backchannel frequency {num(report['frequency_per_s'], 4)} /s, "
                     f"JSD {num(report['jsd'])} ({report['jsd_examples']} example(s) with a reference)")
    if "judge_note" in report:
        lines.append(f"  judge: - ({report['judge_note']})")
    lines.append(f"  words from: {'; '.join(report['words_from'])}")
    return "\n".join(lines)
