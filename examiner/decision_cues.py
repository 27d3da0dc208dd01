"""Where the `predictive` system's answer latency comes from, cue by cue, in examiner runs.

For each smooth turn-taking answer of a run folder (`python -m examiner run --system predictive`):
FDB's latency (first output word start less the question's end), split into the VAD's lag (the
question's end to the system's first silent frame), the decision's silence and what follows it
(opener or reply audio to its first word); the cues' log-odds terms at the decision, read from
the system's `turn_end` event in `call.jsonl`: the turn-end prior's base rate, its last words and
dialog-act question cue (`words`), the judge's P(T) at 0.12 s given them (`judge`), the language
model's sentence end (against a turn end only) and question mark, Smart Turn's P(complete) at
its weight; and the silence at which P(turn end) would have reached the threshold without each
term (the pause survival doing the rest). The first word is often the acknowledgement ("okay."),
said once P(turn end) with Smart Turn at its own odds passes `acknowledge_above` within the
pause's first `acknowledge_within_ms`: its silence and log odds are listed too.
"""

from __future__ import annotations

import json
from pathlib import Path
from statistics import median

from judge.turn_end import JUDGE_AT_S, TurnEndModel, load_turn_end_model, logit, posterior, sigmoid
from systems.base import BLOCK, SAMPLE_RATE
from systems.events import EventKind
from systems.lexical_completion import question_log_ratio
from systems.predictive import PredictiveSettings
from systems.turn_end_cues import completion_veto, smart_turn_term

TERMS = ("base", "words", "judge", "sentence_end", "question_mark", "smart_turn")
# What an answer waited for: the transcript's arrival in the pause, its recognition, Smart Turn's read.
WAITS = ("transcript_at_silence_s", "recognition_s", "smart_turn_at_silence_s")
BLOCK_S = BLOCK / SAMPLE_RATE  # the call's audio block: events of one block share its time
TASK = "smooth_turn_taking"
STEP_S = 0.04  # the system decides every 40 ms


def decision_silence(log_odds: float, model: TurnEndModel, settings: PredictiveSettings) -> float:
    """The first 40 ms step of silence, from `min_gap_ms`, at which the turn is taken with these
    log odds (the pause survival doing the rest); `max_silence_ms` when none is.

    >>> model, settings = load_turn_end_model(None), PredictiveSettings()
    >>> decision_silence(5.0, model, settings)    # sure at once: the earliest gap
    0.06
    >>> decision_silence(-30.0, model, settings)  # never sure: the longest silence
    4.0
    """
    silence = settings.min_gap_ms / 1000
    while silence < settings.max_silence_ms / 1000:
        if posterior(sigmoid(log_odds), model.pause_survival(silence)) >= settings.shift_threshold:
            return round(silence, 3)
        silence += STEP_S
    return settings.max_silence_ms / 1000


def acknowledgement_silence(log_odds: float, model: TurnEndModel, settings: PredictiveSettings,
                            from_s: float) -> float | None:
    """The first 40 ms step of silence, from the judge's read and `from_s` (the words heard) to
    `acknowledge_within_ms`, where the acknowledgement's P(turn end) reaches `acknowledge_above`;
    None: no acknowledgement.

    >>> model, settings = load_turn_end_model(None), PredictiveSettings()
    >>> acknowledgement_silence(5.0, model, settings, from_s=0.2)
    0.2
    >>> acknowledgement_silence(-30.0, model, settings, from_s=0.0) is None
    True
    """
    silence = max(JUDGE_AT_S, from_s)
    while silence <= settings.acknowledge_within_ms / 1000 + 1e-9:
        if posterior(sigmoid(log_odds), model.pause_survival(silence)) >= settings.acknowledge_above:
            return round(silence, 3)
        silence += STEP_S
    return None


def cue_terms(decision: dict, heard: str | None, model: TurnEndModel, settings: PredictiveSettings) -> dict:
    """Each cue's log-odds term at a logged `turn_end` decision; their sum is the decision's log odds."""
    words = tuple(decision["words"].split()) or None
    base = logit(model.base_rate)
    with_words = logit(model.prior_shift(words, None, utterance=heard))
    terms = {"base": base, "words": with_words - base,
             "judge": logit(model.prior_shift(words, decision["judge_p_t"], utterance=heard)) - with_words}
    if decision["p_sentence_end"] is not None:
        terms["sentence_end"] = completion_veto(decision["p_sentence_end"], settings.completion_veto_floor)
        terms["question_mark"] = question_log_ratio(decision["p_question"])
    if decision["smart_turn"] is not None:
        terms["smart_turn"] = settings.smart_turn_weight * logit(decision["smart_turn"])
    return terms


