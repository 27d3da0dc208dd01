"""Talking Turns section 5 test beds on a scripted two-speaker conversation whose events are known.

Three 20 s blocks, each: the labels-test script (T at 2.4 and 6.0 s, A's backchannel "yeah" at
3.0-3.4 s, A's interruptions at 5.0 and 5.8 s), then A alone (8.4-19.6 s, pauses only).
Understand windows: 10 s every 5 s, starts 0, 5, ..., 50; relative to a block a window at
  r=0  holds T, BC, I        r=5  T, I (not BC)        r=10 nothing        r=15 next block's T, BC
so T has 8 positives / 3 negatives, BC 5 / 6, I 6 / 5: balanced beds of 3, 5 and 5 per class.
"""

import io
from contextlib import redirect_stderr, redirect_stdout
from types import SimpleNamespace
import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
import soundfile

from turntaking.activity import Conversation, Word
from judge.labels import BC, CHUNK_S, I, T, chunk_states
from judge.thresholds import MetricThresholds
from predictorbench.testbeds.adapters import OpenAIChatAdapter, wav_base64
from predictorbench.testbeds.evaluation import evaluate, topline
from predictorbench.testbeds.items import TestbedError, build
from predictorbench.testbeds.prompts import PROMPTS, parse_answer
from tests.predictorbench.speech_fixtures import SR, phrase

SCRIPT = [(0, 0.40, 2.00, "so i went home today"), (1, 2.40, 4.00, "well i think that is fine"),
          (0, 3.00, 3.40, "yeah"), (1, 4.40, 6.00, "and then we left early"), (0, 5.00, 5.40, "but wait"),
          (0, 5.80, 7.60, "let me tell you something")]
MONOLOGUE = [(0, 8.4 + 2 * k, 10.0 + 2 * k, "and so on and on") for k in range(6)]
BLOCKS, BLOCK_S = 3, 20.0


def in_process(*args):
    """The CLI in this process (same parser and handlers as `python -m predictorbench ...`)."""
    from predictorbench.__main__ import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    return SimpleNamespace(returncode=code, stdout=out.getvalue(), stderr=err.getvalue())


def script():
    return [(spk, s + b * BLOCK_S, e + b * BLOCK_S, text) for b in range(BLOCKS) for spk, s, e, text in SCRIPT + MONOLOGUE]


def conversation():
    activity, words = ([], []), ([], [])
    for spk, s, e, text in script():
        activity[spk].append((s, e))
        tokens = text.split()
        step = (e - s) / len(tokens)
        words[spk].extend(Word(s + i * step, s + (i + 1) * step, t) for i, t in enumerate(tokens))
    return Conversation(BLOCKS * BLOCK_S, activity, words, source="scripted")


def stereo_audio():
    """espeak-ng speech of each line, cut or looped to its segment, on the speaker's channel."""
    audio = np.zeros((2, int(BLOCKS * BLOCK_S * SR)), dtype=np.float32)
    for spk, s, e, text in script():
        n = int(round((e - s) * SR))
        audio[spk, int(round(s * SR)): int(round(s * SR)) + n] = np.resize(phrase(text), n)
    return audio


@pytest.fixture(scope="module")
def items():
    return build([conversation()], per_class=750, seed=0)


def counts(items):
    out = {}
    for x in items:
        out.setdefault(f"{x.bed}/{x.event}", [0, 0])[0 if x.label else 1] += 1
    return out


def test_understand_bed_by_hand(items):
    c = counts(items)
    assert c["understand/turn_change"] == [3, 3]
    assert c["understand/backchannel"] == [5, 5]
    assert c["understand/interruption"] == [5, 5]
    labels = chunk_states(conversation()).labels
    code = {"turn_change": T, "backchannel": BC, "interruption": I}
    for x in items:
        if x.bed == "understand":
            assert x.end - x.start <= 10.0 + 1e-9
            window = labels[int(round(x.start / CHUNK_S)): int(round(x.end / CHUNK_S))]
            assert bool((window == code[x.event]).any()) == x.label
            if x.event == "backchannel":
                assert x.label == (round(x.start) % 20 in (0, 15))


def test_predict_bed_is_balanced_and_causal(items):
    c = counts(items)
    assert {k for k in c if k.startswith("predict/")} == {
        "predict/turn_change", "predict/backchannel", "predict/interruption", "predict/floor_taking_interruption"}
    assert all(pos == neg > 0 for k, (pos, neg) in c.items())
    states = chunk_states(conversation())
    want = {"turn_change": T, "backchannel": BC, "interruption": I, "floor_taking_interruption": T}
    for x in items:
        if x.bed == "predict":
            # the clip ends where chunk i starts (the model sees chunks < i), with <= 30 s of context
            assert x.end == pytest.approx(x.chunk * CHUNK_S) and x.end - x.start <= 30.0 + 1e-9
            assert (states.labels[x.chunk] == want[x.event]) == x.label
    # turn changes of the script: B at 2.4 s after A's pause (positive), A's own pauses (negative)
    tc = {(x.chunk, x.label) for x in items if x.event == "turn_change"}
    assert (60, True) in tc


def test_answers_parse_per_prompt():
    assert parse_answer("(b) No", "a") is False and parse_answer("Yes, the speakers do.", "a") is True
    assert parse_answer("B", "b", yes_no=False) is True and parse_answer("A. they continue", "b", yes_no=False) is False
    assert parse_answer("A turn change happens", "b", yes_no=False) is None
    assert parse_answer("I cannot tell.", "a") is None
    assert PROMPTS[("predict", "turn_change")][1] == "b"


