"""What the researcher area says about a study's annotator links before and when they are made:
the same checks as `python -m annotation annotators` (annotation.links), run on the study's rows."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from sqlmodel import Session, select

from annotation.assignment import open_slots, settings_for
from annotation.links import clips_without_audio, link_warnings, make_links
from annotation.trials import TrialError, get_study
from storage.base_url import configured_base_url
from storage.db import session_scope
from storage.files import default_data_root
from storage.models import Annotator, SkippedTrial


def annotation_notes(engine, study_name: str, data_root=None) -> list[str]:
    """Warnings for the study overview: no pairs, clips without audio, the open slots, and the
    trials annotators skipped because a clip would not play."""
    root = Path(data_root) if data_root is not None else default_data_root()
    with Session(engine) as session:
        study = get_study(session, study_name)
        missing = clips_without_audio(session, study, root)
        notes = [f"⚠ {w}" for w in link_warnings(session, study, 1)]
        if missing:
            notes.append(f"⚠ {missing} clip(s) have no audio file: annotator links are refused for this study.")
        elif not notes:
            notes.append(f"Annotation: {open_slots(session, study.id, settings_for(study))} judgment slot(s) open "
                         "for new annotators.")
        skipped = session.exec(select(sa.func.count()).select_from(SkippedTrial).join(Annotator)
                               .where(Annotator.study_id == study.id)).one()
        if skipped:
            notes.append(f"⚠ {skipped} trial(s) skipped by annotators because a clip would not play "
                         "(table skipped_trial: annotator, pair, reason).")
    return notes


def new_annotator_links(engine, study_name: str, count: int, data_root=None) -> tuple[list[str], list[str]]:
    """(links, warnings) as `python -m annotation annotators` makes them; TrialError when refused."""
    root = Path(data_root) if data_root is not None else default_data_root()
    if count < 1 or count > 1000:
        raise TrialError(f"make between 1 and 1000 links at a time, not {count}")
    with session_scope(engine) as session:
        return make_links(session, get_study(session, study_name), count, configured_base_url(root), root)
