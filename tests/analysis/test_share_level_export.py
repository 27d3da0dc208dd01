"""Whose speech a shared export carries: `python -m analysis export-dataset --share-level
researchers|public` on a study of five participants with real recorded calls
(tests/analysis/people_study.py), SQLite then PostgreSQL.

- `public`: the audio, words, transcripts, typed topic, free-text answers and clip words of the two
  who agreed to the public consent item, of nobody else; everyone's sessions stay as measures; the
  manifest says three were left out, and why.
- `researchers`: a researchers item or a public one counts; consent withdrawn counts as none.
- no level: the study team's own export, everyone's speech; a bad level: one line, non-zero, nothing written.
"""

from __future__ import annotations

import json

import datasets
import pytest

from analysis.dataset import export_dataset
from analysis.views import StudyAnalysis
from studies.config import OWN_TOPIC
from tests.analysis.people_study import (
    CLIP_WORDS,
    COMMENTS,
    PUBLIC,
    RESEARCHERS,
    STUDY,
    TYPED_TOPIC,
    bytes_under,
    people_study,
)
from tests.command_line import run_cli


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def people(request, tmp_path_factory):
    yield from people_study(request, tmp_path_factory)


def _export(people, out, *level) -> tuple[dict, str, dict]:
    """(the manifest, what it printed, {split: DataFrame}) of `export-dataset` run as the command line."""
    done = run_cli("analysis", "export-dataset", "--study", STUDY, "--out", out, *level,
                   "--database-url", people.url, "--data-root", people.root)
    assert done.returncode == 0, done.stderr
    exported = datasets.load_from_disk(str(out))
    return (json.loads((out / "manifest.json").read_text()), done.stdout,
            {name: split.to_pandas() for name, split in exported.items()})


def _speech(people, splits) -> dict[str, set]:
    """Whose speech (participant indexes) each part of the export carries."""
    index = {session_id: k for k, session_id in enumerate(people.sessions)}
    sessions = splits["sessions"].set_index("session_id")
    words = {value for clip in splits["pairs"][["natural", "perturbed"]].to_numpy().ravel()
             for value in CLIP_WORDS.values() if value in clip}
    comments = set(splits["questionnaire"]["value"].dropna())
    return {
        "audio": {index[i] for i, a in sessions["audio"].items() if a is not None and a.get("bytes")},
        "words": {index[i] for i, va in sessions["voice_activity"].items() if json.loads(va)["words"]},
        "transcripts": {index[i] for i in splits["transcripts"]["session_id"]},
        "clip words": {k for k, word in CLIP_WORDS.items() if word in words},
        "comments": {k for k, text in COMMENTS.items() if text in comments},
    }


def test_a_public_export_carries_the_speech_of_those_who_agreed_only(people, tmp_path):
    manifest, said, splits = _export(people, tmp_path / "public", "--share-level", "public")
    assert manifest["share_level"] == "public"
    assert (manifest["participants"], manifest["participants_with_audio"], manifest["left_out"]) == (
        5, 2, {"no consent to share with public": 3})
    assert [item["id"] for item in manifest["consent_items"]] == ["publish"]
    assert "speech of 2 of 5 participants (3 left out: no consent to share with public)" in said
    whose = _speech(people, splits)
    assert whose == {"audio": PUBLIC, "words": PUBLIC, "transcripts": PUBLIC, "clip words": {0}, "comments": PUBLIC}
    # everyone's sessions stay, as measures: durations, speech timing, scale answers
    sessions = splits["sessions"]
    assert len(sessions) == 5 and sessions["duration_s"].notna().all()
    assert all(json.loads(va)["vad"][0] for va in sessions["voice_activity"])
    assert splits["questionnaire"]["scale_value"].notna().sum() == 5
    assert set(sessions["topic"]) == {"hiking", OWN_TOPIC}  # what participant 1 typed is their words too
    assert TYPED_TOPIC.encode() not in bytes_under(tmp_path / "public")
    audio_bytes = [a["bytes"] for a in sessions["audio"] if a is not None]
    assert len(audio_bytes) == 2 and all(len(b) > 100_000 for b in audio_bytes)  # real recordings


def test_a_researchers_export_counts_public_consent_and_not_withdrawn_consent(people, tmp_path):
    manifest, _, splits = _export(people, tmp_path / "researchers", "--share-level", "researchers")
    assert (manifest["participants_with_audio"], manifest["left_out"]) == (
        3, {"no consent to share with researchers": 2})
    assert [item["id"] for item in manifest["consent_items"]] == ["publish", "colleagues"]
    whose = _speech(people, splits)
    assert whose == {"audio": RESEARCHERS, "words": RESEARCHERS, "transcripts": RESEARCHERS, "clip words": {0},
                     "comments": RESEARCHERS}
    assert TYPED_TOPIC in set(splits["sessions"]["topic"])


def test_the_study_teams_own_export_carries_everyones_speech(people, tmp_path):
    export_dataset(StudyAnalysis(people.engine, STUDY, people.root), tmp_path / "internal")
    manifest = json.loads((tmp_path / "internal" / "manifest.json").read_text())
    assert manifest["share_level"] is None and "study team" in manifest["note"]
    splits = {name: split.to_pandas() for name, split in datasets.load_from_disk(str(tmp_path / "internal")).items()}
    everyone = set(range(5))
    assert _speech(people, splits) == {"audio": everyone, "words": everyone, "transcripts": everyone,
                                       "clip words": {0, 2}, "comments": everyone}


@pytest.mark.parametrize("level", ["all", "Public", ""])
def test_a_bad_share_level_is_one_line_and_writes_nothing(people, tmp_path, level):
    out = tmp_path / "x"
    done = run_cli("analysis", "export-dataset", "--study", STUDY, "--out", out, "--share-level", level,
                   "--database-url", people.url, "--data-root", people.root)
    assert done.returncode != 0 and not out.exists()
    assert done.stderr == f"error: unknown --share-level {level!r}: one of researchers, public (none: the study " \
                          "team's own export)\n"


def test_an_unknown_study_is_one_line(people, tmp_path):
    out = tmp_path / "x"
    unknown = run_cli("analysis", "export-dataset", "--study", "nope", "--out", out, "--share-level", "public",
                      "--database-url", people.url, "--data-root", people.root)
    assert unknown.returncode != 0 and len(unknown.stderr.splitlines()) == 1 and not out.exists()
    assert unknown.stderr.startswith("error: no study named 'nope'")
