"""The audio turn-completion cue: Smart Turn v3.2 (packaged through the pipecat-ai carrier wheel) at
every IPU end of real espeak-ng speech, how it moves the timing hazards, and its errors."""

import shutil

import numpy as np
import pytest

from turntaking.activity import Conversation
from speech.models import ModelError
from speech.recordings import load_recording_audio
from speech.smart_turn import SMART_TURN_PIN, SmartTurn, find_smart_turn
from naturalness.scorers import load_scorer
from naturalness.timing_hazard.context import FRAME_RATE, ipu_frames
from naturalness.turn_cue import TurnEndCue, cue_logit_shift, ipu_ends, smart_turn_cues
from tests.rendered_speech import alternating_dialogue
from tests.command_line import one_line_error, run_cli, run_cli_json


@pytest.fixture(scope="module")
def speech_wav(tmp_path_factory):
    speech = alternating_dialogue(("hello there how are you today", "i am fine thank you very much",
                                   "would you like to go for a walk", "yes that sounds like a lovely idea",
                                   "let us meet at the park at noon"), gap=0.6)
    return speech.write(tmp_path_factory.mktemp("cue") / "dialogue.wav")


def test_cue_shift_favours_the_other_speaker_after_a_finished_end():
    conv = Conversation(4.0, ([(0.5, 1.5), (2.5, 3.0)], [(1.0, 1.2), (2.0, 2.4)]))
    va = ipu_frames(conv)
    cues = [TurnEndCue(0, 1.5, 0.9), TurnEndCue(0, 3.0, 0.5), TurnEndCue(1, 2.4, 0.7)]
    shift = cue_logit_shift(cues, va, FRAME_RATE, weight=2.0)
    logit = lambda p: np.log(p / (1 - p))  # noqa: E731
    d = 2.0 * (logit(0.9) - np.median([logit(0.9), logit(0.5)]))  # speaker 0's cues, centred on its median
    # after A's end at 1.5 s: frames 30..39 are silent until B starts at 2.0 s (frame 40)
    assert shift[1, 30:40] == pytest.approx(np.full(10, d)) and shift[0, 30:40] == pytest.approx(np.full(10, -d))
    assert shift[:, 40:48].tolist() == np.zeros((2, 8)).tolist()  # B speaking: no cue
    # B's only cue is its own median: no evidence either way
    assert np.all(shift[:, 48:50] == 0)
    # after A's end at 3.0 s: silence to the last transition (frames 60..78), a below-median cue
    assert shift[1, 60:79] == pytest.approx(np.full(19, 2.0 * (logit(0.5) - np.median([logit(0.9), logit(0.5)]))))


def test_smart_turn_cues_on_real_speech(speech_wav):
    conv, audio = load_recording_audio(speech_wav)
    cues = smart_turn_cues(audio, conv)
    assert [(c.speaker, c.time_s) for c in cues] == ipu_ends(conv)
    assert len(cues) == 5 and [c.speaker for c in cues] == [0, 1, 0, 1, 0]
    assert all(0.0 < c.p_complete < 1.0 for c in cues)
    again = smart_turn_cues(audio, conv)
    assert [c.p_complete for c in again] == pytest.approx([c.p_complete for c in cues], abs=1e-6)


def test_scorer_with_cues_changes_only_silences_after_ends(speech_wav):
    conv, audio = load_recording_audio(speech_wav)
    scorer = load_scorer()
    cues = smart_turn_cues(audio, conv)
    plain, cued = scorer.score(conv), scorer.score(conv, cues)
    assert plain.n_flips == cued.n_flips and cued.total_nll != pytest.approx(plain.total_nll)
    assert scorer.score(conv, [TurnEndCue(c.speaker, c.time_s, 0.5) for c in cues]).total_nll == pytest.approx(
        plain.total_nll)  # a cue equal to the speaker's median is no evidence


def test_cli_audio_cue_and_its_errors(speech_wav, tmp_path, monkeypatch):
    report = run_cli_json("naturalness", "score", speech_wav, "--audio-cue")
    # the default scorer with the audio cue reads the recording without ASR: no word cues
    assert report["audio_cue"] == "smart-turn-v3.2" and report["dialogues"][0]["scorer"] == "timing-hazard-words"
    assert report["dialogues"][0]["word_cues"] is None
    one_line_error(run_cli("naturalness", "score", speech_wav, "--audio-cue", "--scorer", "durations"), "no audio cue")
    vad_json = tmp_path / "va.json"
    vad_json.write_text('{"duration": 3, "vad": [[[0.5, 1.0]], [[1.5, 2.0]]]}')
    one_line_error(run_cli("naturalness", "score", vad_json, "--audio-cue"), "va.json", "needs two-channel audio")

    changed = tmp_path / "smart-turn-v3.2-cpu.onnx"
    shutil.copy(find_smart_turn(), changed)
    changed.write_bytes(changed.read_bytes()[:-1] + b"\0")
    monkeypatch.setenv("SMART_TURN_ONNX", str(changed))
    one_line_error(run_cli("naturalness", "score", speech_wav, "--audio-cue"), "sha256", SMART_TURN_PIN[2][:16])
    monkeypatch.setenv("SMART_TURN_ONNX", str(tmp_path / "missing.onnx"))
    one_line_error(run_cli("naturalness", "score", speech_wav, "--audio-cue"), "not found", "pipecat-ai")
    with pytest.raises(ModelError, match="not found"):
        SmartTurn()
