import json
import subprocess
import sys

import numpy as np
import pytest

from tests.scripted import scripted_conversation, write_ms98
from turntaking.backchannel_timing import (
    N_BINS,
    BackchannelTiming,
    bin_labels,
    exposure_s,
    fit_backchannel_timing,
    offset_bin,
    onset_offset,
    switchboard_backchannel_timing,
)
from turntaking.events import detect_events


def test_offsets_are_measured_from_the_end_of_the_speakers_ipu():
    ipus, turn = [(0.5, 3.0), (3.8, 6.0), (6.5, 8.0)], (0.5, 8.0)
    assert onset_offset(3.2, ipus, turn) == pytest.approx(0.2)  # in the pause after 3.0
    assert onset_offset(5.0, ipus, turn) == pytest.approx(-1.0)  # 1 s before the IPU ends
    assert onset_offset(0.2, ipus, turn) is None and onset_offset(8.5, ipus, turn) is None
    labels = bin_labels()
    assert labels[offset_bin(0.2)] == "[+0.2, +0.4)" and labels[offset_bin(-1.0)] == "[-1.0, -0.8)"
    assert labels[offset_bin(0.0)] == "[+0.0, +0.2)" and labels[offset_bin(-0.01)] == "[-0.2, +0.0)"
    assert offset_bin(-7.0) == 0 and offset_bin(9.0) == N_BINS - 1


def test_a_turns_seconds_are_shared_out_over_the_offsets():
    seconds = exposure_s([(0.0, 1.0), (1.5, 5.0)], (0.0, 5.0))
    assert seconds.sum() == pytest.approx(5.0)
    labels = bin_labels()
    assert seconds[labels.index("[+0.4, +0.6)")] == pytest.approx(0.1)  # the 0.5 s pause ends inside it
    assert seconds[labels.index("[+0.6, +0.8)")] == 0
    assert seconds[0] == pytest.approx(0.5)  # 3.5 s IPU: its first 0.5 s is more than 3 s from its end
    assert seconds[labels.index("[-0.2, +0.0)")] == pytest.approx(0.4)  # both IPUs' last 200 ms


def test_fitted_on_the_scripted_conversation_the_two_backchannels_land_in_their_bins():
    events = detect_events(scripted_conversation())
    timing = fit_backchannel_timing([events], "scripted")
    onsets = dict(zip(bin_labels(), timing.onsets))
    # "uh-huh" 0.2 s into A's pause, "yeah" 1.0 s before A's IPU ends; nothing else is a backchannel
    assert onsets["[+0.2, +0.4)"] == 1 and onsets["[-1.0, -0.8)"] == 1 and sum(timing.onsets) == 2
    assert sum(timing.exposure_s) == pytest.approx(sum(e - s for side in events.turns for s, e in side))
    # stored and read back, the rates give the counts back on the same speech
    again = BackchannelTiming.from_dict(json.loads(json.dumps(timing.as_dict())))
    speech = [[seg for seg in events.ipus[k] if seg not in events.backchannels[k]] for k in (0, 1)]
    expected = sum(again.expected_counts(speech[k], turn).sum() for k in (0, 1) for turn in events.turns[k])
    assert expected == pytest.approx(2.0)


def test_the_packaged_switchboard_table_peaks_just_after_the_speaker_stops():
    timing = switchboard_backchannel_timing()
    rates = timing.rates()
    labels = bin_labels()
    assert timing.conversations > 1000 and "train" in timing.source
    peak = labels[int(np.argmax(rates))]
    assert peak in ("[+0.0, +0.2)", "[+0.2, +0.4)")
    # listeners backchannel several times more often just after an IPU than deep inside one
    assert rates[labels.index("[+0.0, +0.2)")] > 5 * rates[0]
    overall = sum(timing.onsets) / sum(timing.exposure_s)
    assert 0.04 < overall < 0.1  # per second of the speaker's turns


def test_a_table_with_other_bins_is_refused():
    data = switchboard_backchannel_timing().as_dict()
    data["bins"] = data["bins"][:-1]
    with pytest.raises(ValueError, match="rebuild it"):
        BackchannelTiming.from_dict(data)


def test_the_command_fits_a_corpus_layout_and_refuses_a_missing_one(tmp_path):
    write_ms98(tmp_path, "4321")
    (tmp_path / "splits").mkdir()
    (tmp_path / "splits" / "train.txt").write_text("4321\n")
    out = tmp_path / "timing.json"
    done = subprocess.run([sys.executable, "-m", "analysis", "backchannel-timing", "--corpus", "switchboard",
                           str(tmp_path), "--out", str(out), "--quiet"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    table = json.loads(out.read_text())
    assert sum(table["onsets"]) == 2 and table["conversations"] == 1
    assert "[+0.2, +0.4)" in done.stdout
    missing = subprocess.run([sys.executable, "-m", "analysis", "backchannel-timing", "--corpus", "switchboard",
                              str(tmp_path / "nowhere"), "--out", str(out)], capture_output=True, text=True)
    assert missing.returncode == 2
    assert missing.stderr.strip().startswith("error:") and len(missing.stderr.strip().splitlines()) == 1
