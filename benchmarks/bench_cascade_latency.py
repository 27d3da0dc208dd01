"""Response latency of the cascaded system (or another embedded kind): end of the participant's
speech -> first system audio.

    .venv/bin/python benchmarks/bench_cascade_latency.py                 # 2 scripted calls, ~2 minutes
    .venv/bin/python benchmarks/bench_cascade_latency.py --calls 4 --config '{"min_silence_ms": 200}'
    .venv/bin/python benchmarks/bench_cascade_latency.py --calls 4 --system predictive
    .venv/bin/python benchmarks/bench_cascade_latency.py --calls 4 --system predictive --voice piper:en_US-joe-medium@1
    .venv/bin/python benchmarks/bench_cascade_latency.py --questions benchmarks/data/reply_questions_new_york.txt

`--questions FILE` plays one call of the file's lines (one question a line) and reports, besides
the latency, whether the replies followed the conversation: distinct replies and replies that
repeat the one before (studies.reply_variety).

For `predictive`, whose reply may open with a short opener ("well,") while the reply is made,
the latency to the reply's own first audio is reported too (`content_latency_*`: the first
audio's latency plus the opener's lead, from the timing log's `audio_start` and
`reply_audio_start`).

Scripted calls: espeak-ng utterances with long pauses (so every turn can be answered) are played
to the cascaded system with the packaged models (Silero, Whisper tiny.en, SmolLM2-135M, Piper)
on the real-time clock of `python -m studies call`; the two-channel recordings are measured
(energy onsets of the clean channels, `studies.offline_call.reply_latencies`). Prints p50/p90
(target p50 <= 700 ms, p90 <= 1000 ms on the 2-core machine), the component times from the
timing logs, and the machine's load average (other work on the 2 cores slows every model).

Measured on the 2-core machine (22 Nov 2026), other jobs paused:
    runtime                   calls/replies  p50     p90     ASR p50  ASR start -> first chunk decided
    transformers (before)     2 / 8          1.32 s  1.50 s  0.16 s   0.94 s
    ctranslate2 (default)     4 / 19         0.605 s 0.793 s 0.12 s   0.44 s   (1 of 20 turns unanswered:
                                                                                ended at a comma pause)
    ctranslate2, threads      4 / -          0.698 s 0.852 s 0.10 s   0.52 s   (24 Nov 2026, idle machine:
      sleeping when idle                                                          OMP_WAIT_POLICY=PASSIVE, the
                                                                                default since; see below)

`.venv/bin/python benchmarks/bench_cascade_latency.py --calls 4`. What made the difference: the
LLM on CTranslate2 (~24 ms a token instead of ~65, same tokens), decoding only the tokens asked
for (Piper synthesizes the first chunk at full speed), speculation from the first non-speech VAD
frame, a short first phrase (cascaded.breaks_before), the voice's leading silence trimmed, and one
remembered exchange (each costs ~0.13 s of prefill).
`speech` makes CTranslate2's OpenMP threads sleep when idle: on an idle machine
that costs ~90 ms of p50 (the LLM's ~17 ms more a token, benchmarks/bench_llm_under_load.py); with
anything else running, spinning threads made the first reply seconds late (8.7 s in a scripted
call at load ~2), so the default is the one that holds under load.
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

from examiner.task_sets import Timeline
from examiner.voices import VOICES, speak
from studies.offline_call import run_offline_call
from studies.reply_variety import reply_variety
from systems.cascaded import CascadedSettings
from systems.stages import load_stages
from systems.kinds import system_kind

os.environ.setdefault("HF_HUB_OFFLINE", "1")
RATE = 16000

SCRIPTS = [
    [
        "Hi, I am planning a hike this weekend.",
        "What should I bring with me?",
        "How much water do I need for a day hike?",
        "Is it better to go early in the morning?",
        "Thanks, that is really helpful.",
    ],
    [
        "I am visiting New York next month.",
        "Where can I find good pizza in Manhattan?",
        "Is Central Park worth a visit?",
        "What about museums?",
        "Great, thank you so much.",
    ],
]


def piper_or_espeak_caller(work: Path, lines: list[str], gap_s: float, voice: str | None) -> tuple[Path, list]:
    """The scripted caller's WAV: espeak-ng's default voice (None, as the tests' `scripted_user`),
    or one of the examiner's voices by its label (examiner.voices.VOICES)."""
    from tests.studies.conftest import scripted_user

    if voice is None:
        return scripted_user(work, lines, gap_s=gap_s)
    chosen = {v.label: v for v in VOICES}.get(voice)
    if chosen is None:
        raise SystemExit(f"--voice: unknown voice {voice!r}; one of {', '.join(v.label for v in VOICES)}")
    timeline = Timeline()
    timeline.pause(1.0)
    times = []
    for line in lines:
        times.append(timeline.add(speak(line, chosen)))  # trimmed to its audible samples
        timeline.pause(gap_s)
    path = work / "user.wav"
    soundfile.write(str(path), timeline.audio(), RATE)
    return path, times


def opener_leads(log_path: Path, replies: int) -> list[float]:
    """Per reply of a call: how long its opener, or the acknowledgement said before the turn was
    taken, played before the reply's own audio (0 without one), in the order of the timing log's
    turn ends that started audio; [] when they do not pair up."""
    leads, start, opener, acknowledgement, acknowledged_at = [], None, False, None, None
    for line in log_path.read_text().splitlines():
        event = json.loads(line)
        if event["event"] == "backchannel" and event.get("acknowledgement"):
            acknowledgement = event["mic_s"]
        elif event["event"] == "turn_end":
            opener, start = bool(event.get("opener")), None
            acknowledged_at = acknowledgement if event.get("acknowledged") else None
        elif event["event"] == "audio_start":
            start = event["mic_s"]
            if acknowledged_at is not None:  # the acknowledgement's audio is the reply's first
                leads.append(round(start - acknowledged_at, 3))
                acknowledged_at = None
            elif not opener:
                leads.append(0.0)
        elif event["event"] == "reply_audio_start" and opener and start is not None:
            leads.append(round(event["mic_s"] - start, 3))
            opener = False
    return leads if len(leads) == replies else []


class Measures:
    """What the calls played to one setting measured."""

    def __init__(self):
        self.latencies, self.unanswered, self.asr, self.decided, self.late, self.leads = [], 0, [], [], 0, []
        self.decisions, self.replies, self.heard = [], [], []

    def add(self, result) -> None:
        self.latencies += result.latencies_s
        self.leads += opener_leads(result.log_path, len(result.latencies_s))
        self.unanswered += result.unanswered
        self.late += result.late_blocks
        for line in result.log_path.read_text().splitlines():
            event = json.loads(line)
            if event["event"] == "transcript":
                self.asr.append(event["asr_s"])
                self.heard.append(event.get("text", ""))
            if event["event"] == "reply" and event.get("text"):
                self.replies.append(event["text"])
            if event["event"] == "decided":
                self.decided.append(event["after_s"])
            if event["event"] == "turn_end" and "p_turn_end" in event:  # what a predictive decision rested on
                self.decisions.append({k: event.get(k) for k in ("words", "p_sentence_end", "smart_turn", "judge_p_t",
                                                                  "silence_s", "p_turn_end")})

    def results(self, system: str, voice: str | None, config: dict) -> dict:
        lat = np.array(self.latencies)
        content = lat + np.array(self.leads) if len(self.leads) == len(lat) else np.array([])
        return {
            "system": system,
            "voice": voice or "espeak-ng (default voice)",
            "replies": len(self.latencies),
            "unanswered": self.unanswered,
            "latency_p50_s": round(float(np.percentile(lat, 50)), 3) if len(lat) else None,
            "latency_p90_s": round(float(np.percentile(lat, 90)), 3) if len(lat) else None,
            "latency_mean_s": round(float(lat.mean()), 3) if len(lat) else None,
            "content_latency_p50_s": round(float(np.percentile(content, 50)), 3) if len(content) else None,
            "content_latency_p90_s": round(float(np.percentile(content, 90)), 3) if len(content) else None,
            "openers": int(sum(lead > 0 for lead in self.leads)),
            "asr_p50_s": round(float(np.median(self.asr)), 3) if self.asr else None,
            "asr_to_first_clause_p50_s": round(float(np.median(self.decided)), 3) if self.decided else None,
            "late_blocks": self.late,
            "replies_distinct": reply_variety(self.replies).distinct,
            "replies_back_to_back": reply_variety(self.replies).back_to_back,
            "reply_texts": self.replies,
            "transcripts": self.heard,  # what the system recognised of each turn (speculative ones included)
            "turn_end_decisions": self.decisions,
            "load_average": os.getloadavg(),
            "config": config,
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2)
    parser.add_argument("--gap", type=float, default=14.0, help="silence after each utterance (s)")
    parser.add_argument("--system", default="cascaded", help="an embedded system kind (default: cascaded)")
    parser.add_argument("--config", default="{}", help="the system's config as JSON")
    parser.add_argument("--voice", help="the caller's voice: an examiner voice label (examiner.voices), "
                                        "e.g. piper:en_US-joe-medium@1 (default: espeak-ng's default voice)")
    parser.add_argument("--out", help="write the results as JSON here")
    parser.add_argument("--questions", type=Path, help="one call of this file's lines (one question a line)")
    parser.add_argument("--topic", default="preparing for a hike", help="the call's topic (with --questions)")
    parser.add_argument("--baseline", help="another config (JSON) each call is also played to, just before: "
                                           "the two side by side in one run")
    args = parser.parse_args()
    scripts = SCRIPTS
    if args.questions:
        try:
            scripts = [[line.strip() for line in args.questions.read_text().splitlines() if line.strip()]]
        except OSError as exc:
            raise SystemExit(f"error: --questions: cannot read {args.questions}: {exc.strerror}")
        args.calls = 1

    try:
        config = json.loads(args.config)
        baseline = json.loads(args.baseline) if args.baseline is not None else None
    except ValueError as exc:
        raise SystemExit(f"error: --config/--baseline: not JSON: {exc}")
    components = load_stages(CascadedSettings.from_config(config))
    kind = system_kind(args.system)
    settings = [("baseline", baseline), ("config", config)] if baseline is not None else [("config", config)]
    measured = {name: Measures() for name, _ in settings}
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.calls):
            work = Path(tmp) / f"call{k}"
            work.mkdir()
            user_wav, _ = piper_or_espeak_caller(work, scripts[k % len(scripts)], args.gap, args.voice)
            for name, chosen in settings:  # the same call to each, one after the other
                system = kind.build(dict(chosen), components=components)
                topic = args.topic if args.questions else ""
                result = run_offline_call(user_wav, work / f"{name}.wav", system=system, tail_s=0.0, topic=topic)
                measured[name].add(result)
                print(f"call {k} ({name}): latencies {result.latencies_s} unanswered {result.unanswered}", flush=True)
    results = measured["config"].results(kind.name, args.voice, config)
    if baseline is not None:
        results["baseline"] = measured["baseline"].results(kind.name, args.voice, baseline)
        results["paired_p50_difference_s"] = round(results["latency_p50_s"] - results["baseline"]["latency_p50_s"], 3)
    print(json.dumps(results, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
