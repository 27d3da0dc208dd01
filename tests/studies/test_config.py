"""Study files (YAML and TOML) into the database, defaults, errors, and system assignment."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from sqlmodel import select

from storage import audit_trail
from storage.db import make_engine, session_scope
from storage.demo import DEMO_TOPICS
from storage.models import DialogueSystem, Study
from studies.__main__ import main
from studies.config import (
    StudyConfigError,
    apply_config,
    counterbalanced_order,
    load_config,
    next_systems,
    parse_config,
    study_settings,
)

ROOT = Path(__file__).resolve().parents[2]

YAML = """
name: pilot
title: Pilot study
systems:
  - name: cascaded
    kind: cascaded
    config: {barge_in: yield}
  - name: baseline
    kind: cascade-backchannel
"""

TOML = """
name = "pilot-toml"
session_seconds = 120
assignment = "choice"
topics = ["learning Python", "preparing for a hike"]
consent = "I agree."
instructions = "Talk."

[[systems]]
name = "moshi"
kind = "moshi"
config = {url = "ws://localhost:8998/api/chat"}
"""


def test_yaml_defaults_go_into_the_database(tmp_path, engine):
    path = tmp_path / "pilot.yaml"
    path.write_text(YAML)
    config = load_config(path)
    assert config.topics == list(DEMO_TOPICS) and len(config.topics) == 6
    assert config.session_seconds == 300 and config.assignment == "counterbalanced"
    with session_scope(engine) as session:
        apply_config(session, config)
    with session_scope(engine) as session:
        study = session.exec(select(Study).where(Study.name == "pilot")).one()
        systems = session.exec(select(DialogueSystem).where(DialogueSystem.study_id == study.id).order_by(DialogueSystem.id)).all()
        assert study.title == "Pilot study"
        assert study.config["topics"][1] == "places to eat in Manhattan"
        assert study.config["session_seconds"] == 300
        assert "recorded" in study.config["consent"]
        assert [(s.name, s.kind, s.config) for s in systems] == [
            ("cascaded", "cascaded", {"barge_in": "yield"}),
            ("baseline", "cascade-backchannel", {}),
        ]
        settings = study_settings(study)
        assert settings.assignment == "counterbalanced" and settings.topics == list(DEMO_TOPICS)


def test_toml_and_reapplying_updates_in_place(tmp_path, engine):
    path = tmp_path / "study.toml"
    path.write_text(TOML)
    with session_scope(engine) as session:
        first = apply_config(session, load_config(path))
    path.write_text(TOML.replace("120", "240").replace("8998", "9000"))
    with session_scope(engine) as session:
        second = apply_config(session, load_config(path))
    assert first.id == second.id
    with session_scope(engine) as session:
        study = session.exec(select(Study).where(Study.name == "pilot-toml")).one()
        assert study.config["session_seconds"] == 240 and study.config["assignment"] == "choice"
        assert study.config["topics"] == ["learning Python", "preparing for a hike"]
        systems = session.exec(select(DialogueSystem).where(DialogueSystem.study_id == study.id).order_by(DialogueSystem.id)).all()
        assert len(systems) == 1 and systems[0].config == {"url": "ws://localhost:9000/api/chat"}


@pytest.mark.parametrize(
    "text, message",
    [
        ("name: x\n", "'systems' must list at least one"),
        ("systems: [{name: a, kind: cascaded}]\n", "'name' (the study's short name"),
        ("name: x\nsystems: [{name: a, kind: telepathy}]\n", "unknown kind 'telepathy'"),
        ("name: x\nsession_seconds: 3\nsystems: [{name: a, kind: cascaded}]\n", "'session_seconds' must be"),
        ("name: x\nassignment: random\nsystems: [{name: a, kind: cascaded}]\n", "'assignment' must be one of"),
        ("name: x\ncolour: red\nsystems: [{name: a, kind: cascaded}]\n", "unknown setting(s) colour"),
        ("name: x\nsystems: [{name: a, kind: cascaded}, {name: a, kind: moshi}]\n", "must be unique"),
        ("name: [unclosed\n", "is not valid YAML"),
        ("name: x\nevents: 0.2\nsystems: [{name: a, kind: cascaded}]\n", "'events' must be a mapping"),
        ("name: x\nevents: {ipu_silence_s: 9}\nsystems: [{name: a, kind: cascaded}]\n", "'events': ipu_silence_s must be"),
        ("name: x\nevents: {gap: 1}\nsystems: [{name: a, kind: cascaded}]\n", "unknown event parameter(s) gap"),
        ("name: x\nclip_seconds: [15, 8]\nsystems: [{name: a, kind: cascaded}]\n", "'clip_seconds' must be [min, max]"),
        ("name: x\nclip_seconds: 10\nsystems: [{name: a, kind: cascaded}]\n", "'clip_seconds' must be [min, max]"),
        ("name: x\nshort_calls: never\nsystems: [{name: a, kind: cascaded}]\n",
         "'short_calls' must be one of repeat, skip, got 'never'"),
        ("name: x\nshort_calls: [skip]\nsystems: [{name: a, kind: cascaded}]\n", "'short_calls' must be one of"),
    ],
)
def test_bad_study_files_give_one_line_errors(tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(StudyConfigError, match=None) as error:
        load_config(path)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_missing_file_and_wrong_suffix(tmp_path):
    with pytest.raises(StudyConfigError, match="cannot read study file"):
        load_config(tmp_path / "nope.yaml")
    (tmp_path / "study.json").write_text("{}")
    with pytest.raises(StudyConfigError, match="must end in .yaml, .yml or .toml"):
        load_config(tmp_path / "study.json")


def test_a_study_says_what_a_too_short_call_means(tmp_path, engine):
    """`short_calls` is stored with the study and read back; without it, a short call is repeated."""
    assert parse_config({"name": "x", "systems": [{"name": "a", "kind": "cascaded"}]}).short_calls == "repeat"
    path = tmp_path / "study.yaml"
    path.write_text("name: moving-on\nmin_call_seconds: 8\nshort_calls: skip\nsystems: [{name: a, kind: cascaded}]\n")
    with session_scope(engine) as session:
        apply_config(session, load_config(path))
    with session_scope(engine) as session:
        study = session.exec(select(Study).where(Study.name == "moving-on")).one()
        assert study.config["short_calls"] == "skip"
        settings = study_settings(study)
        assert (settings.short_calls, settings.call_minimum_s) == ("skip", 8.0)


def test_counterbalanced_orders_are_balanced():
    systems = ["a", "b", "c"]
    orders = [tuple(counterbalanced_order(systems, i)) for i in range(12)]
    assert len(set(orders)) == 6
    for position in range(3):
        assert Counter(order[position] for order in orders) == {"a": 4, "b": 4, "c": 4}
    assert next_systems(systems, "counterbalanced", 1, done=set()) == [counterbalanced_order(systems, 1)[0]]
    first = counterbalanced_order(systems, 1)
    assert next_systems(systems, "counterbalanced", 1, done={first[0]}) == [first[1]]
    assert next_systems(systems, "counterbalanced", 1, done=set(systems)) == []
    assert next_systems(systems, "choice", 5, done={"b"}) == ["a", "c"]


def test_cli_load_config(tmp_path, capsys):
    path = tmp_path / "pilot.yaml"
    path.write_text(YAML)
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    assert main(["--url", url, "load-config", str(path)]) == 0
    out = capsys.readouterr().out
    assert "study 'pilot'" in out and "6 topics" in out and "cascaded (cascaded), baseline (cascade-backchannel)" in out
    (tmp_path / "bad.toml").write_text("name = \n")
    assert main(["--url", url, "load-config", str(tmp_path / "bad.toml")]) == 1
    assert "is not valid TOML" in capsys.readouterr().err
    # the change is in the audit trail (the bad file changed nothing, and is not)
    engine = make_engine(url)
    changes = [(e.action, e.object, e.detail["file"]) for e in audit_trail.events(engine)]
    engine.dispose()
    assert changes == [("changed_study", "pilot", str(path))]


def test_a_study_sets_how_its_events_are_found(tmp_path, engine):
    path = tmp_path / "study.yaml"
    path.write_text("name: ev\nevents: {ipu_silence_s: 0.5}\nsystems: [{name: a, kind: cascaded}]\n")
    with session_scope(engine) as session:
        apply_config(session, load_config(path))
    with session_scope(engine) as session:
        study = session.exec(select(Study).where(Study.name == "ev")).one()
        assert study.config["events"] == {"ipu_silence_s": 0.5, "backchannel_max_words": 2, "backchannel_list": "packaged"}


LITERAL_KEY = """
name: keyed
systems:
  - {name: cascade, kind: cascaded}
  - {name: remote, kind: realtime, config: {url: "ws://box:8765/v1/realtime", api_key: "sk-secret-value"}}
