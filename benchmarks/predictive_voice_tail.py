"""Where the `predictive` system's slow answers come from, per cue and by voice: the cue values it
logged at each smooth turn-taking decision of an examiner run, and how long it would have waited
with each cue left out.

    PYTHONPATH=. .venv/bin/python benchmarks/predictive_voice_tail.py RUN [RUN ...] [--slow-s 0.45] [--json OUT]

RUN: folders of `python -m examiner run --system predictive --tasks smooth_turn_taking` (task sets
of `make-tasks --voices fitting|held-out|held-out-noisy`). For each answer: FDB's latency (first
output word start less the question's end), split into the VAD's lag (the question's end to the
system's first silent frame), the decision's silence and what follows it (opener or reply audio to
its first word); the cues' log-odds terms at the decision: the turn-end prior's base rate, its
last words and dialog-act question cue (`words`), the judge's P(T) at 0.12 s given them
(`judge`), the language model's sentence end (against a turn end
only) and question mark, Smart Turn's P(complete) at its weight; and the silence at which
P(turn end) would have reached the threshold without each term (the pause survival doing the
rest). The first word is often the acknowledgement ("okay."), said once P(turn end) with Smart
Turn at its own odds passes 0.5 within the pause's first 0.45 s: its silence and log odds are
listed too. An answer over `--slow-s` is slow.

Measured on the 2-core machine (28 Nov 2026), seed 0, twelve `unseen_questions.txt` questions per
voice group (`make-tasks SET --tasks smooth_turn_taking,pause_handling --per-task 12 --seed 0
--questions examiner/data/unseen_questions.txt --voices G`, then `python -m examiner run --system
predictive --tasks smooth_turn_taking,pause_handling --set SET --out RUN`):
- fitting: no slow answer; latency = VAD lag (median 0.03 s) + decision silence (0.30 s, the
  recogniser's words arriving 0.04-0.28 s into it) less the acknowledgement's lead; Smart Turn
  median 0.94, its term +0.38.
- held-out, clean: 2 of 12 slow (2.17 s, 4.10 s; two espeak-ng voices, en-gb-scotland+f1@140 and
  en-gb-x-gbcwmd+f3@200), both from the recogniser mishearing the voice ("What is the title for the
  small moment on?") and the language model then reading an unfinished sentence: the completion
  veto at -1.5 and -14.2 log odds held the floor until the pause's length (2.1 s) or
  `max_silence_ms` (4 s) took it; Smart Turn said 0.06 and 0.98, the judge 0.19 and 0.35. The fast
  ten: Smart Turn 0.92, no veto.
- held-out, noisy (reverb, noise 15 dB below): 3 of 12 over 0.45 s (0.50-0.60 s); the VAD calls the
  silence 0.28 s (median; 0.07 s clean; 0.32-0.36 s in the slow three) after the dry speech's end, the room's
  reverberation and the noise holding it; the cues themselves are as in the fast clean answers
  (Smart Turn 0.99, no veto in 2 of 3, each acknowledged at 0.2-0.26 s of silence).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from statistics import median

from judge.turn_end import JUDGE_AT_S, load_turn_end_model, logit, posterior, sigmoid
from studies.systems.lexical_completion import log_ratio_against_turn_end, question_log_ratio
from studies.systems.predictive import PredictiveSettings

TERMS = ("base", "words", "judge", "sentence_end", "question_mark", "smart_turn")


def events(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "call.jsonl").read_text().splitlines() if line.strip()]


def first_word_s(folder: Path) -> float | None:
    chunks = json.loads((folder / "output.json").read_text()).get("chunks") or []
    return min(c["timestamp"][0] for c in chunks) if chunks else None


def decision_silence(log_odds: float, model, settings: PredictiveSettings) -> float:
    """The first 20 ms step of silence (from min_gap on) where P(turn end) reaches the threshold."""
    step = 0.04
    silence = settings.min_gap_ms / 1000
    while silence < settings.max_silence_ms / 1000:
        if posterior(sigmoid(log_odds), model.pause_survival(silence)) >= settings.shift_threshold:
            return round(silence, 3)
        silence += step
    return settings.max_silence_ms / 1000


def acknowledgement_silence(log_odds: float, model, settings: PredictiveSettings, from_s: float) -> float | None:
    """The first 40 ms step of silence, from the judge's read and `from_s` (the words heard) to
    `acknowledge_within_ms`, where the acknowledgement's P(turn end) reaches `acknowledge_above`;
    None: no acknowledgement."""
    silence = max(JUDGE_AT_S, from_s)
    while silence <= settings.acknowledge_within_ms / 1000 + 1e-9:
        if posterior(sigmoid(log_odds), model.pause_survival(silence)) >= settings.acknowledge_above:
            return round(silence, 3)
        silence += 0.04
    return None


def answer_row(folder: Path, model, settings: PredictiveSettings) -> dict | None:
    facts = json.loads((folder / "example.json").read_text())
    log = events(folder)
    decided = [e for e in log
               if e["event"] == "turn_end" and "p_turn_end" in e and e["mic_s"] > facts["turn_end"]]
    first = first_word_s(folder)
    if not decided or first is None:
        return None
    decision = decided[0]
    heard = [e for e in log if e["event"] == "transcript" and e["mic_s"] <= decision["mic_s"]]
    silent_from = decision["mic_s"] - decision["silence_s"]
    text = heard[-1]["text"] if heard else None
    words = tuple(decision["words"].split()) or None
    base = logit(model.base_rate)
    with_words = logit(model.prior_shift(words, None, utterance=text))
    terms = {"base": base, "words": with_words - base,
             "judge": logit(model.prior_shift(words, decision["judge_p_t"], utterance=text)) - with_words}
    if decision["p_sentence_end"] is not None:
        terms["sentence_end"] = log_ratio_against_turn_end(decision["p_sentence_end"])
        terms["question_mark"] = question_log_ratio(decision["p_question"])
    if decision["smart_turn"] is not None:
        terms["smart_turn"] = settings.smart_turn_weight * logit(decision["smart_turn"])
    total = sum(terms.values())
    acknowledged = [e for e in log if e["event"] == "backchannel" and e.get("acknowledgement")
                    and facts["turn_end"] < e["mic_s"] <= decision["mic_s"]]
    # the acknowledgement's P(turn end) reads Smart Turn at its own odds (the more confident of two reads)
    reads = [r for r in (decision["smart_turn"], acknowledged[0].get("smart_turn_again") if acknowledged else None)
             if r is not None]
    words_only = total - terms.get("smart_turn", 0.0)
    ack_odds = words_only + (settings.acknowledge_smart_turn_weight * logit(max(reads)) if reads else 0.0)
    # what-ifs: Smart Turn left out of the acknowledgement, or counted only for a turn end
    words_at = heard[-1]["mic_s"] - silent_from if heard else 0.0
    ack_if = {"no_smart_turn": acknowledgement_silence(words_only, model, settings, words_at),
              "smart_turn_for_only": acknowledgement_silence(
                  words_only + (max(logit(max(reads)), 0.0) if reads else 0.0), model, settings, words_at)}
    return {"voice": facts["voice"], "text": facts["text"], "heard": text,
            "latency_s": round(max(first - facts["turn_end"], 0.0), 3),
            "vad_lag_s": round(silent_from - facts["turn_end"], 3), "decision_silence_s": decision["silence_s"],
            "transcript_at_silence_s": round(heard[-1]["mic_s"] - silent_from, 3) if heard else None,
            "after_decision_s": round(first - decision["mic_s"], 3), "acknowledged": bool(acknowledged),
            "acknowledged_at_silence_s": acknowledged[0]["silence_s"] if acknowledged else None,
            "acknowledge_log_odds": round(ack_odds, 3), "acknowledged_if": ack_if,
            "smart_turn": decision["smart_turn"], "judge_p_t": decision["judge_p_t"],
            "p_sentence_end": decision["p_sentence_end"], "p_question": decision["p_question"],
            "words": decision["words"], "terms": {k: round(v, 3) for k, v in terms.items()},
            "log_odds": round(total, 3), "rule_silence_s": decision_silence(total, model, settings),
            "without": {k: decision_silence(total - v, model, settings) for k, v in terms.items() if k != "base"}}


def summary(rows: list[dict], slow_s: float) -> str:
    lines = []
    for name, group in (("slow", [r for r in rows if r["latency_s"] > slow_s]),
                        ("fast", [r for r in rows if r["latency_s"] <= slow_s])):
        if not group:
            lines.append(f"  {name}: none")
            continue
        cues = ", ".join(f"{k} {median(r[k] for r in group if r[k] is not None):.3f}"
                         for k in ("smart_turn", "judge_p_t", "p_sentence_end", "p_question")
                         if any(r[k] is not None for r in group))
        terms = ", ".join(f"{t} {median(r['terms'].get(t, 0.0) for r in group):+.2f}" for t in TERMS)
        parts = ", ".join(f"{k} {median(r[k] for r in group):.3f}"
                          for k in ("latency_s", "vad_lag_s", "decision_silence_s", "after_decision_s"))
        parts += f", acknowledged {sum(r['acknowledged'] for r in group)} of {len(group)}"
        lines.append(f"  {name} ({len(group)}): {parts}\n    cue medians: {cues}\n    log-odds terms: {terms}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="examiner run folders of the predictive system")
    parser.add_argument("--slow-s", type=float, default=0.45, help="an answer later than this is slow")
    parser.add_argument("--json", help="write every answer's row here")
    args = parser.parse_args(argv)
    model, settings = load_turn_end_model(None), PredictiveSettings()
    out = {}
    for run in args.runs:
        folders = sorted((Path(run) / "smooth_turn_taking").glob("*/"), key=lambda p: int(p.name))
        rows = [r for r in (answer_row(f, model, settings) for f in folders) if r is not None]
        out[run] = rows
        print(f"{run}: {len(rows)} answers")
        for r in sorted(rows, key=lambda r: -r["latency_s"]):
            without = " ".join(f"{k}:{v:.2f}" for k, v in r["without"].items())
            print(f"  {r['latency_s']:.3f} s = vad {r['vad_lag_s']:.3f} + silence {r['decision_silence_s']:.3f} "
                  f"+ out {r['after_decision_s']:.3f}  {r['voice']:<36} words at {r['transcript_at_silence_s']} "
                  f"ack {r['acknowledged_at_silence_s']} "
                  f"(log-odds {r['acknowledge_log_odds']:+.2f}; if {r['acknowledged_if']}) st {r['smart_turn']} "
                  f"pT {r['judge_p_t']} pEnd {r['p_sentence_end']} p? {r['p_question']} "
                  f"terms {r['terms']} -> {r['rule_silence_s']:.2f} s; without {without}  heard {r['heard']!r}")
        print(summary(rows, args.slow_s))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
