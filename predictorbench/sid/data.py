"""SID-bench layout: JSONL annotations next to WAV folders.

    <root>/test_wavs/                    (root may also be test_wavs itself, or its parent's parent
      en_test_lines.jsonl   + en/         as in the Hub download ./SID-bench/Semantic_Interaption)
      zh_test_lines.jsonl   + zh/
      silence_noise_test.jsonl + silence_or_noise/

Annotation line: {"audio": file name, "total_nonbreak": bool, "duration": s, "break_time": s
(-1 without a break in the speech splits; the clip duration in the silence/noise split),
"text_with_break": transcript with <break>, or null}.
Prediction line (SID-bench's format): {"audio", "total_nonbreak", "break_time"}; a prediction
without a break has total_nonbreak true (we write break_time -1).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from turntaking.jsonfiles import JsonFileError, numbered_jsonl

SPLITS = {  # annotation file -> (split name, WAV folder)
    "en_test_lines.jsonl": ("en", "en"),
    "zh_test_lines.jsonl": ("zh", "zh"),
    "silence_noise_test.jsonl": ("silence_noise", "silence_or_noise"),
}
SPLIT_FILES = {name: f for f, (name, _) in SPLITS.items()}


class SidDataError(JsonFileError):
    """A SID-bench folder or JSONL file that does not follow the published layout."""


@dataclass(frozen=True)
class SidClip:
    audio: str
    split: str
    total_nonbreak: bool
    duration: float
    break_time: float
    text_with_break: str | None = None
    wav: Path | None = None

    @property
    def has_break(self) -> bool:
        return not self.total_nonbreak


def split_of(path) -> str:
    name = Path(path).name
    return SPLITS[name][0] if name in SPLITS else Path(path).stem


def load_annotations(path, wav_dir=None) -> list[SidClip]:
    path = Path(path)
    split = split_of(path)
    if wav_dir is None and path.name in SPLITS:
        wav_dir = path.parent / SPLITS[path.name][1]
    clips = []
    for n, item in numbered_jsonl(path, "annotation file", SidDataError):
        try:
            clip = SidClip(str(item["audio"]), split, bool(item["total_nonbreak"]), float(item["duration"]),
                           float(item["break_time"]), item.get("text_with_break"),
                           Path(wav_dir) / str(item["audio"]) if wav_dir else None)
        except (KeyError, TypeError, ValueError):
            raise SidDataError(f"{path}:{n}: needs audio, total_nonbreak, duration and break_time") from None
        if clip.has_break and not 0 <= clip.break_time <= clip.duration + 1e-6:
            raise SidDataError(f"{path}:{n}: break_time {clip.break_time} outside the clip (0-{clip.duration} s)")
        clips.append(clip)
    return clips


def find_test_wavs(root) -> Path:
    """The folder that holds the annotation files: root, root/test_wavs, or one level deeper."""
    root = Path(root)
    for candidate in (root, root / "test_wavs", *sorted(root.glob("*/test_wavs"))):
        if any((candidate / f).is_file() for f in SPLITS):
            return candidate
    raise SidDataError(f"{root}: no SID-bench annotations ({', '.join(SPLITS)}) here or in test_wavs/")


def load_benchmark(root, splits=None) -> dict[str, list[SidClip]]:
    """{split: clips} of the splits present (or those asked for) under a SID-bench folder."""
    base = find_test_wavs(root)
    wanted = list(splits) if splits else [n for f, (n, _) in SPLITS.items() if (base / f).is_file()]
    out = {}
    for name in wanted:
        if name not in SPLIT_FILES:
            raise SidDataError(f"unknown split {name!r}: use {', '.join(SPLIT_FILES)}")
        out[name] = load_annotations(base / SPLIT_FILES[name])
    return out


def prediction_line(audio: str, break_time: float | None) -> dict:
    if break_time is None:
        return {"audio": audio, "total_nonbreak": True, "break_time": -1}
    return {"audio": audio, "total_nonbreak": False, "break_time": round(float(break_time), 4)}


def write_predictions(path, lines: list[dict]) -> None:
    Path(path).write_text("".join(json.dumps(x) + "\n" for x in lines))


def load_predictions(paths) -> dict[str, dict]:
    """{audio: {"total_nonbreak", "break_time"}} from one or more prediction JSONL files."""
    out = {}
    for path in [paths] if isinstance(paths, (str, Path)) else paths:
        for n, item in numbered_jsonl(path, "prediction file", SidDataError):
            try:
                audio, nonbreak = str(item["audio"]), bool(item["total_nonbreak"])
                t = None if nonbreak else float(item["break_time"])
            except (KeyError, TypeError, ValueError):
                raise SidDataError(f"{path}:{n}: needs audio, total_nonbreak and (for a break) break_time") from None
            if audio in out and out[audio] != {"total_nonbreak": nonbreak, "break_time": t}:
                raise SidDataError(f"{path}:{n}: a second, different prediction for {audio}")
            out[audio] = {"total_nonbreak": nonbreak, "break_time": t}
    return out
