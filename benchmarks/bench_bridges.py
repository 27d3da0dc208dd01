"""What each way into a study adds to the answer's latency (end of the participant's speech ->
first system audio), measured in one sitting on the same utterances:

    embedded      the cascade in the app's process (CTranslate2 SmolLM2)
    endpoint      the same cascade, its LLM llama.cpp's server (`llm_endpoint`) on the same GGUF
    realtime      the same cascade served by `python -m studies serve-realtime`, reached over the
                  OpenAI Realtime protocol (the `realtime` kind)
    pipecat       a real pipecat bot over WebRTC (tests/studies/pipecat_bot.py: pipecat's Silero
                  VAD, stop_secs 0.3, says each utterance back): its latency split into the bot's
                  own decision (its VAD's stop, by the bot's clock) and the return path

    PYTHONPATH=. .venv/bin/python benchmarks/bench_bridges.py [--utterances 24] [--rounds 1] [--out F.json]

Needs the peers' virtualenvs (`make peers`). Each path gets one call per round of every
utterance, turn by turn (studies.offline_call.TurnByTurnFeed: the next utterance once the reply
has ended), the paths' calls interleaved round by round. The endpoint and realtime paths are
paired with the embedded cascade utterance by utterance (same words, same models): the mean
difference with a bootstrap interval over utterances (scipy.stats.bootstrap) is what the bridge
adds. Utterances: benchmarks/data/reply_questions_hike.txt and _new_york.txt, espeak-ng.

Measured on the 2-core machine, 7 Dec 2026, two runs one after the other (`--utterances 16`).
The table and what it says: docs/connect-your-system.md.

    path        run 1: mean / p50 / p90   run 2           added vs embedded, paired (run 1; run 2)
    embedded    0.841 / 0.829 / 1.118     0.722 / 0.713 / 0.907
    endpoint    0.799 / 0.830 / 0.938     0.757 / 0.748 / 0.888   -0.042 [-0.131, +0.039]; +0.035 [-0.042, +0.114]
    realtime    0.900 / 0.824 / 1.003     0.959 / 0.855 / 1.051   +0.059 [-0.077, +0.491]; +0.237 [+0.097, +0.698]
    pipecat     0.722 / 0.724 / 0.781     0.721 / 0.724 / 0.781   VAD stop at 0.450 s, voice 0.271 / 0.270 s later
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import soundfile
from scipy.stats import bootstrap
from tqdm import tqdm

from speech.models import SMOLLM2_GGUF, packaged_model_path
from studies.offline_call import TurnByTurnFeed, active_segments, run_offline_feed
from systems.cascaded import CascadedSettings, CascadedSystem
from systems.stages import load_stages
from systems.language_models import ChatLLM
from systems.kinds import system_kind
from tests.browser import free_port
from tests.peers import PeerServer, peer_python
from tests.rendered_speech import speak

os.environ.setdefault("HF_HUB_OFFLINE", "1")
RATE = 16000
DATA = Path(__file__).parent / "data"
PATHS = ("embedded", "endpoint", "realtime", "pipecat")


def utterances(count: int) -> list[tuple[str, np.ndarray]]:
    lines = [line.strip() for name in ("reply_questions_hike.txt", "reply_questions_new_york.txt")
             for line in (DATA / name).read_text().splitlines() if line.strip()]
    return [(line, speak(line) * 0.8) for line in lines[:count]]


def per_utterance_latency(recording: Path, feed: TurnByTurnFeed, lengths: list[int]) -> list[float | None]:
    """For each utterance, end of its speech -> the first system onset after it and before the
    next utterance (None: unanswered)."""
    audio, _ = soundfile.read(str(recording), dtype="float32")
    onsets = [start for start, _ in active_segments(audio[:, 1], bridge_s=0.25)]
    latencies = []
    for k, start in enumerate(feed.starts):
        end = (start + lengths[k]) / RATE
        until = feed.starts[k + 1] / RATE if k + 1 < len(feed.starts) else float("inf")
        after = [onset for onset in onsets if end <= onset < until]
        latencies.append(after[0] - end if after else None)
    return latencies


def mic_clock_wall(log_path: Path) -> float:
    """The wall-clock time of the call's mic position 0, from its timing log (the recorder's start
    `wall`, and its first `clock` event's elapsed time against its mic position)."""
    events = [json.loads(line) for line in log_path.read_text().splitlines()]
    start = next(e for e in events if e["event"] == "start")
    clock = next(e for e in events if e["event"] == "clock")
    return start["wall"] + clock["t"] - clock["mic_s"]


def bot_decisions(bot: PeerServer, seen: int, wall_start: float, feed: TurnByTurnFeed, lengths) -> list[float]:
    """The bot's own decision time per utterance: its VAD's stop (by its clock, on this machine)
    after the end of the utterance's speech."""
    stops = [float(line.split()[-1]) for line in bot.lines[seen:] if line.startswith("VAD stopped at")]
    ends = [wall_start + (start + n) / RATE for start, n in zip(feed.starts, lengths)]
    return [min((s - end for s in stops if s >= end), default=np.nan) for end in ends]


