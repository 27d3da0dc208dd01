"""`python -m naturalness validate` on a small Switchboard slice (two hand-built conversations in
the MS-98 layout), and `python -m naturalness card` on the committed results: the card's tables are
those results, byte for byte, and a run writes the same result files twice."""

import json

import pytest

from naturalness.validation.tables import BEGIN, CARD, END, RESULTS_DIR, card_with_tables, read_results
from tests.command_line import run_cli
from tests.scripted import block_utterances, write_ms98


@pytest.fixture(scope="module")
def slice_corpus(tmp_path_factory):
    """One validation and one training conversation of 15 s blocks (every type has candidates)."""
    root = tmp_path_factory.mktemp("swb")
    write_ms98(root, "6001", block_utterances(), 15.0 * 12)
    write_ms98(root, "6002", block_utterances(8), 15.0 * 8)
    (root / "splits").mkdir()
    (root / "splits" / "val.txt").write_text("6001\n")
    (root / "splits" / "train.txt").write_text("6002\n")
    return root


def validate(corpus, out, card):
    return run_cli("naturalness", "validate", "--swb", corpus, "--per-type", "1", "--forms", "excise",
                   "--scorers", "timing-hazard-words", "timing-hazard", "--generators", "crosscheck", "blind",
                   "--results", out, "--card", card)


def test_validate_writes_results_and_the_card_tables_from_them_the_same_twice(slice_corpus, tmp_path):
    card = tmp_path / "card.md"
    card.write_text(f"# card\n\n{BEGIN}\nold tables\n{END}\n\nafter\n")
    first = validate(slice_corpus, tmp_path / "first", card)
    assert first.returncode == 0, first.stderr
    results = {p.name: p.read_text() for p in (tmp_path / "first").glob("*.json")}
    assert sorted(results) == ["blind-excise.json", "crosscheck-excise.json"]
    blind = json.loads(results["blind-excise.json"])
    assert blind["generator"] == "blind" and blind["per_type"] == 1
    assert list(blind["columns"])[:2] == ["timing-hazard-words", "timing-hazard"]
    assert blind["columns"]["timing-hazard"]["pairs"] == 5
    text = card.read_text()
    assert "old tables" not in text and text.endswith(f"{END}\n\nafter\n")
    assert "#### blind, hold removal excise" in text and "| hold_instead_of_shift | 1 |" in text
    assert card_with_tables(text, read_results(tmp_path / "first")) == text

    again = validate(slice_corpus, tmp_path / "again", card)
    assert again.returncode == 0, again.stderr
    assert {p.name: p.read_text() for p in (tmp_path / "again").glob("*.json")} == results
    assert "unchanged" in again.stdout or "match" in again.stdout


def test_the_model_card_tables_are_the_committed_results_byte_for_byte(tmp_path):
    assert card_with_tables(CARD.read_text(), read_results(RESULTS_DIR)) == CARD.read_text()
    checked = run_cli("naturalness", "card", "--check")
    assert checked.returncode == 0, checked.stderr
    stale = tmp_path / "card.md"
    stale.write_text(CARD.read_text().replace(END, f"| edited by hand |\n{END}"))
    refused = run_cli("naturalness", "card", "--check", "--card", stale)
    assert refused.returncode == 1 and len(refused.stderr.strip().splitlines()) == 1
    assert run_cli("naturalness", "card", "--card", stale).returncode == 0
    assert stale.read_text() == CARD.read_text()


def test_validate_refuses_a_directory_that_is_not_switchboard_in_one_line(tmp_path):
    result = run_cli("naturalness", "validate", "--swb", tmp_path, "--results", tmp_path / "r", "--card", tmp_path / "c")
    assert result.returncode == 2
    assert result.stderr.startswith("error:") and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()
