"""How far the session pipeline alone moves each turn-taking statistic, and the settings that undo it.

Switchboard conversations rendered at their own timings (`analysis.switchboard_renderings`) are
measured three ways: from their word alignments (as the Switchboard reference is built), from
the audio with the true words placed on Silero's voice activity (`vad+words`), and through the
session pipeline (`vad+asr`: Silero, then Whisper's words). The bias of a source is the mean
over conversations of (source - words), with a 95 % t interval over conversations (the sampled
unit).

Two settings are chosen here (`--fit`), on training conversations only (`FITTING`: three voice
pairs, clean and with noise), and checked on validation conversations in other voices (`CHECKS`):
- `ListenerRule` (`turntaking.listener_backchannels`): how short a vocalization is, how long the
  speaker must keep the floor after it, how many ASR words it may carry;
- the voice activity's boundary lags by the channel's noise level (`speech.silero_lags`): how much
  earlier Silero starts and later it ends a stretch of speech than the alignment.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from analysis.switchboard_renderings import VOICE_PAIRS, measured_conversation
from speech.silero_lags import LAGS_BY_SNR
from turntaking.activity import Conversation, conversation_from_json
from turntaking.boundary_lags import BoundaryLags, corrected, lags_of
from turntaking.events import EventParams, inter_pausal_units
from turntaking.listener_backchannels import ListenerRule
from turntaking.stats import COUNT_EVENTS, DURATION_EVENTS, conversation_statistics
from turntaking.switchboard import conversation_ids

# scipy.stats is imported where it is used: it takes about half a second, which most commands never need.

SOURCES = ("words", "vad+words", "vad+asr")
# The statistics the session pipeline must bring within 20 % of the words' (and the FTO within 60 ms).
TARGET_STATISTICS = ("backchannel /min", "turn /min", "interruption /min", "floor_taking /min", "gap /min")


def measures(stats: dict) -> dict[str, float | None]:
    """Every statistic of one conversation, by a readable name."""
    out = {f"{e} /min": stats["per_minute"][e] for e in COUNT_EVENTS}
    out.update({f"{e} % of time": stats["percent"][e] for e in DURATION_EVENTS})
    out["words /min"] = stats["speaking_rate_wpm"]
    out["backchannel words /min"] = stats["backchannel_rate_wpm"]
    ftos = stats["floor_transfer_offsets_s"]
    for name, q in (("FTO p25 ms", 25), ("FTO median ms", 50), ("FTO p75 ms", 75)):
        out[name] = 1000 * float(np.percentile(ftos, q)) if ftos else None
    out["FTO in overlap %"] = 100 * float(np.mean(np.asarray(ftos) < 0)) if ftos else None
    return out


def row_conversations(row: dict) -> dict[str, Conversation]:
    """The three measurements of one rendered conversation (`measured_conversation`'s row)."""
    words = conversation_from_json(row["words"], source=row["conversation"])
    vad_words = conversation_from_json(row["vad+words"], source=row["conversation"])
    vad_asr = conversation_from_json(row["vad+asr"], source=row["conversation"])
    if "words_from" not in row["vad+asr"]:  # the session pipeline's words are Whisper's
        vad_asr.words_from = "asr"
    return {"words": words, "vad+words": vad_words, "vad+asr": vad_asr}


def row_measures(row: dict, rule: ListenerRule = ListenerRule(), lags: BoundaryLags | None = None,
                 params: EventParams = EventParams()) -> dict[str, dict]:
    """{source: measures} of one rendered conversation, the audio sources corrected by `lags`
    (None: by each channel's own, as a session's are)."""
    out = {}
    for source, conv in row_conversations(row).items():
        if source != "words":
            conv = corrected(conv, lags if lags is not None else lags_of(conv) or BoundaryLags())
        out[source] = measures(conversation_statistics(conv, params, include_events=False, rule=rule))
    return out


def bias_table(measured: list[dict[str, dict]]) -> list[dict]:
    """Per statistic: the words' mean, and per audio source the mean difference (source - words),
    its 95 % t interval over conversations and the difference relative to the words' mean."""
    from scipy import stats as scipy_stats
    table = []
    for name in measured[0]["words"]:
        base = [m["words"][name] for m in measured if m["words"][name] is not None]
        entry = {"statistic": name, "words mean": float(np.mean(base)) if base else None}
        for source in SOURCES[1:]:
            diffs = np.asarray([m[source][name] - m["words"][name] for m in measured
                                if m[source][name] is not None and m["words"][name] is not None], dtype=float)
            if len(diffs) < 2:
                entry[source] = None
                continue
            ci = scipy_stats.ttest_1samp(diffs, 0.0).confidence_interval(0.95)
            relative = float(diffs.mean() / entry["words mean"]) if entry["words mean"] else None
            entry[source] = {"mean_difference": float(diffs.mean()), "ci_95": [float(ci.low), float(ci.high)],
                             "relative": relative, "n": int(len(diffs))}
        table.append(entry)
    return table


def boundary_lags(rows: list[dict], params: EventParams = EventParams()) -> BoundaryLags:
    """Median (voice-activity onset - aligned onset) and (offset - aligned offset) over the IPU
    boundaries of `rows` that have a voice-activity boundary within 0.3 s."""
    onsets, offsets = [], []
    for row in rows:
        convs = row_conversations(row)
        for k in (0, 1):
            found = inter_pausal_units(convs["vad+words"].activity[k], params.ipu_silence_s)
            for s, e in inter_pausal_units(convs["words"].activity[k], params.ipu_silence_s):
                ds = min((vs - s for vs, _ in found), key=abs, default=None)
                de = min((ve - e for _, ve in found), key=abs, default=None)
                if ds is not None and abs(ds) < 0.3:
                    onsets.append(ds)
                if de is not None and abs(de) < 0.3:
                    offsets.append(de)
    return BoundaryLags(float(np.median(onsets)), float(np.median(offsets)))


RULE_GRID = {"max_s": (0.4, 0.5, 0.6, 0.7, 0.8, 1.0), "min_hold_s": (0.0, 0.3, 0.6, 1.0), "max_words": (2, 3),
             "max_content_words": (0, 1, 2)}


def rule_loss(table: list[dict]) -> float:
    """Sum of squared relative biases of the session pipeline on the target statistics."""
    by_name = {e["statistic"]: e for e in table}
    return float(sum((by_name[n]["vad+asr"]["relative"] or 0.0) ** 2 for n in TARGET_STATISTICS))


def fit_rule(rows: list[dict], lags: BoundaryLags | None = None, grid: dict = RULE_GRID,
             progress=None) -> tuple[ListenerRule, list[dict]]:
    """The `ListenerRule` of `grid` whose session-pipeline statistics on `rows` come nearest the
    words' (`rule_loss`), and every rule tried with its loss."""
    tried = []
    combos = list(itertools.product(*grid.values()))
    for values in (progress(combos) if progress else combos):
        rule = ListenerRule(**dict(zip(grid, values)))
        loss = rule_loss(bias_table([row_measures(r, rule, lags) for r in rows]))
        tried.append({**rule.as_dict(), "loss": loss})
    best = min(tried, key=lambda t: t["loss"])
    return ListenerRule(**{k: best[k] for k in grid}), tried


@dataclass(frozen=True)
class Condition:
    split: str
    first: int  # conversations [first, first + count) of the split's list
    count: int
    voices: str  # a name of analysis.switchboard_renderings.VOICE_PAIRS
    snr_db: float | None = None

    @property
    def name(self) -> str:
        noise = "" if self.snr_db is None else f", noise {self.snr_db:g} dB below"
        return f"{self.split} {self.first}-{self.first + self.count}, {self.voices}{noise}"


# Settings are chosen on training conversations in three voice pairs, checked on validation ones.
FITTING = (Condition("train", 0, 20, "demo"), Condition("train", 20, 20, "fitting-2"),
           Condition("train", 20, 20, "fitting-3"), Condition("train", 0, 20, "demo", 35.0),
           Condition("train", 0, 20, "demo", 25.0), Condition("train", 0, 20, "demo", 20.0),
           Condition("train", 20, 20, "fitting-3", 20.0), Condition("train", 0, 20, "demo", 15.0),
           Condition("train", 20, 20, "fitting-2", 15.0), Condition("train", 0, 20, "demo", 10.0))


def lags_by_noise(rows_by_condition: dict[Condition, list[dict]]) -> list[tuple[float, float, float]]:
    """(speech-to-noise ratio dB, onset lag s, offset lag s) per level of added noise (clean
    included): the median estimated ratio of its channels, and the median lags of its IPU
    boundaries; `speech.silero_lags.LAGS_BY_SNR`'s form."""
    levels: dict[float | None, list[dict]] = {}
    for condition, rows in rows_by_condition.items():
        levels.setdefault(condition.snr_db, []).extend(rows)
    table = []
    for rows in levels.values():
        lags = boundary_lags(rows)
        snr = float(np.median([v for r in rows for v in r["snr_db"]]))
        table.append((round(snr, 1), round(lags.onset_s, 4), round(lags.offset_s, 4)))
    return sorted(table)
CHECKS = (Condition("val", 0, 40, "demo"),
          Condition("val", 0, 40, "held-out-1"), Condition("val", 0, 40, "held-out-1", 15.0),
          Condition("val", 0, 40, "held-out-2"), Condition("val", 0, 40, "held-out-2", 15.0))


def condition_rows(root, work: Path, condition: Condition, seconds: float, limit: int | None = None,
                   progress=None) -> list[dict]:
    """The condition's rendered and measured conversations (rendered now where not in `work`)."""
    ids = conversation_ids(root, condition.split)[condition.first:condition.first + condition.count]
    ids = ids[:limit] if limit else ids
    pair = VOICE_PAIRS[condition.voices]
    return [measured_conversation(root, conv_id, seconds, pair, work, condition.snr_db)
            for conv_id in (progress(ids, condition.name) if progress else ids)]


def as_before(row: dict) -> dict:
    """The row measured as sessions were before: Whisper's words read as a transcript."""
    return {**row, "vad+asr": {**row["vad+asr"], "words_from": "transcript"}}


def bias_markdown(tables: dict[str, list[dict]], statistics=TARGET_STATISTICS + ("FTO median ms",)) -> str:
    """One row per statistic, one column per table (name: `bias_table` result): the session
    pipeline's bias, relative where the statistic is a rate, with its 95 % interval."""
    names = list(tables)
    lines = ["| statistic | from words | " + " | ".join(names) + " |", "|---" * (len(names) + 2) + "|"]
    for stat in statistics:
        cells = []
        for name in names:
            entry = next(e for e in tables[name] if e["statistic"] == stat)
            b = entry["vad+asr"]
            if b is None:
                cells.append("n/a")
            elif stat.endswith("ms") or "%" in stat or not entry["words mean"]:  # a time, or already a share: absolute
                unit = " ms" if stat.endswith("ms") else (" points" if "%" in stat else "")
                cells.append(f"{b['mean_difference']:+.1f}{unit} [{b['ci_95'][0]:+.1f}, {b['ci_95'][1]:+.1f}]")
            else:
                base = entry["words mean"]
                cells.append(f"{100 * b['relative']:+.0f} % [{100 * b['ci_95'][0] / base:+.0f}, "
                             f"{100 * b['ci_95'][1] / base:+.0f}]")
        base = next(e for e in next(iter(tables.values())) if e["statistic"] == stat)["words mean"]
        lines.append(f"| {stat} | {'n/a' if base is None else f'{base:.2f}'} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def pipeline_bias_report(root, work, seconds: float = 120.0, limit: int | None = None, fit: bool = False,
                         progress=None) -> dict:
    """Before and after the packaged settings, per checked condition; with `fit`, the settings the
    fitting conditions choose (to hold against the packaged ones)."""
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    report = {"seconds": seconds, "packaged": {"lags_by_snr": [list(level) for level in LAGS_BY_SNR],
                                               "listener_rule": ListenerRule().as_dict()}}
    if fit:
        rows = {c: condition_rows(root, work, c, seconds, limit, progress) for c in FITTING}
        rule, tried = fit_rule([r for c in FITTING for r in rows[c]])
        report["fitted"] = {"lags_by_snr": [list(level) for level in lags_by_noise(rows)],
                            "listener_rule": rule.as_dict(),
                            "conversations": sum(map(len, rows.values())), "rules_tried": len(tried)}
    report["conditions"] = {}
    for condition in CHECKS:
        rows = condition_rows(root, work, condition, seconds, limit, progress)
        before = bias_table([row_measures(as_before(r), lags=BoundaryLags()) for r in rows])
        after = bias_table([row_measures(r) for r in rows])
        report["conditions"][condition.name] = {"conversations": len(rows), "before": before, "after": after}
    return report


def report_markdown(report: dict) -> str:
    out = []
    if "fitted" in report:
        for key in ("listener_rule", "lags_by_snr"):
            same = "the packaged" if report["fitted"][key] == report["packaged"][key] else \
                f"packaged: {report['packaged'][key]}"
            out.append(f"- fitted {key}: {report['fitted'][key]} ({same})")
        out.append("")
    every = tuple(e["statistic"] for e in next(iter(report["conditions"].values()))["after"])
    for when in ("before", "after"):
        out.append(f"**{when}**\n")
        out.append(bias_markdown({name: c[when] for name, c in report["conditions"].items()}, every))
    return "\n".join(out)
