"""Probe: how low should the completion veto's floor go, replayed on examiner runs of the predictive
system (`python -m examiner run --system predictive --tasks smooth_turn_taking,pause_handling`)?

Each logged decision's cues are read back (`examiner.decision_cues.cue_terms`) and its log odds
recomputed at each floor; the pause survival then gives the silence at which the turn would be
taken and the acknowledgement said (`decision_silence`, `acknowledgement_silence`). A lower floor
only delays: a pause the system held stays held.
- pause handling: a decision inside the pause that the new floor puts after the caller resumes is
  no take-over; its reply's words (from the decision to 1 s after the caller's resumption) and, where
  the acknowledgement no longer comes, the acknowledgement's word leave the output, and FDB's
  take-over rule is applied to what is left;
- smooth turn-taking: the first word moves by the change in the silence of the first of the
  acknowledgement and the decision (a decision that waited for its transcript or Smart Turn's read
  waits at least as long).

    python benchmarks/completion_floor_probe.py RUN [RUN ...] [--floors -3 -3.5 -4 -4.5 -5]
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

import numpy as np

from examiner.decision_cues import acknowledgement_silence, answer_row, cue_terms, decision_silence
from examiner.fdb_rules import TimedWord, takeover, words_of_output_json
from judge.turn_end import load_turn_end_model, logit
from studies.systems.predictive import PredictiveSettings


def _log(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "call.jsonl").read_text().splitlines() if line.strip()]


def _first_at(ack: float | None, decision: float) -> float:
    return decision if ack is None else min(ack, decision)


def pause_tor(folder: Path, model, settings: PredictiveSettings) -> int:
    """The example's FDB take-over with `settings`' floor (see the module docstring)."""
    facts = json.loads((folder / "example.json").read_text())
    words = words_of_output_json(json.loads((folder / "output.json").read_text()))
    start, resume = facts["pause"]
    log = _log(folder)
    inside = [e for e in log if e["event"] == "turn_end" and "p_turn_end" in e and start < e["mic_s"] < resume]
    if not inside:
        return takeover(words).tor
    decision = inside[0]
    heard = [e["text"] for e in log if e["event"] == "transcript" and e["mic_s"] <= decision["mic_s"]]
    terms = cue_terms(decision, heard[-1] if heard else None, model, settings)
    silent_from = decision["mic_s"] - decision["silence_s"]
    if silent_from + max(decision["silence_s"], decision_silence(sum(terms.values()), model, settings)) < resume:
        return takeover(words).tor  # still taken in the pause
    kept = [w for w in words if not (decision["mic_s"] <= (w.start or 0.0) < resume + 1.0)]
    acks = [e for e in log if e["event"] == "backchannel" and e.get("acknowledgement") and start < e["mic_s"] < resume]
    if acks:
        odds = sum(terms.values()) - terms.get("smart_turn", 0.0)
        reads = [r for r in (decision["smart_turn"], acks[0].get("smart_turn_again")) if r is not None]
        odds += settings.acknowledge_smart_turn_weight * logit(max(reads)) if reads else 0.0
        if acknowledgement_silence(odds, model, settings, 0.0) is None:
            said = acks[0]["mic_s"]
            kept = [w for w in kept if not (said - 0.05 <= (w.start or 0.0) < said + 0.8)]
    return takeover([TimedWord(w.text, w.start, w.end) for w in kept]).tor


def smooth_latency(folder: Path, model, old: PredictiveSettings, new: PredictiveSettings) -> float | None:
    row_old, row_new = answer_row(folder, model, old), answer_row(folder, model, new)
    if row_old is None:
        return None
    logged = row_old["decision_silence_s"]
    first_old = _first_at(row_old["acknowledged_at_silence_s"], logged)
    words_at = row_old["transcript_at_silence_s"] or 0.0
    ack_odds = row_new["acknowledge_log_odds"]
    ack_new = acknowledgement_silence(ack_odds, model, new, words_at) if row_old["acknowledged"] else None
    decision_new = max(logged, row_new["rule_silence_s"])
    return round(row_old["latency_s"] + _first_at(ack_new, decision_new) - first_old, 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--floors", nargs="+", type=float, default=[-3.0, -3.5, -4.0, -4.5, -5.0])
    args = parser.parse_args()
    model, shipped = load_turn_end_model(None), PredictiveSettings()
    for run in args.runs:
        pauses = sorted((run / "pause_handling").glob("*/"), key=lambda p: int(p.name))
        smooth = sorted((run / "smooth_turn_taking").glob("*/"), key=lambda p: int(p.name))
        for floor in args.floors:
            settings = replace(shipped, completion_veto_floor=floor)
            line = f"{run.name} floor {floor:+.1f}:"
            if pauses:
                tor = [pause_tor(p, model, settings) for p in pauses]
                line += f" pause TOR {np.mean(tor):.3f} ({sum(tor)} of {len(tor)})"
            if smooth:
                lat = [v for v in (smooth_latency(p, model, shipped, settings) for p in smooth) if v is not None]
                line += (f"  smooth latency p50 {np.percentile(lat, 50):.3f} / p90 {np.percentile(lat, 90):.3f} s"
                         f" ({len(lat)} answers, {sum(v > 0.45 for v in lat)} over 0.45 s)")
            print(line, flush=True)


if __name__ == "__main__":
    main()