def _acknowledgement(log: list[dict], decision: dict, terms: dict, silent_from: float, heard_at: float | None,
                     turn_end: float, model: TurnEndModel, settings: PredictiveSettings) -> dict:
    """The acknowledgement before the decision, its log odds (Smart Turn at its own odds, the more
    confident of two reads), and its silence with Smart Turn left out or counted only for a turn end."""
    acknowledged = [e for e in log if e["event"] == EventKind.BACKCHANNEL and e.get("acknowledgement")
                    and turn_end < e["mic_s"] <= decision["mic_s"]]
    reads = [r for r in (decision["smart_turn"], acknowledged[0].get("smart_turn_again") if acknowledged else None)
             if r is not None]
    words_only = sum(terms.values()) - terms.get("smart_turn", 0.0)
    odds = words_only + (smart_turn_term(max(reads), settings.acknowledge_smart_turn_weight,
                                         settings.acknowledge_smart_turn_lowers) if reads else 0.0)
    words_at = heard_at - silent_from if heard_at is not None else 0.0
    return {"acknowledged": bool(acknowledged),
            "acknowledged_at_silence_s": acknowledged[0]["silence_s"] if acknowledged else None,
            "acknowledge_log_odds": round(odds, 3),
            "acknowledged_if": {
                "no_smart_turn": acknowledgement_silence(words_only, model, settings, words_at),
                "smart_turn_for_only": acknowledgement_silence(
                    words_only + (max(logit(max(reads)), 0.0) if reads else 0.0), model, settings, words_at)}}


def answer_row(folder: Path, model: TurnEndModel, settings: PredictiveSettings) -> dict | None:
    """One answer's latency parts and cues; None where the system logged no decision after the
    question's end or said no word."""
    facts = json.loads((folder / "example.json").read_text())
    log = [json.loads(line) for line in (folder / "call.jsonl").read_text().splitlines() if line.strip()]
    chunks = json.loads((folder / "output.json").read_text()).get("chunks") or []
    decided = [e for e in log if e["event"] == EventKind.TURN_END and "p_turn_end" in e and e["mic_s"] > facts["turn_end"]]
    if not decided or not chunks:
        return None
    first = min(c["timestamp"][0] for c in chunks)
    decision = decided[0]
    heard = [e for e in log if e["event"] == EventKind.TRANSCRIPT and e["mic_s"] <= decision["mic_s"]]
    silent_from = decision["mic_s"] - decision["silence_s"]
    text = heard[-1]["text"] if heard else None
    # Smart Turn's read for the decision (logged when it came: the decision waits for it too), the
    # last of the pause's first reads; one logged in the decision's own 20 ms block counts
    reads = [e for e in log if e["event"] == EventKind.SMART_TURN and not e.get("again")
             and silent_from <= e["mic_s"] <= decision["mic_s"] + BLOCK_S]
    terms = cue_terms(decision, text, model, settings)
    total = sum(terms.values())
    return {"example": folder.name, "voice": facts["voice"], "text": facts["text"], "heard": text,
            "latency_s": round(max(first - facts["turn_end"], 0.0), 3),
            "vad_lag_s": round(silent_from - facts["turn_end"], 3), "decision_silence_s": decision["silence_s"],
            "transcript_at_silence_s": round(heard[-1]["mic_s"] - silent_from, 3) if heard else None,
            "recognition_s": heard[-1].get("asr_s") if heard else None,
            "smart_turn_at_silence_s": round(reads[-1]["mic_s"] - silent_from, 3) if reads else None,
            "after_decision_s": round(first - decision["mic_s"], 3),
            **_acknowledgement(log, decision, terms, silent_from, heard[-1]["mic_s"] if heard else None,
                               facts["turn_end"], model, settings),
            "smart_turn": decision["smart_turn"], "judge_p_t": decision["judge_p_t"],
            "p_sentence_end": decision["p_sentence_end"], "p_question": decision["p_question"],
            "words": decision["words"], "terms": {k: round(v, 3) for k, v in terms.items()},
            "log_odds": round(total, 3), "rule_silence_s": decision_silence(total, model, settings),
            "without": {k: decision_silence(total - v, model, settings) for k, v in terms.items() if k != "base"}}


def run_rows(run: Path, model: TurnEndModel, settings: PredictiveSettings) -> list[dict]:
    """Every answer of a run folder; ValueError (one line) for a folder that holds none."""
    if not run.is_dir():
        raise ValueError(f"{run} is not a folder")
    folders = sorted((p for p in (run / TASK).glob("*/") if p.name.isdigit()), key=lambda p: int(p.name))
    if not folders:
        raise ValueError(f"{run} holds no {TASK} examples (a run folder of `python -m examiner run --system predictive`)")
    try:
        rows = [r for r in (answer_row(f, model, settings) for f in folders) if r is not None]
    except (KeyError, TypeError) as e:
        raise ValueError(f"{run}: an example lacks {e} (not a run of the predictive system?)") from None
    if not rows:
        raise ValueError(f"{run}: no turn-taking decision of the predictive system was logged")
    return rows


