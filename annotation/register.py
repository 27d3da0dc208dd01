"""Registering a built benchmark (`python -m annotation build-pairs`) in a study.

Each pair becomes a ClipPair with its two DialogueClips; the WAV files are copied under the
data root (`annotation/<study>/...`, with sha256, see storage.files). Artifact-control pairs come
from DIR/controls.jsonl. On top, obvious pairs are made for the attention checks and the
practice trials: a natural clip against the same clip with a long silence inserted in its
longest pause between the speakers (a "very long delay" nobody should call natural).

Registering the same directory again adds nothing (pairs are matched by pair_id).
"""

from __future__ import annotations

import random
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile
from sqlmodel import Session, select

from annotation.assignment import AssignmentSettings, settings_dict
from annotation.benchmark import CONTROLS, MANIFEST
from storage.analysis_queue import request_analysis
from storage.files import resolve, store_file
from storage.models import ClipPair, DialogueClip, Study
from storage.records import get_or_create_study
from turntaking.activity import conversation_from_json
from turntaking.jsonfiles import read_json
from turntaking.pairs_manifest import read_pairs_manifest

ATTENTION_TYPE = "attention_long_pause"


class RegisterError(ValueError):
    """The benchmark directory cannot be registered (no audio, missing file...)."""


@dataclass(frozen=True)
class RegisterSummary:
    study: str
    pairs: int
    artifact_controls: int
    attention_checks: int
    practice: int
    added: int


def _clip(session: Session, study: Study, src: Path, relpath: str, data_root, activity: dict | None) -> DialogueClip:
    """The study's clip stored at `relpath`, copied there from `src` the first time."""
    existing = session.exec(
        select(DialogueClip).where(DialogueClip.study_id == study.id, DialogueClip.audio_path == relpath)
    ).first()
    if existing is not None:
        return existing
    if not src.is_file():
        raise RegisterError(f"clip file not found: {src}")
    try:
        info = soundfile.info(str(src))
    except (soundfile.LibsndfileError, RuntimeError) as e:
        raise RegisterError(f"cannot read clip {src}: {e}") from None
    relpath, checksum = store_file(src, relpath, data_root)
    duration = info.frames / info.samplerate
    clip = DialogueClip(
        study_id=study.id, audio_path=relpath, audio_sha256=checksum, activity=activity,
        start_s=0.0, end_s=duration, duration_s=duration,
    )
    session.add(clip)
    session.flush()
    return clip


def _audio_path(bench: Path, entry: dict, key: str) -> Path:
    rel = entry[key]
    if not str(rel).lower().endswith((".wav", ".flac")):
        raise RegisterError(
            f"pair {entry['pair_id']} has no audio ({key} is {rel}): annotators need WAV clips, "
            "so build the benchmark from two-channel recordings"
        )
    return bench / rel


def _activity(bench: Path, entry: dict, key: str) -> dict | None:
    rel = entry.get(key)
    return read_json(bench / rel, "clip voice activity") if rel and (bench / rel).is_file() else None


def longest_pause(activity: dict | None, duration: float) -> float:
    """Middle of the longest silence between two stretches of speech (the clip's middle if none)."""
    if not activity:
        return duration / 2
    conv = conversation_from_json(activity)
    segments = sorted(s for segs in conv.activity for s in segs)
    best, at, end = 0.0, duration / 2, None
    for start, stop in segments:
        if end is not None and start - end > best:
            best, at = start - end, (start + end) / 2
        end = stop if end is None else max(end, stop)
    return at


def insert_silence(src: Path, dest: Path, at_s: float, pause_s: float) -> None:
    samples, rate = soundfile.read(str(src), always_2d=True)
    cut = int(round(at_s * rate))
    silence = np.zeros((int(round(pause_s * rate)), samples.shape[1]), dtype=samples.dtype)
    soundfile.write(str(dest), np.concatenate([samples[:cut], silence, samples[cut:]]), rate, subtype="PCM_16")


def _add_pair(session, study, pair_id, kind, natural, perturbed, edit, **flags) -> bool:
    exists = session.exec(select(ClipPair.id).where(ClipPair.study_id == study.id, ClipPair.pair_id == pair_id)).first()
    if exists is not None:
        return False
    session.add(ClipPair(
        study_id=study.id, pair_id=pair_id, perturbation=kind, natural_clip_id=natural.id,
        perturbed_clip_id=perturbed.id, edit=edit, **flags,
    ))
    session.flush()
    return True