class Constant:
    name = "constant"

    def __init__(self, text):
        self.text = text

    def answer(self, audio, prompt):
        return self.text


def test_constant_answers_score_the_random_baseline(items):
    audio = np.zeros((2, int(BLOCKS * BLOCK_S * SR)), dtype=np.float32)
    result = evaluate(items, Constant("(a)"), lambda conv: audio)
    assert {k: v["accuracy"] for k, v in result["beds"].items()} == {k: 0.5 for k in counts(items)}


def test_topline_with_fixed_decisions(items, tmp_path):
    import torch

    from judge.model import JudgeModel

    torch.manual_seed(0)
    model = JudgeModel().eval()
    convs = {"scripted": conversation()}
    # a judge that always says "event" (or never) is right on exactly half of a balanced bed
    for value in (-10.0, 10.0):
        th = MetricThresholds(speak_up=value, backchannel=value, interrupt=value, handle_interruption=value)
        top = topline(items, convs, model, th)
        assert {k: v["accuracy"] for k, v in top.items()} == {k: 0.5 for k in counts(items) if k.startswith("predict")}
    with pytest.raises(TestbedError, match="conversation scripted of item"):
        topline(items, {}, model, MetricThresholds())


class OverlapServer(BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint that answers "(a) Yes" when both channels of the clip carry
    sound at the same time (a crude interruption detector), else "(b) No"."""

    seen: list = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        part = body["messages"][0]["content"][1]["input_audio"]
        import base64
        import io

        audio, _ = soundfile.read(io.BytesIO(base64.b64decode(part["data"])), dtype="float32", always_2d=True)
        frames = audio[: len(audio) // 640 * 640].reshape(-1, 640, audio.shape[1])
        loud = np.sqrt((frames ** 2).mean(axis=1)) > 0.01
        both = audio.shape[1] == 2 and bool((loud[:, 0] & loud[:, 1]).any())
        OverlapServer.seen.append((self.path, self.headers.get("Authorization"), body["model"], part["format"]))
        reply = json.dumps({"choices": [{"message": {"role": "assistant",
                                                     "content": "(a) Yes" if both else "(b) No"}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


def test_openai_compatible_client_on_a_local_server(items, tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), OverlapServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/v1"
        audio = stereo_audio()
        adapter = OpenAIChatAdapter(url, "overlap-1", api_key="k", channels="stereo")
        bed = [x for x in items if x.bed == "understand" and x.event == "interruption"]
        result = evaluate(bed, adapter, lambda conv: audio)
        # positives all overlap; of the 5 negatives, the 2 windows holding the backchannel
        # "yeah" (spoken over B) fool the detector: (5 + 3) / 10
        assert result["beds"]["understand/interruption"]["accuracy"] == pytest.approx(0.8)
        assert OverlapServer.seen[0] == ("/v1/chat/completions", "Bearer k", "overlap-1", "wav")
        # the default mono mixture hides who speaks: never "both channels"
        mono = evaluate(bed[:2], OpenAIChatAdapter(url, "overlap-1"), lambda conv: audio)
        assert [a["parsed"] for a in mono["answers"]] == [False, False]
        with pytest.raises(TestbedError, match="request failed"):
            OpenAIChatAdapter("http://127.0.0.1:9/v1", "m", timeout_s=2).answer(audio[:, :SR], "q")
    finally:
        server.shutdown()
    assert len(wav_base64(audio[:, :SR])) > 0


def test_cli_build_and_random_baseline(tmp_path):
    conv = conversation()
    (tmp_path / "scripted.json").write_text(json.dumps({
        "duration": conv.duration, "vad": [list(map(list, a)) for a in conv.activity],
        "words": [[[w.start, w.end, w.text] for w in ws] for ws in conv.words]}))
    soundfile.write(tmp_path / "scripted.wav", np.zeros((int(conv.duration * SR), 2), dtype=np.float32), SR)
    run = [sys.executable, "-m", "predictorbench", "testbeds"]
    r = subprocess.run(run + ["build", "--recordings", str(tmp_path / "scripted.json"), "--out",
                              str(tmp_path / "items.jsonl"), "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["beds"]["understand/turn_change"] == {"positive": 3, "negative": 3, "max_clip_s": 10.0}
    r = in_process(*run[3:], "evaluate", "--items", str(tmp_path / "items.jsonl"), "--audio-dir", str(tmp_path),
                   "--adapter", "random", "--json")
    assert r.returncode == 0, r.stderr
    beds = json.loads(r.stdout)["beds"]
    assert set(beds) == {f"understand/{e}" for e in ("turn_change", "backchannel", "interruption")} | {
        f"predict/{e}" for e in ("turn_change", "backchannel", "interruption", "floor_taking_interruption")}
    assert all(0 <= v["accuracy"] <= 1 and v["random_baseline"] == 0.5 for v in beds.values())
    r = in_process(*run[3:], "evaluate", "--items", str(tmp_path / "items.jsonl"), "--audio-dir", str(tmp_path / "x"),
                   "--adapter", "random")
    assert r.returncode == 2 and r.stderr.startswith("error: no two-channel audio for scripted")
