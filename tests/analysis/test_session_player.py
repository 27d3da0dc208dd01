"""The session player's length as a person reads it, to the tenth of a second, with the carry
into the minutes and hours (the browser test of the player is in tests/test_researcher_browser.py)."""

from __future__ import annotations

import pytest

from analysis.session_player import clock, player_value


@pytest.mark.parametrize(("seconds", "shown"), [
    (0.0, "0:00.0"), (45.0, "0:45.0"), (59.8, "0:59.8"), (59.96, "1:00.0"), (299.9, "4:59.9"),
    (299.96, "5:00.0"), (3599.96, "1:00:00.0"), (3725.25, "1:02:05.3"),
])
def test_clock_carries_into_the_minutes_and_hours(seconds, shown):
    assert clock(seconds) == shown


def test_a_session_without_a_recording_has_no_player(tmp_path):
    assert player_value(3, None, None) is None
    value = player_value(3, tmp_path / "call.wav", 299.9)
    assert value["session"] == 3 and value["length"] == "4:59.9"
    assert value["recording"]["path"] == str(tmp_path / "call.wav")
