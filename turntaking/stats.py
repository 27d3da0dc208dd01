"""Corpus-level turn-taking statistics (Talking Turns section 3.2 and A.6).

Per conversation and per speaker: the number of IPU, pause, gap and overlap events per minute
and their cumulated duration as a percentage of the conversation; turns, backchannels and
interruptions per minute; and, when words exist, the speaking rate (words per minute) and the
backchannel rate (backchannel words per minute), both per minute of conversation.

Pauses and gaps leave out the silences next to a backchannel; "ipu_pause" and "ipu_gap" are Talking
Turns' own (3.1: between any two IPUs, backchannels included), kept for comparison with that paper.
Each conversation also lists its floor-transfer offsets (`turntaking.floor_transfer`), and a
corpus gives their pooled distribution (count, percentiles, mode, 50 ms histogram).

Over a corpus, `corpus_statistics` pools the events of every conversation (total events over
total minutes, which weights long conversations more) and also gives the mean and standard
deviation of the per-conversation values.
"""

from __future__ import annotations

import math

import numpy as np

from turntaking.activity import Conversation
from turntaking.boundary_lags import BoundaryLags, ChannelLags, corrected
from turntaking.events import Events, EventParams, detect_events
from turntaking.floor_transfer import offset_distribution
from turntaking.listener_backchannels import ListenerRule

#: Events that have a duration (reported as % of the conversation) and events that are counted.
DURATION_EVENTS = ("ipu", "pause", "gap", "overlap", "ipu_pause", "ipu_gap")
COUNT_EVENTS = ("ipu", "pause", "gap", "overlap", "ipu_pause", "ipu_gap", "turn", "backchannel", "interruption",
                "floor_taking", "butting_in")
#: Bumped when what a statistic means changes, so that cached per-session statistics are redone
#: (2: gaps and pauses away from backchannels, ipu_gap / ipu_pause, floor-transfer offsets).
STATISTICS_VERSION = 2


def event_table(events: Events) -> dict[str, list[tuple[int, float, float]]]:
    """Every event as (speaker, start, end), by event name.

    >>> table = event_table(detect_events(Conversation(60.0, ([(0, 10), (12, 20)], [(21, 30)]))))
    >>> table["pause"], table["gap"], table["turn"]
    ([(0, 10.0, 12.0)], [(1, 20.0, 21.0)], [(0, 0.0, 20.0), (1, 21.0, 30.0)])
    """
    per_speaker = lambda segs_by_speaker: sorted(  # noqa: E731
        (k, s, e) for k in (0, 1) for s, e in segs_by_speaker[k]
    )
    by_time = lambda evs: [(ev.speaker, ev.start, ev.end) for ev in evs]  # noqa: E731
    return {
        "ipu": per_speaker(events.ipus),
        "pause": by_time(events.pauses),
        "gap": by_time(events.gaps),
        "overlap": by_time(events.overlaps),
        "ipu_pause": by_time(events.ipu_pauses),
        "ipu_gap": by_time(events.ipu_gaps),
        "turn": per_speaker(events.turns),
        "backchannel": per_speaker(events.backchannels),
        "interruption": by_time(events.interruptions),
        "floor_taking": by_time(i for i in events.interruptions if i.floor_taking),
        "butting_in": by_time(i for i in events.interruptions if not i.floor_taking),
    }


def _summary(table, duration: float, n_words: int | None, n_bc_words: int | None) -> dict:
    minutes = duration / 60.0
    counts = {name: len(table[name]) for name in COUNT_EVENTS}
    durations = {name: sum(e - s for _, s, e in table[name]) for name in DURATION_EVENTS}
    return {
        "counts": counts,
        "durations_s": durations,
        "per_minute": {name: counts[name] / minutes for name in COUNT_EVENTS},
        "percent": {name: 100.0 * durations[name] / duration for name in DURATION_EVENTS},
        "words": n_words,
        "speaking_rate_wpm": None if n_words is None else n_words / minutes,
        "backchannel_words": n_bc_words,
        "backchannel_rate_wpm": None if n_bc_words is None else n_bc_words / minutes,
    }


def backchannel_evidence(conv: Conversation, rule: ListenerRule = ListenerRule()) -> str:
    """How the conversation's backchannels were told, in words (for exports and views)."""
    if conv.words is None:
        return "none found: no words"
    if conv.words_from == "asr":
        return (f"the listener's behaviour (at most {rule.max_s:g} s, the speaker holding the floor "
                f"{rule.min_hold_s:g} s after), ASR words only as a veto")
    return "listed phrases of the transcript's words"