"""


def test_a_literal_api_key_is_refused_wherever_a_study_config_is_loaded(tmp_path, engine):
    path = tmp_path / "keyed.yaml"
    path.write_text(LITERAL_KEY)
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    # The command line: one line naming the system and what to write instead, non-zero exit, nothing stored.
    done = subprocess.run([sys.executable, "-m", "studies", "--url", url, "load-config", str(path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(f"error: study file {path}: system 'remote' holds a literal api_key")
    assert "api_key_env: VARIABLE" in done.stderr and "api_key_file: PATH" in done.stderr
    assert "sk-secret-value" not in done.stderr
    # The validation itself, and apply_config for a config not made by it.
    with pytest.raises(StudyConfigError, match="system 'remote' holds a literal api_key"):
        load_config(path)
    named = parse_config({"name": "keyed", "systems": [
        {"name": "remote", "kind": "realtime", "config": {"url": "ws://box/v1/realtime", "api_key_env": "BOX_KEY"}}]})
    named.systems[0].config["api_key"] = "sk-secret-value"
    with session_scope(engine) as session:
        with pytest.raises(StudyConfigError, match="study 'keyed': system 'remote' holds a literal api_key"):
            apply_config(session, named)
    with session_scope(engine) as session:
        assert session.exec(select(DialogueSystem)).all() == []


@pytest.mark.parametrize("config, message", [
    ({"api_key_env": "A", "api_key_file": "/k"}, "names its key twice"),
    ({"api_key_env": ""}, "api_key_env must be an environment variable's name"),
    ({"api_key_file": 3}, "api_key_file must be a file's path"),
])
def test_a_key_reference_must_name_one_variable_or_file(config, message):
    entry = {"name": "remote", "kind": "realtime", "config": {"url": "ws://box/v1/realtime", **config}}
    with pytest.raises(StudyConfigError, match=None) as error:
        parse_config({"name": "keyed", "systems": [entry]}, source="study file s.yaml")
    assert str(error.value).startswith("study file s.yaml: system 'remote' ") and message in str(error.value)


def test_a_key_named_by_reference_is_stored_as_the_reference(tmp_path, engine):
    config = {"url": "wss://box/v1/realtime", "api_key_env": "BOX_KEY"}
    with session_scope(engine) as session:
        apply_config(session, parse_config({"name": "keyed", "systems": [
            {"name": "remote", "kind": "realtime", "config": config}]}))
    with session_scope(engine) as session:
        assert session.exec(select(DialogueSystem)).one().config == config


def test_a_study_sets_its_clip_length_and_reapplying_keeps_the_annotation_settings(tmp_path, engine):
    """`clip_seconds` goes into the study's config, where `annotation build-pairs --study` reads it;
    loading the file again keeps what `annotation register` stored beside it."""
    path = tmp_path / "study.yaml"
    path.write_text("name: short\nclip_seconds: [8, 15]\nsystems: [{name: a, kind: cascaded}]\n")
    with session_scope(engine) as session:
        study = apply_config(session, load_config(path))
        study.config = {**study.config, "annotation": {"judgments_per_pair": 5}}
        session.add(study)
    path.write_text("name: short\nclip_seconds: [10, 12]\nsystems: [{name: a, kind: cascaded}]\n")
    with session_scope(engine) as session:
        apply_config(session, load_config(path))
    with session_scope(engine) as session:
        study = session.exec(select(Study).where(Study.name == "short")).one()
        assert study.config["clip_seconds"] == [10.0, 12.0]
        assert study.config["annotation"] == {"judgments_per_pair": 5}


def test_a_bad_clip_length_is_refused_before_any_work(tmp_path):
    done = subprocess.run([sys.executable, "-m", "annotation", "build-pairs", str(tmp_path), "--out", str(tmp_path / "o"),
                           "--clip-seconds", "15", "8"], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == "error: clip length must be MIN <= MAX seconds within 4-120, got 15 8\n"
