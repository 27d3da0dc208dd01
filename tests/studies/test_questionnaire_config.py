"""A study file's questionnaire: the default set when it writes none, its own items checked one by
one, and a bad one refused in one line naming the item (by `python -m studies load-config` too,
with nothing stored).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from storage.db import init_db, make_engine, session_scope
from storage.records import study_by_name
from studies.config import StudyConfigError, parse_config, stored_settings
from studies.questionnaire import DEFAULT_AFTER_CALL, QuestionnaireError, answer_problem, parse_questionnaire

ROOT = Path(__file__).resolve().parents[2]
TWO = [{"name": "a", "kind": "cascaded"}, {"name": "b", "kind": "cascaded"}]
ONE = TWO[:1]


def test_without_one_the_study_gets_the_turn_taking_items_and_with_two_systems_the_ranking():
    two = parse_config({"name": "s", "systems": TWO})
    assert two.questionnaire is None  # not stored: the default, as the code has it then
    default = two.call_questionnaire(2)
    assert [item.id for item in default.after_call] == ["right_time", "interrupted_me", "made_me_wait", "let_me_finish",
                                                        "backchannels_natural", "overall_natural", "comment"]
    assert [i.id for i in default.after_call if i.reverse_keyed] == ["interrupted_me", "made_me_wait"]
    assert [(i.kind, i.required) for i in default.after_call][-1] == ("text", False)
    assert all(i.points == 5 and i.labels == ("Strongly disagree", "Strongly agree")
               for i in default.after_call if i.kind == "scale")
    assert [(i.id, i.kind) for i in default.after_last] == [("most_natural", "rank")]
    assert parse_config({"name": "s", "systems": ONE}).call_questionnaire(1).after_last == ()


def test_a_study_writes_its_own_and_it_is_stored_with_the_study():
    own = {"after_call": [
        {"id": "waited", "kind": "scale", "text": " The system made me wait. ", "points": 7,
         "labels": ["Never", "All the time"], "reverse_keyed": True},
        {"id": "topic_kept", "kind": "choice", "text": "Did it stay on topic?", "options": ["yes", "partly", "no"]},
        {"id": "comment", "kind": "text", "text": "Anything else?", "required": False}],
        "after_last": [{"id": "best", "kind": "pick", "text": "Which was the most natural?"}]}
    config = parse_config({"name": "s", "systems": TWO, "questionnaire": own})
    again = stored_settings("s", "s", config.study_json()).call_questionnaire(2)  # as a stored study reads it
    assert again == config.call_questionnaire(2)
    waited = again.after_call[0]
    assert (waited.text, waited.points, waited.labels, waited.reverse_keyed) == (
        "The system made me wait.", 7, ("Never", "All the time"), True)
    assert answer_problem(again.after_call, {"waited": 7, "topic_kept": "partly"}) is None
    assert answer_problem(again.after_last, {"best": "system-3"}, ["system-1", "system-2"]) == (
        "Which was the most natural? needs one of the systems you talked to (system-1, system-2)")


@pytest.mark.parametrize("item, message", [
    ({"id": "q", "kind": "slider", "text": "How?"},
     "after_call item #1 (q) has unknown kind 'slider' (known here: scale, choice, text)"),
    ({"id": "q", "kind": "scale", "text": "How natural?"},
     "after_call item #1 (q): a scale needs 'labels': the texts of its two ends, lowest first"),
    ({"id": "q", "kind": "scale", "text": "How natural?", "labels": ["Not at all"]},
     "after_call item #1 (q): a scale needs 'labels': the texts of its two ends, lowest first"),
    ({"id": "q", "kind": "text", "text": "  "}, "after_call item #1 (q) has no 'text' (the question the participant reads)"),
    ({"id": "q", "kind": "scale", "text": "How?", "points": 10, "labels": ["a", "b"]},
     "after_call item #1 (q): 'points' must be 5 or 7, got 10"),
    ({"id": "q", "kind": "rank", "text": "Rank them."},
     "after_call item #1 (q) has unknown kind 'rank' (known here: scale, choice, text)"),
])
def test_a_bad_item_is_refused_in_one_line_naming_it(item, message):
    with pytest.raises(StudyConfigError) as refused:
        parse_config({"name": "s", "systems": TWO, "questionnaire": {"after_call": [item]}}, source="study file x.yaml")
    assert str(refused.value) == f"study file x.yaml: 'questionnaire': {message}"
    assert "\n" not in str(refused.value)


def test_a_ranking_needs_two_systems_and_ids_are_used_once():
    with pytest.raises(QuestionnaireError, match="a 'pick' or 'rank' item needs a study with two systems or more"):
        parse_questionnaire({"after_last": [{"id": "r", "kind": "rank", "text": "Rank them."}]}, 1)
    repeated = {"after_call": [DEFAULT_AFTER_CALL[0].as_dict() | {"reverse_keyed": False}],
                "after_last": [{"id": "right_time", "kind": "pick", "text": "Which?"}]}
    with pytest.raises(QuestionnaireError, match="item id\\(s\\) right_time used more than once"):
        parse_questionnaire(repeated, 2)


def test_load_config_refuses_a_bad_questionnaire_in_one_line_and_stores_nothing(tmp_path):
    path = tmp_path / "study.yaml"
    path.write_text("name: asked\nsystems: [{name: a, kind: cascaded}]\n"
                    "questionnaire:\n  after_call:\n    - {id: felt, kind: scale, text: \"It felt natural.\"}\n")
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    done = subprocess.run([sys.executable, "-m", "studies", "--url", url, "load-config", str(path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (f"error: study file {path}: 'questionnaire': after_call item #1 (felt): a scale needs "
                           "'labels': the texts of its two ends, lowest first\n")
    engine = make_engine(url)
    init_db(engine)
    with session_scope(engine) as session:
        assert study_by_name(session, "asked") is None
    engine.dispose()