def register_benchmark(
    session: Session,
    bench_dir,
    study_name: str,
    data_root,
    settings: AssignmentSettings | None = None,
    attention_checks: int = 4,
    practice: int = 2,
    pause_s: float = 4.0,
    seed: int = 0,
    study_options: dict | None = None,
) -> RegisterSummary:
    """Register DIR's pairs in the study (created if new). `settings` and `study_options`
    (prolific_study_id, completion_code, completion_url) go into the study's config["annotation"]."""
    bench = Path(bench_dir)
    entries = read_pairs_manifest(bench / MANIFEST)
    controls = read_pairs_manifest(bench / CONTROLS, allow_empty=True) if (bench / CONTROLS).is_file() else []
    if not entries:
        raise RegisterError(f"{bench / MANIFEST} lists no pairs")
    study = get_or_create_study(session, study_name, title=study_name)
    if settings is not None or study_options:
        config = dict(study.config or {})
        given = {**(settings_dict(settings) if settings is not None else {}), **(study_options or {})}
        config["annotation"] = {**config.get("annotation", {}), **given}
        study.config = config  # a new dict, so the JSON column is written
        session.add(study)
    folder = f"annotation/{study_name}"
    added = 0
    naturals = []
    for entry, is_control in [(e, False) for e in entries] + [(c, True) for c in controls]:
        pid = entry["pair_id"]
        natural_vad = _activity(bench, entry, "natural_vad")
        natural = _clip(session, study, _audio_path(bench, entry, "natural"), f"{folder}/{Path(entry['natural']).name}",
                        data_root, natural_vad)
        perturbed = _clip(session, study, _audio_path(bench, entry, "perturbed"),
                          f"{folder}/{Path(entry['perturbed']).name}", data_root, _activity(bench, entry, "perturbed_vad"))
        edit = {k: v for k, v in entry.items() if k not in ("pair_id", "type", "natural", "perturbed")}
        added += _add_pair(session, study, pid, entry["type"], natural, perturbed, edit, is_artifact_control=is_control)
        if not is_control:
            naturals.append((pid, natural, natural_vad))

    # Obvious pairs from distinct natural clips: attention checks first, then practice. Made
    # once per study: registering again (or another directory) leaves them as they are.
    have_obvious = session.exec(
        select(ClipPair.id).where(ClipPair.study_id == study.id, ClipPair.perturbation == ATTENTION_TYPE)
    ).first()
    rng = random.Random(seed)
    chosen = [] if have_obvious else rng.sample(naturals, min(len(naturals), attention_checks + practice))
    with tempfile.TemporaryDirectory() as tmp:
        for n, (source_id, natural, vad) in enumerate(chosen):
            is_practice = n >= attention_checks
            pid = f"{'practice' if is_practice else 'attention'}-{source_id}"
            at = longest_pause(vad, natural.duration_s)
            made = Path(tmp) / f"{pid}.wav"
            insert_silence(resolve(natural.audio_path, data_root), made, at, pause_s)
            perturbed = _clip(session, study, made, f"{folder}/{pid}.perturbed.wav", data_root, None)
            # The natural side gets the same silence at its very end (after the dialogue, not a
            # turn-taking cue), so both clips are equally long: a longer clip would tell which
            # side is perturbed without listening.
            padded = Path(tmp) / f"{pid}.natural.wav"
            insert_silence(resolve(natural.audio_path, data_root), padded, natural.duration_s, pause_s)
            natural = _clip(session, study, padded, f"{folder}/{pid}.natural.wav", data_root, vad)
            edit = {"source_pair": source_id, "inserted_silence_s": pause_s, "at_s": round(at, 3)}
            added += _add_pair(session, study, pid, ATTENTION_TYPE, natural, perturbed, edit,
                               is_attention_check=not is_practice, is_practice=is_practice)
    if added:
        request_analysis(session, study.id)  # the new clips are scored in the background
    flags = session.exec(
        select(ClipPair.is_artifact_control, ClipPair.is_attention_check, ClipPair.is_practice)
        .where(ClipPair.study_id == study.id)
    ).all()
    return RegisterSummary(
        study=study_name,
        pairs=sum(not any(f) for f in flags),
        artifact_controls=sum(f[0] for f in flags),
        attention_checks=sum(f[1] for f in flags),
        practice=sum(f[2] for f in flags),
        added=added,
    )