def conversation_statistics(
    conv: Conversation, params: EventParams = EventParams(), include_events: bool = True,
    rule: ListenerRule = ListenerRule(), lags: BoundaryLags | ChannelLags | None = None,
) -> dict:
    """Statistics of one conversation as a JSON-ready dict.

    per_minute = count / (duration / 60); percent = 100 * summed event seconds / duration.
    A minute with 3 IPUs holding 27 s of speech, a 2 s pause of A and a 1 s gap before B:

    >>> stats = conversation_statistics(Conversation(60.0, ([(0, 10), (12, 20)], [(21, 30)])))
    >>> stats["per_minute"]["ipu"], stats["percent"]["ipu"], stats["floor_transfer_offsets_s"]
    (3.0, 45.0, [1.0])
    >>> round(stats["percent"]["pause"], 2), stats["speakers"]["A"]["counts"]["pause"]
    (3.33, 1)
    """
    if conv.duration <= 0:
        raise ValueError(f"{conv.source or 'conversation'}: empty recording (duration 0 s)")
    if lags is not None:  # a voice-activity detector's boundaries, moved back to the speech
        conv = corrected(conv, lags)
    events = detect_events(conv, params, rule)
    table = event_table(events)

    words = bc_words = None
    if conv.words is not None:
        words = [len(conv.words[k]) for k in (0, 1)]
        bc_words = [0, 0]
        bc_sets = [set(events.backchannels[k]) for k in (0, 1)]
        for k in (0, 1):
            for seg, ws in zip(events.ipus[k], events.ipu_words[k]):
                if seg in bc_sets[k]:
                    bc_words[k] += len(ws)

    result = {
        "source": conv.source,
        "duration_s": conv.duration,
        **_summary(table, conv.duration, None if words is None else sum(words), None if bc_words is None else sum(bc_words)),
        "speakers": {},
        "floor_transfer_offsets_s": [round(t.offset_s, 6) for t in events.floor_transfers],
        "params": params.as_dict(),
        "backchannels_from": backchannel_evidence(conv, rule),
        "boundary_correction": None if lags is None else [
            one.as_dict() for one in (lags if isinstance(lags, tuple) else (lags, lags))],
    }
    for k, name in enumerate(conv.speakers):
        own = {ev: [row for row in rows if row[0] == k] for ev, rows in table.items()}
        result["speakers"][name] = _summary(
            own, conv.duration, None if words is None else words[k], None if bc_words is None else bc_words[k]
        )
    if include_events:
        result["events"] = {
            ev: [{"speaker": conv.speakers[k], "start": round(s, 6), "end": round(e, 6)} for k, s, e in rows]
            for ev, rows in table.items()
        }
    return result


def _mean_std(values) -> dict:
    values = [v for v in values if v is not None and not math.isnan(v)]
    if not values:
        return {"mean": None, "std": None}
    arr = np.asarray(values, dtype=float)
    return {"mean": float(arr.mean()), "std": float(arr.std(ddof=1)) if len(arr) > 1 else 0.0}


def _pooled(stats: list[dict]) -> dict:
    total = sum(s["duration_s"] for s in stats)
    minutes = total / 60.0
    counts = {n: sum(s["counts"][n] for s in stats) for n in COUNT_EVENTS}
    durations = {n: sum(s["durations_s"][n] for s in stats) for n in DURATION_EVENTS}
    with_words = [s for s in stats if s["words"] is not None]
    words_minutes = sum(s["duration_s"] for s in with_words) / 60.0
    return {
        "counts": counts,
        "durations_s": durations,
        "per_minute": {n: counts[n] / minutes for n in COUNT_EVENTS},
        "percent": {n: 100.0 * durations[n] / total for n in DURATION_EVENTS},
        "speaking_rate_wpm": sum(s["words"] for s in with_words) / words_minutes if with_words else None,
        "backchannel_rate_wpm": (
            sum(s["backchannel_words"] for s in with_words) / words_minutes if with_words else None
        ),
    }


def corpus_statistics(stats: list[dict], name: str = "corpus") -> dict:
    """Aggregate per-conversation statistics (as returned by `conversation_statistics`).

    Pooled: sum of counts / sum of minutes; per_conversation: mean and sd (ddof=1) of the
    conversations' own rates. One gap in 1 min and one in 2 min: pooled 2 / 3 per minute, mean of
    1.0 and 0.5 = 0.75.

    >>> one = conversation_statistics(Conversation(60.0, ([(0, 10)], [(11, 20)])))
    >>> two = conversation_statistics(Conversation(120.0, ([(0, 10)], [(13, 20)])))
    >>> corpus = corpus_statistics([one, two], name="toy")
    >>> round(corpus["per_minute"]["gap"], 3), corpus["per_conversation"]["per_minute"]["gap"]["mean"]
    (0.667, 0.75)
    >>> corpus["floor_transfer_offset"]["mean_s"]  # offsets 1 s and 3 s
    2.0
    """
    if not stats:
        raise ValueError("no conversations to aggregate")
    per_speaker = [sp for s in stats for sp in s["speakers"].values()]
    spread = {
        "per_minute": {n: _mean_std(s["per_minute"][n] for s in stats) for n in COUNT_EVENTS},
        "percent": {n: _mean_std(s["percent"][n] for s in stats) for n in DURATION_EVENTS},
        "speaking_rate_wpm": _mean_std(s["speaking_rate_wpm"] for s in stats),
        "backchannel_rate_wpm": _mean_std(s["backchannel_rate_wpm"] for s in stats),
        "speaker_speaking_rate_wpm": _mean_std(sp["speaking_rate_wpm"] for sp in per_speaker),
        "speaker_backchannel_rate_wpm": _mean_std(sp["backchannel_rate_wpm"] for sp in per_speaker),
        "floor_transfer_offset_median_s": _mean_std(
            float(np.median(s["floor_transfer_offsets_s"])) if s["floor_transfer_offsets_s"] else None for s in stats),
    }
    return {
        "name": name,
        "conversations": len(stats),
        "duration_s": sum(s["duration_s"] for s in stats),
        **_pooled(stats),
        "per_conversation": spread,
        "floor_transfer_offset": offset_distribution(o for s in stats for o in s["floor_transfer_offsets_s"]),
        "params": stats[0]["params"],
    }
