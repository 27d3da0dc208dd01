"""Annotator links for a study, and what the researcher must know before sending them: a study
without pairs or with fewer open judgment slots than links gives some annotators no work (they
are told so and get no completion code), and a study whose clips have no audio cannot be
annotated at all (refused)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import sqlalchemy as sa
from sqlmodel import Session, select

from annotation.assignment import open_slots, settings_for
from annotation.trials import TrialError, create_annotators
from storage.files import StorageFileError, resolve
from storage.models import ClipPair, DialogueClip, Study


def clips_without_audio(session: Session, study: Study, data_root) -> int:
    """How many of the clips the study's pairs play have no audio file (none stored, or gone)."""
    used = sa.union(
        select(ClipPair.natural_clip_id).where(ClipPair.study_id == study.id),
        select(ClipPair.perturbed_clip_id).where(ClipPair.study_id == study.id),
    )
    clips = session.exec(select(DialogueClip.audio_path).where(DialogueClip.id.in_(used))).all()
    return sum(not _stored(path, data_root) for path in clips)


def _stored(relpath: str | None, data_root) -> bool:
    try:
        return relpath is not None and resolve(relpath, data_root).is_file()
    except StorageFileError:  # a path leaving the data root serves nothing either
        return False


def link_warnings(session: Session, study: Study, count: int) -> list[str]:
    """Why `count` new links would leave annotators without work (empty when they would not)."""
    formal = session.exec(
        select(sa.func.count()).select_from(ClipPair).where(
            ClipPair.study_id == study.id, sa.not_(ClipPair.is_attention_check), sa.not_(ClipPair.is_practice))
    ).one()
    if formal == 0:
        return [f"study {study.name!r} has no clip pairs: annotators would have nothing to judge "
                "(build them: python -m annotation build-pairs SOURCE --out DIR --study "
                f"{study.name})"]
    slots = open_slots(session, study.id, settings_for(study))
    if slots < count:
        return [f"study {study.name!r} has {slots} open judgment slot(s) for {count} link(s): "
                f"at least {count - slots} annotator(s) would find no work"]
    return []


def make_links(session: Session, study: Study, count: int, base_url: str, data_root,
               valid_for: timedelta | None = None) -> tuple[list[str], list[str]]:
    """(links, warnings) for `count` new annotators; refused (TrialError) when clips lack audio."""
    missing = clips_without_audio(session, study, Path(data_root))
    if missing:
        raise TrialError(f"study {study.name!r} has {missing} clip(s) without an audio file: annotators "
                         "could not hear them (register pairs built from recordings)")
    warnings = link_warnings(session, study, count)
    tokens = create_annotators(session, study, count, valid_for)
    return [f"{base_url.rstrip('/')}/annotate/session?token={token}" for token in tokens], warnings