def decision_cues(runs: list[str], slow_s: float = 0.45, json_out: str | None = None) -> dict:
    """Every run's answers (written to `json_out` too, as {run: rows}) and `slow_s`."""
    if slow_s <= 0:
        raise ValueError(f"--slow-s must be positive, got {slow_s}")
    model, settings = load_turn_end_model(None), PredictiveSettings()
    rows = {run: run_rows(Path(run), model, settings) for run in runs}
    if json_out:
        Path(json_out).write_text(json.dumps(rows, indent=1))
    return {"runs": rows, "slow_s": slow_s}


def group_summary(rows: list[dict]) -> dict:
    """Medians of a group of answers' latency parts, cues and log-odds terms.

    >>> row = {"latency_s": 0.3, "vad_lag_s": 0.03, "decision_silence_s": 0.3, "after_decision_s": -0.03,
    ...        "acknowledged": True, "smart_turn": 0.9, "judge_p_t": None, "p_sentence_end": 0.5,
    ...        "p_question": 0.4, "terms": {"base": -1.1, "words": 1.3}}
    >>> summary = group_summary([row, dict(row, latency_s=0.5, acknowledged=False)])
    >>> summary["latency_s"], summary["acknowledged"], summary["cues"]["judge_p_t"], summary["terms"]["smart_turn"]
    (0.4, 1, None, 0.0)
    """
    def middle(values):
        values = [v for v in values if v is not None]
        return round(median(values), 3) if values else None

    return {"answers": len(rows),
            **{k: middle(r[k] for r in rows) for k in ("latency_s", "vad_lag_s", "decision_silence_s", "after_decision_s")},
            **{k: middle(r.get(k) for r in rows) for k in WAITS},
            "acknowledged": sum(r["acknowledged"] for r in rows),
            "cues": {k: middle(r[k] for r in rows) for k in ("smart_turn", "judge_p_t", "p_sentence_end", "p_question")},
            "terms": {t: middle(r["terms"].get(t, 0.0) for r in rows) for t in TERMS}}


def _row_line(r: dict) -> str:
    without = " ".join(f"{k}:{v:.2f}" for k, v in r["without"].items())
    return (f"  {r['latency_s']:.3f} s = vad {r['vad_lag_s']:.3f} + silence {r['decision_silence_s']:.3f} "
            f"+ out {r['after_decision_s']:.3f}  {r['voice']:<36} words at {r['transcript_at_silence_s']} "
            f"(recognised in {r.get('recognition_s')}) smart turn at {r.get('smart_turn_at_silence_s')} "
            f"ack {r['acknowledged_at_silence_s']} (log-odds {r['acknowledge_log_odds']:+.2f}; "
            f"if {r['acknowledged_if']}) st {r['smart_turn']} pT {r['judge_p_t']} pEnd {r['p_sentence_end']} "
            f"p? {r['p_question']} terms {r['terms']} -> {r['rule_silence_s']:.2f} s; without {without}  "
            f"heard {r['heard']!r}")


def format_decision_cues(report: dict) -> str:
    """Each run's answers, slowest first, then the medians of its slow and fast ones."""
    lines = []
    for run, rows in report["runs"].items():
        lines.append(f"{run}: {len(rows)} answers")
        lines += [_row_line(r) for r in sorted(rows, key=lambda r: -r["latency_s"])]
        for name, group in (("slow", [r for r in rows if r["latency_s"] > report["slow_s"]]),
                            ("fast", [r for r in rows if r["latency_s"] <= report["slow_s"]])):
            if not group:
                lines.append(f"  {name}: none")
                continue
            s = group_summary(group)
            parts = ", ".join(f"{k} {s[k]:.3f}" for k in ("latency_s", "vad_lag_s", "decision_silence_s", "after_decision_s"))
            cues = ", ".join(f"{k} {v:.3f}" for k, v in s["cues"].items() if v is not None)
            terms = ", ".join(f"{t} {v:+.2f}" for t, v in s["terms"].items())
            waits = ", ".join(f"{k} {s[k]:.3f}" for k in WAITS if s[k] is not None)
            lines.append(f"  {name} ({len(group)}): {parts}, acknowledged {s['acknowledged']} of {len(group)}\n"
                         f"    waits: {waits or 'not logged'}\n"
                         f"    cue medians: {cues}\n    log-odds terms: {terms}")
    return "\n".join(lines)