def mean_interval(values: np.ndarray) -> tuple[float, float, float]:
    values = values[~np.isnan(values)]
    if len(values) < 3:
        return float(np.mean(values)) if len(values) else float("nan"), float("nan"), float("nan")
    ci = bootstrap((values,), np.mean, n_resamples=5000, random_state=0).confidence_interval
    return float(np.mean(values)), float(ci.low), float(ci.high)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--utterances", type=int, default=24)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--paths", default=",".join(PATHS))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    paths = args.paths.split(",")
    spoken = utterances(args.utterances)
    lengths = [len(audio) for _, audio in spoken]
    components = load_stages(CascadedSettings())
    work = Path(tempfile.mkdtemp(prefix="bench-bridges-"))
    servers: dict[str, PeerServer] = {}
    configs: dict[str, dict] = {}
    if "endpoint" in paths:
        port = free_port()
        servers["endpoint"] = PeerServer([str(peer_python(".venv-llama-server")), "-m", "llama_cpp.server", "--model",
                                          str(packaged_model_path(SMOLLM2_GGUF)), "--model_alias", "smollm2",
                                          "--port", str(port), "--n_threads", "1", "--verbose", "False"],
                                         ready="Uvicorn running on")
        configs["endpoint"] = {"llm_endpoint": f"http://127.0.0.1:{port}/v1"}
    if "realtime" in paths:
        port = free_port()
        servers["realtime"] = PeerServer([sys.executable, "-m", "studies", "serve-realtime", "--port", str(port)],
                                         ready="serving cascaded on")
    if "pipecat" in paths:
        port = free_port()
        servers["pipecat"] = PeerServer([str(peer_python(".venv-pipecat")), "tests/studies/pipecat_bot.py",
                                         "--port", str(port)], ready="pipecat bot ready")
        configs["pipecat"] = {"url": f"http://127.0.0.1:{port}/api/offer"}
    for server in servers.values():
        server.wait_ready()
    if "realtime" in servers:
        configs["realtime"] = {"url": servers["realtime"].wait_for("serving cascaded on").split()[-1]}
    results = {path: [] for path in paths}
    decisions: list[float] = []
    try:
        calls = [(r, path) for r in range(args.rounds) for path in (paths if r % 2 == 0 else paths[::-1])]
        for r, path in tqdm(calls, desc="calls", unit="call"):
            if path in ("embedded", "endpoint"):
                config = configs.get(path, {})
                vad, asr, llm, tts = components
                if path == "endpoint":
                    llm = ChatLLM.from_settings(CascadedSettings.from_config(config))
                system = CascadedSystem(config, components=(vad, asr, llm, tts))
            else:
                system = system_kind(path).build(configs[path])
            feed = TurnByTurnFeed([audio for _, audio in spoken], quiet_s=1.0, wait_s=8.0)
            seen = len(servers["pipecat"].lines) if path == "pipecat" else 0
            result = run_offline_feed(feed, work / f"{path}-{r}.wav", system=system, topic="everyday plans")
            if result.failure:
                print(f"{path}: the call failed: {result.failure}", file=sys.stderr)
            results[path].append(per_utterance_latency(result.out_wav, feed, lengths))
            if path == "pipecat":
                decisions += bot_decisions(servers["pipecat"], seen, mic_clock_wall(result.log_path), feed, lengths)
    finally:
        for server in servers.values():
            server.kill()
    summary = {"utterances": len(spoken), "rounds": args.rounds, "load_1min": os.getloadavg()[0]}
    table = {path: np.array([np.nan if v is None else v for call in calls_ for v in call], dtype=float)
             for path, calls_ in results.items()}
    print(f"{'path':<10} {'answered':>9} {'mean s':>8} {'p50 s':>7} {'p90 s':>7}   vs embedded, paired: mean [95% CI]")
    for path, values in table.items():
        answered = values[~np.isnan(values)]
        row = {"answered": int(len(answered)), "of": int(len(values)),
               "mean_s": round(float(np.mean(answered)), 3) if len(answered) else None,
               "p50_s": round(float(np.percentile(answered, 50)), 3) if len(answered) else None,
               "p90_s": round(float(np.percentile(answered, 90)), 3) if len(answered) else None}
        paired = ""
        if path in ("endpoint", "realtime") and "embedded" in table:
            mean, low, high = mean_interval(values - table["embedded"])
            row["added_vs_embedded_s"] = [round(mean, 3), round(low, 3), round(high, 3)]
            paired = f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]"
        if path == "pipecat" and decisions:
            bot = np.array(decisions)
            mean, low, high = mean_interval(values - bot)
            row["bot_decision_mean_s"] = round(float(np.nanmean(bot)), 3)
            row["bridge_after_bot_decision_s"] = [round(mean, 3), round(low, 3), round(high, 3)]
            paired = (f"the bot's VAD stop {np.nanmean(bot):.3f} s after the speech (stop_secs 0.3 of it); "
                      f"its voice then {mean:.3f} [{low:.3f}, {high:.3f}] s later")
        summary[path] = row
        print(f"{path:<10} {row['answered']:>4}/{row['of']:<4} {row['mean_s'] or float('nan'):>8.3f} "
              f"{row['p50_s'] or float('nan'):>7.3f} {row['p90_s'] or float('nan'):>7.3f}   {paired}")
    if args.out:
        args.out.write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
