"""The cascade's LLM endpoint (`llm_endpoint`) against llama.cpp's own OpenAI-compatible server
(`python -m llama_cpp.server` of llama-cpp-python, built from source in its own virtualenv),
serving the packaged SmolLM2 GGUF: streaming, the key, a model name the server does not have, a
server that stalls before its first token and one that stops mid-reply, and real calls through
the cascade with `llm_endpoint` set, the call ending failed with the reason and its recording
kept where the server goes."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
import soundfile

from speech.models import SMOLLM2_GGUF, packaged_model_path
from studies.offline_call import FixedFeed, TurnByTurnFeed, run_offline_feed
from systems import SystemError_, system_kind
from systems.cascaded import CascadedSettings, CascadedSystem
from systems.language_models import ChatLLM, EndpointLLM
from tests.browser import free_port
from tests.peers import PeerServer, peer_python
from tests.studies.conftest import espeak_16k, scripted_user

KEY_ENV = "LLAMA_SERVER_TEST_KEY"
KEY = "llama-server-test-key-0123456789"
MODEL = "smollm2"
MESSAGES = [{"role": "system", "content": "You are Sam, chatting on the phone about cats."},
            {"role": "user", "content": "My cat sleeps all day. Is that normal?"}]


def llama_server(port: int) -> PeerServer:
    """llama.cpp's server on the packaged GGUF, its key from the environment (never argv: the
    process list is readable by every user of the machine)."""
    argv = [str(peer_python(".venv-llama-server")), "-m", "llama_cpp.server",
            "--model", str(packaged_model_path(SMOLLM2_GGUF)), "--model_alias", MODEL,
            "--host", "127.0.0.1", "--port", str(port), "--n_threads", "1", "--verbose", "False"]
    return PeerServer(argv, ready="Uvicorn running on", env={"API_KEY": KEY})


@pytest.fixture(scope="module")
def server():
    port = free_port()
    with llama_server(port) as running:
        yield running, f"http://127.0.0.1:{port}/v1"


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    return {"api_key_env": KEY_ENV}


def test_the_reply_streams_piece_by_piece_and_stops_when_told(server, key):
    _, url = server
    llm = EndpointLLM(url, MODEL, key)
    llm.check()
    pieces = list(llm.stream(MESSAGES, 24))
    assert len(pieces) >= 5 and "".join(pieces).strip()  # token by token, not one block
    taken = []
    for piece in llm.stream(MESSAGES, 24, stop=lambda: len(taken) >= 2):
        taken.append(piece)
    assert len(taken) == 2


def test_the_server_model_is_found_and_a_name_it_does_not_have_is_refused(server, key):
    _, url = server
    found = EndpointLLM(url, None, key)
    found.check()  # no name: the server's only model
    assert found.model == MODEL
    # llama.cpp's server would answer any name with its own model: the client asks first
    with pytest.raises(SystemError_, match=f"does not serve the model 'gpt-4o' \\(it serves: {MODEL}\\)"):
        EndpointLLM(url, "gpt-4o", key).check()


def test_the_key_is_sent_from_where_the_study_names_it(server, monkeypatch, tmp_path):
    _, url = server
    with pytest.raises(SystemError_, match="HTTP 401 \\(the API key is missing or wrong\\)"):
        EndpointLLM(url, MODEL).check()
    monkeypatch.setenv(KEY_ENV, "not-the-key")
    with pytest.raises(SystemError_, match="HTTP 401"):
        list(EndpointLLM(url, MODEL, {"api_key_env": KEY_ENV}).stream(MESSAGES, 4))
    key_file = tmp_path / "llm.key"
    key_file.write_text(KEY + "\n")
    assert "".join(EndpointLLM(url, MODEL, {"api_key_file": str(key_file)}).stream(MESSAGES, 4)).strip()
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(SystemError_, match=f"cannot send the API key: the environment variable {KEY_ENV}"):
        EndpointLLM(url, MODEL, {"api_key_env": KEY_ENV}).check()


@pytest.mark.parametrize("config, problem", [
    ({"llm_endpoint": "http://lab:8000/v1", "llm_api_key": "sk-123"}, "holds a literal llm_api_key"),
    ({"llm_endpoint": "http://lab:8000/v1", "llm_api_key_env": "A", "llm_api_key_file": "/k"}, "names its key twice"),
    ({"llm_endpoint": "http://lab:8000/v1", "llm_timeout_s": 0}, "llm_timeout_s must be a positive number"),
])
def test_a_study_file_that_writes_the_key_or_a_bad_limit_is_refused(config, problem):
    with pytest.raises(SystemError_, match=problem):
        system_kind("cascaded").parse(config)


def test_an_unreachable_endpoint_fails_at_the_check():
    with pytest.raises(SystemError_, match="cannot be reached: ConnectError"):
        EndpointLLM(f"http://127.0.0.1:{free_port()}/v1", MODEL).check()


@dataclass
class CallStarted(FixedFeed):
    """The participant's recording, and `started()` called once the call's clock starts (after
    the system's start, which asks the endpoint for its models)."""

    started: Callable[[], None] = lambda: None

    def block(self, first: int, size: int) -> np.ndarray:
        if first == 0:
            self.started()
        return super().block(first, size)


def endpoint_system(cascade_components, config: dict, llm: ChatLLM | None = None) -> CascadedSystem:
    """The cascade whose LLM is the endpoint of `config`, built as the app builds it (or `llm`,
    the same client told more)."""
    settings = CascadedSettings.from_config(config)
    vad, asr, _, tts = cascade_components
    return CascadedSystem(config, components=(vad, asr, llm or ChatLLM.from_settings(settings), tts))


def play(tmp_path, system: CascadedSystem, feed):
    """The offline call of `feed` to `system`, and its logged events."""
    result = run_offline_feed(feed, tmp_path / "call.wav", system=system, topic="cats")
    return result, [json.loads(line) for line in result.log_path.read_text().splitlines()]


def endpoint_call(tmp_path, cascade_components, config: dict, lines: list[str], gap_s: float = 9.0,
                  started: Callable[[], None] = lambda: None, llm: ChatLLM | None = None):
    """An offline call of the endpoint's cascade, the lines said `gap_s` apart."""
    user_wav, times = scripted_user(tmp_path, lines, gap_s=gap_s)
    samples, _ = soundfile.read(str(user_wav), dtype="float32")
    result, events = play(tmp_path, endpoint_system(cascade_components, config, llm), CallStarted(samples, started))
    return result, events, times


def test_a_call_through_the_endpoint_answers_each_turn(server, key, tmp_path, cascade_components):
    _, url = server
    config = {"llm_endpoint": url, "llm_api_model": MODEL, **{f"llm_{k}": v for k, v in key.items()}}
    # The participant says each line once the reply has ended: the cascade does not listen while
    # it speaks, and through a server on a loaded machine a reply may begin 2 s late and run 7 s
    # (lines at a fixed 9 s apart were talked over so, and the second went unheard).
    lines = ["My cat sleeps all day.", "Do you have a cat?"]
    feed = TurnByTurnFeed([espeak_16k(line, tmp_path / f"line{k}.wav") for k, line in enumerate(lines)])
    result, events = play(tmp_path, endpoint_system(cascade_components, config), feed)
    assert len(feed.starts) == 2
    assert result.failure is None and result.unanswered == 0 and len(result.latencies_s) == 2
    replies = [e["text"] for e in events if e["event"] == "reply"]
    assert len(replies) == 2 and all(reply.strip() for reply in replies)
    first_tokens = [e["llm_s"] for e in events if e["event"] == "first_token"]
    assert len(first_tokens) == 2 and max(first_tokens) < 5


class StoppingServer(EndpointLLM):
    """The endpoint's client, unchanged, with `server` killed as soon as the first piece of a reply
    has reached it: the rest of the reply never comes."""

    def __init__(self, server: PeerServer, *args):
        super().__init__(*args)
        self.server = server

    def stream(self, *args, **kwargs):
        for piece in super().stream(*args, **kwargs):
            yield piece
            self.server.kill()


def test_a_server_stopping_mid_reply_ends_the_call_failed_with_the_recording_kept(tmp_path, cascade_components):
    port = free_port()
    config = {"llm_endpoint": f"http://127.0.0.1:{port}/v1", "llm_api_model": MODEL, "llm_api_key_env": KEY_ENV,
              "max_new_tokens": 400, "max_sentences": 100}  # a long reply: the server dies while it writes
    with llama_server(port) as stopping:
        llm = StoppingServer(stopping, config["llm_endpoint"], MODEL, {"api_key_env": KEY_ENV})
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(KEY_ENV, KEY)
            result, events, times = endpoint_call(tmp_path, cascade_components, config,
                                                  ["Tell me everything about cats."], gap_s=20.0, llm=llm)
    assert result.failure is not None and "stopped mid-reply after" in result.failure
    assert [e["reason"] for e in events if e["event"] == "failed"] == [result.failure]
    assert [e["event"] for e in events].count("first_token") == 1  # the reply had begun
    audio, _ = soundfile.read(str(result.out_wav))
    assert times[0][1] < len(audio) / 16000 < times[0][1] + 10  # ended when the server went, the turn kept


def test_a_first_token_slower_than_the_study_allows_ends_the_call_failed(tmp_path, cascade_components):
    port = free_port()
    config = {"llm_endpoint": f"http://127.0.0.1:{port}/v1", "llm_api_model": MODEL, "llm_api_key_env": KEY_ENV,
              "llm_timeout_s": 1.5}
    with llama_server(port) as stalled:
        # The call's start asks the server for its models; once the call runs, the server answers
        # nothing (the process stopped where it is: connections are taken, no token comes).
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(KEY_ENV, KEY)
            result, events, times = endpoint_call(tmp_path, cascade_components, config,
                                                  ["Is my cat too fat?"], gap_s=12.0, started=stalled.pause)
    assert result.failure is not None and "did not send a first token within 1.5 s (the study's llm_timeout_s)" \
        in result.failure
    turn_end = next(e["mic_s"] for e in events if e["event"] == "turn_end")
    assert turn_end + 1.0 < len(soundfile.read(str(result.out_wav))[0]) / 16000 < turn_end + 5
