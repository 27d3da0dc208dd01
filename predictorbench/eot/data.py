"""eot-bench-data rows: complete user turns with their audio and every silence span >= 100 ms.

Schema (livekit/eot-bench-data, followed exactly so the published dataset loads unchanged):
  id             str
  language       str (always required; artifacts go under one folder per language)
  audio          a Hugging Face Audio value: {"bytes": ...} (encoded file) or
                 {"array": ..., "sampling_rate": ...} (decoded), or {"path": ...}
  silence_spans  list of {"start": s, "end": s} (seconds from the start of the turn's audio)
  words          optional list of {"word" (or "text"), "start", "end"}
  messages       optional list of {"role", "content"} (the conversation before this turn)

Sources: a Hub id (livekit/eot-bench-data, needs the network), a folder of Parquet files (the Hub's layout: `<config>/<split>-*.parquet` or
`data/<split>-*.parquet`), one Parquet file, or a `datasets` dataset saved with `save_to_disk`
(a Dataset or a DatasetDict). The Audio column is read with `decode=False`, as eot-bench does, and
decoded here with soundfile, so no torchcodec runtime is needed.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import soundfile

from speech.audio import resample
from turntaking.segment import Segment

SAMPLE_RATE = 16000
REQUIRED_FIELDS = ("id", "language", "audio", "silence_spans")


class EotDataError(ValueError):
    """A dataset or row that does not follow the eot-bench-data schema; the message says where."""


@dataclass
class EotRow:
    id: str
    language: str
    audio: np.ndarray  # mono float32 at SAMPLE_RATE
    silence_spans: list[Segment]
    words: list[dict] | None = None  # {"word", "start", "end"}
    messages: list[dict] = field(default_factory=list)

    @property
    def duration(self) -> float:
        return len(self.audio) / SAMPLE_RATE


def decode_audio(value, where: str) -> np.ndarray:
    """Mono float32 samples at 16 kHz from an Audio value given as bytes, an array or a path."""
    if not isinstance(value, dict):
        raise EotDataError(f"{where}: audio must be a dict with 'bytes' or 'array', got {type(value).__name__}")
    if value.get("array") is not None:
        samples = np.asarray(value["array"], dtype=np.float32)
        rate = value.get("sampling_rate")
        if rate is None:
            raise EotDataError(f"{where}: decoded audio has no 'sampling_rate'")
        if samples.ndim == 2:  # (channels, n) or (n, channels): mix down
            samples = samples.mean(axis=0 if samples.shape[0] < samples.shape[1] else 1)
    elif value.get("bytes") is not None or value.get("path"):
        source = io.BytesIO(value["bytes"]) if value.get("bytes") is not None else value["path"]
        try:
            samples, rate = soundfile.read(source, dtype="float32", always_2d=True)
        except (soundfile.LibsndfileError, RuntimeError, TypeError, ValueError) as exc:
            raise EotDataError(f"{where}: cannot decode audio ({' '.join(str(exc).split())})") from None
        samples = samples.mean(axis=1)
    else:
        raise EotDataError(f"{where}: audio has neither 'bytes', 'array' nor 'path'")
    if samples.size == 0:
        raise EotDataError(f"{where}: empty audio")
    if int(rate) != SAMPLE_RATE:
        samples = resample(samples[None], int(rate), SAMPLE_RATE)[0]
    return np.ascontiguousarray(samples, dtype=np.float32)


def _spans(value, where: str) -> list[Segment]:
    spans = []
    for k, span in enumerate(value if value is not None else []):
        try:
            start, end = (span["start"], span["end"]) if isinstance(span, dict) else span
            start, end = float(start), float(end)
        except (KeyError, TypeError, ValueError):
            raise EotDataError(f"{where}: silence_spans[{k}] must have numeric 'start' and 'end'") from None
        if end < start:
            raise EotDataError(f"{where}: silence_spans[{k}] ends before it starts ({start} > {end})")
        spans.append(Segment(start, end))
    if spans != sorted(spans):
        raise EotDataError(f"{where}: silence_spans are not in time order")
    return spans


def _words(value, where: str) -> list[dict] | None:
    if value is None:
        return None
    out = []
    for k, w in enumerate(value):
        text = w.get("word", w.get("text")) if isinstance(w, dict) else None
        try:
            out.append({"word": str(text), "start": float(w["start"]), "end": float(w["end"])})
        except (KeyError, TypeError, ValueError):
            raise EotDataError(f"{where}: words[{k}] needs 'word' (or 'text'), 'start' and 'end'") from None
        if text is None:
            raise EotDataError(f"{where}: words[{k}] has no 'word' or 'text'")
    return out


def row_from_record(record: dict, index: int = 0) -> EotRow:
    missing = [f for f in REQUIRED_FIELDS if f not in record or (f != "silence_spans" and record[f] is None)]
    if missing:
        raise EotDataError(f"row {index}: missing required field(s) {', '.join(missing)} "
                           f"(eot-bench-data needs {', '.join(REQUIRED_FIELDS)})")
    where = f"row {index} (id {record['id']})"
    return EotRow(
        id=str(record["id"]),
        language=str(record["language"]),
        audio=decode_audio(record["audio"], where),
        silence_spans=_spans(record["silence_spans"], where),
        words=_words(record.get("words"), where),
        messages=[dict(m) for m in (record.get("messages") or [])],
    )


def _parquet_files(path: Path, split: str | None) -> list[Path]:
    files = sorted(path.rglob("*.parquet")) if path.is_dir() else [path]
    if split and path.is_dir():
        chosen = [f for f in files if f.name.startswith(f"{split}-") or f.name == f"{split}.parquet"
                  or split in f.relative_to(path).parts[:-1]]
        if not chosen:
            raise EotDataError(f"{path}: no Parquet files of split {split!r} (looked for {split}-*.parquet)")
        files = chosen
    if not files:
        raise EotDataError(f"{path}: no Parquet files and not a dataset saved with save_to_disk")
    return files


def _saved_dataset_records(path: Path, split: str | None):
    import datasets

    ds = datasets.load_from_disk(str(path))
    if isinstance(ds, datasets.DatasetDict):
        if split is None:
            if len(ds) != 1:
                raise EotDataError(f"{path}: a DatasetDict with splits {sorted(ds)}; choose one with --split")
            split = next(iter(ds))
        if split not in ds:
            raise EotDataError(f"{path}: no split {split!r} (has {', '.join(sorted(ds))})")
        ds = ds[split]
    if "audio" in ds.features and isinstance(ds.features["audio"], datasets.Audio):
        ds = ds.cast_column("audio", datasets.Audio(decode=False))  # decoded here, with soundfile
    yield from ds


def _parquet_records(files: list[Path]):
    import pyarrow.parquet as pq

    for f in files:
        try:
            table = pq.read_table(f)
        except Exception as exc:  # pyarrow raises several types for unreadable files
            raise EotDataError(f"{f}: not a readable Parquet file ({exc.__class__.__name__})") from None
        yield from table.to_pylist()


def is_saved_dataset(path: Path) -> bool:
    return path.is_dir() and any((path / n).is_file() for n in ("dataset_dict.json", "state.json", "dataset_info.json"))


def _hub_records(repo_id: str, name: str | None, split: str | None):
    import datasets

    try:
        ds = datasets.load_dataset(repo_id, name, split=split or "validation")
    except Exception as exc:  # offline, unknown repo, gated...: one line naming the dataset
        raise EotDataError(f"cannot load {repo_id} from the Hugging Face Hub ({exc.__class__.__name__}: "
                           f"{' '.join(str(exc).split())[:200]})") from None
    if "audio" in ds.features and isinstance(ds.features["audio"], datasets.Audio):
        ds = ds.cast_column("audio", datasets.Audio(decode=False))
    yield from ds


def iter_rows(path, split: str | None = None, limit: int | None = None, name: str | None = None):
    """EotRows of a dataset folder/file (or a Hub id such as livekit/eot-bench-data, loaded with
    `datasets.load_dataset(path, name, split)` where the Hub is reachable), in order; `limit`
    stops after N rows."""
    hub_id = str(path)
    path = Path(path)
    if not path.exists() and re.fullmatch(r"[\w.-]+/[\w.-]+", hub_id):
        records = _hub_records(hub_id, name, split)
    elif not path.exists():
        raise EotDataError(f"dataset not found: {path}")
    elif is_saved_dataset(path):
        records = _saved_dataset_records(path, split)
    else:
        records = _parquet_records(_parquet_files(path, split))
    for index, record in enumerate(records):
        if limit is not None and index >= limit:
            return
        yield row_from_record(record, index)


def load_rows(path, split: str | None = None, limit: int | None = None, name: str | None = None) -> list[EotRow]:
    return list(iter_rows(path, split, limit, name))
