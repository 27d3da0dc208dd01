"""`build-pairs` on two-channel recordings: rendered WAV clips whose edits land where the
metadata says, measured back with Silero on the rendered audio."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import soundfile

from turntaking.activity import load_conversation_json
from speech.vad import voice_activity
from tests.rendered_speech import alternating_dialogue

ROOT = Path(__file__).resolve().parents[2]
TEXTS = (
    "good morning how was your weekend",
    "it was great we went hiking in the hills",
    "that sounds wonderful was the weather good",
    "yes it was sunny and warm the whole time",
    "i would love to go there some day",
    "you should it is only an hour away by car",
    "do you think i need special boots for it",
    "no ordinary walking shoes are fine for that trail",
    "great i will plan a trip next month then",
    "let me know and i can send you the map",
    "thank you that is really kind of you",
    "no problem at all enjoy the walk",
)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    src = tmp_path_factory.mktemp("recordings")
    alternating_dialogue(TEXTS, gap=0.5).write(src / "talk.wav")
    out = tmp_path_factory.mktemp("bench")
    proc = subprocess.run(
        [sys.executable, "-m", "annotation", "build-pairs", str(src), "--out", str(out), "--per-type", "2",
         "--seed", "1", "--types", "late_response", "early_entry"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    return out


def entries(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_manifest_names_wav_clips_and_their_voice_activity(built):
    pairs = entries(built / "manifest.jsonl")
    assert {p["type"] for p in pairs} == {"late_response", "early_entry"}
    for p in pairs:
        for side in ("natural", "perturbed"):
            info = soundfile.info(str(built / p[side]))
            assert info.channels == 2
            vad = load_conversation_json(built / p[f"{side}_vad"])
            assert info.duration == pytest.approx(vad.duration, abs=0.01)


def test_the_moved_speech_lands_where_the_metadata_says(built):
    for p in entries(built / "manifest.jsonl"):
        k = p["details"]["channel"]
        moved_from = p["details"]["moved_start"]
        expected = moved_from + p["details"]["shift_s"]
        natural = voice_activity(built / p["natural"])
        perturbed = voice_activity(built / p["perturbed"])
        # The utterance starts where it did in the natural clip, and after the edit where the edit put it.
        assert min(abs(s - moved_from) for s, _ in natural.activity[k]) < 0.06
        assert min(abs(s - expected) for s, _ in perturbed.activity[k]) < 0.06, p["pair_id"]


def test_artifact_controls_keep_the_timing(built):
    controls = entries(built / "controls.jsonl")
    assert len(controls) == len(entries(built / "manifest.jsonl"))
    for c in controls:
        assert c["type"] == "artifact_control"
        natural = voice_activity(built / c["natural"])
        control = voice_activity(built / c["perturbed"])
        assert natural.duration == pytest.approx(control.duration, abs=0.001)
        for k in (0, 1):
            assert len(natural.activity[k]) == len(control.activity[k])
            for (a, _), (b, _) in zip(natural.activity[k], control.activity[k]):
                assert abs(a - b) < 0.05
