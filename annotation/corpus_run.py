"""`python -m annotation build-pairs DIR|MANIFEST --out OUT --run-dir RUN [--workers N | --ray-address A]`:
each recording's conversation (Silero voice activity and ASR words of two-channel audio, or a
voice-activity JSON) is computed as a Ray task, resumable, kept in RUN/results/*.parquet
(jobs/ray_runs.py); the pairs are then built from them exactly as without Ray."""

from __future__ import annotations

from pathlib import Path

from jobs.ray_runs import RunSummary, corpus_items, run_corpus
from speech.audio import load_audio
from speech.pipeline import AUDIO_SUFFIXES, RECORDING_SUFFIXES
from speech.pipeline import load_conversation as conversation_from_path
from turntaking.activity import (
    conversation_from_json,
    conversation_to_json,
    load_conversation_json,
)


def conversation_item(path: str, params: dict) -> dict:
    """One recording's conversation as `load_source` reads it, in its JSON form."""
    if Path(path).suffix.lower() == ".json":
        return conversation_to_json(load_conversation_json(path))
    return conversation_to_json(conversation_from_path(path, vad="silero"))


def source_items(source: Path) -> list[str]:
    """The recordings of a directory (its audio if it has any, else its JSON files) or a manifest."""
    if (source / "swb_ms98_transcriptions").is_dir():
        raise ValueError("--run-dir reads recordings or voice-activity JSON; a Switchboard directory loads without it")
    items = corpus_items(source, RECORDING_SUFFIXES)
    audio = [item for item in items if Path(item).suffix.lower() in AUDIO_SUFFIXES]
    return audio if audio and source.is_dir() else items


def load_source_on_ray(args) -> tuple[list, dict | None, RunSummary]:
    """(conversations, audio by source or None, run summary): `load_source` as Ray tasks."""
    summary, results = run_corpus(source_items(Path(args.source)), conversation_item, {}, args)
    conversations = [conversation_from_json(data, source=item) for item, data in results.items()]
    audio = {item: load_audio(item, sample_rate=None, require_channels=2) for item in results
             if Path(item).suffix.lower() in AUDIO_SUFFIXES}
    return conversations, audio or None, summary
