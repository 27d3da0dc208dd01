"""Paired natural / perturbed dialogue clips (TurnNat section IV-A).

From a natural two-speaker conversation, cut 20-25 s clips that start and end in mutual silence
around a targeted event, and make the perturbed twin of one of five types:

- late_response: a responding utterance delayed by 1.2-2.0 s (silence inserted in the gap);
- early_entry: a responding utterance advanced by 1.2-2.5 s into the previous speaker's speech;
- hold_instead_of_shift: a 1.2-8 s responding turn removed: `hold_removal="excise"` (default)
  cuts it out of both channels and compacts the gap to 0.5-1.5 s, so the original speaker pauses
  briefly and goes on; `"mute"` silences the responder's channel over the turn and keeps the
  timeline, so the original speaker resumes when they did, after the whole silence (a missing
  answer as a dialogue system produces it: the participant waits, then goes on);
- shift_instead_of_hold: a 1-4 s turn of the other speaker (from the same conversation) inserted
  into a 0.3-1.0 s hold pause;
- excessive_backchannel: 2-3 extra backchannels of the listener (from the same conversation,
  each a different one) ~0.8 s apart where the listener was silent.

Shift and hold regions follow the VAP criterion: one active speaker in the 1 s before the
silence and one in the 1 s after (different speakers: shift; the same: hold). Every magnitude and
criterion is a named parameter of `PerturbationParams`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from turntaking.activity import Conversation, Segment
from turntaking.events import EventParams, detect_events, mutual_silences
from annotation.edits import apply_edits, crop

HOLD_REMOVALS = ("excise", "mute")
PERTURBATION_TYPES = (
    "late_response",
    "early_entry",
    "hold_instead_of_shift",
    "shift_instead_of_hold",
    "excessive_backchannel",
)


@dataclass(frozen=True)
class PerturbationParams:
    clip_min_s: float = 20.0
    clip_max_s: float = 25.0
    clip_margin_before_s: float = 4.0  # context before the event (TurnNat skips the first 3 s)
    clip_margin_after_s: float = 3.0
    boundary_silence_s: float = 0.1  # clip boundaries lie in mutual silences at least this long
    context_s: float = 1.0  # VAP shift/hold criterion: single active speaker this long around
    min_turn_s: float = 1.0  # late/early: both turns at least this long
    late_delay_s: tuple[float, float] = (1.2, 2.0)
    early_advance_s: tuple[float, float] = (1.2, 2.5)
    removed_turn_s: tuple[float, float] = (1.2, 8.0)
    compacted_gap_s: tuple[float, float] = (0.5, 1.5)
    hold_removal: str = "excise"  # or "mute"; see the module docstring
    hold_pause_s: tuple[float, float] = (0.3, 1.0)
    inserted_turn_s: tuple[float, float] = (1.0, 4.0)
    inserted_gap_s: float = 0.25  # silence before and after an inserted turn
    extra_backchannels: tuple[int, int] = (2, 3)
    backchannel_spacing_s: float = 0.8
    events: EventParams = field(default_factory=EventParams)

    def __post_init__(self):
        if self.hold_removal not in HOLD_REMOVALS:
            raise ValueError(f"unknown hold_removal {self.hold_removal!r} ({' or '.join(HOLD_REMOVALS)})")


@dataclass
class PerturbationPair:
    pair_id: str
    type: str
    source: str
    clip_start: float
    clip_end: float
    natural: Conversation
    perturbed: Conversation
    edits: list[dict]
    details: dict

    def manifest_entry(self) -> dict:
        return {
            "pair_id": self.pair_id,
            "type": self.type,
            "source": self.source,
            "clip_start": round(self.clip_start, 6),
            "clip_end": round(self.clip_end, 6),
            "edits": self.edits,
            "details": self.details,
        }


# -- candidate events ------------------------------------------------------------------------


@dataclass(frozen=True)
class Transition:
    """A mutual silence between the IPU `before` of speaker `prev` and `after` of speaker `next`."""

    start: float
    end: float
    prev: int
    next: int
    before: Segment
    after: Segment


def _active(ipus, k: int, a: float, b: float) -> bool:
    return any(s < b and e > a for s, e in ipus[k])


def clean_transitions(ipus, duration: float, context_s: float) -> list[Transition]:
    """Silences bounded by a single active speaker `context_s` before and after (VAP criterion)."""
    out = []
    for s, e in mutual_silences(ipus, duration):
        if s <= 0 or e >= duration:
            continue
        prev = [k for k in (0, 1) if any(abs(x[1] - s) < 1e-9 for x in ipus[k])]
        nxt = [k for k in (0, 1) if any(abs(x[0] - e) < 1e-9 for x in ipus[k])]
        if len(prev) != 1 or len(nxt) != 1:
            continue
        p, n = prev[0], nxt[0]
        if _active(ipus, 1 - p, s - context_s, s) or _active(ipus, 1 - n, e, e + context_s):
            continue
        if not (_active(ipus, p, s - context_s, s) and _active(ipus, n, e, e + context_s)):
            continue
        before = next(x for x in ipus[p] if abs(x[1] - s) < 1e-9)
        after = next(x for x in ipus[n] if abs(x[0] - e) < 1e-9)
        out.append(Transition(s, e, p, n, before, after))
    return out


def clip_bounds(
    conv_silences: list[Segment], event_start: float, event_end: float, p: PerturbationParams, rng
) -> Segment | None:
    """A random clip [start, end] of allowed length, both ends inside mutual silences, around the event."""
    mids = [0.5 * (s + e) for s, e in conv_silences if e - s >= p.boundary_silence_s]
    starts = [m for m in mids if m <= event_start - p.clip_margin_before_s]
    options = []
    for cs in starts:
        for ce in mids:
            if ce >= event_end + p.clip_margin_after_s and p.clip_min_s <= ce - cs <= p.clip_max_s:
                options.append(Segment(cs, ce))
    if not options:
        return None
    return options[int(rng.integers(len(options)))]


def _u(rng, bounds) -> float:
    return float(rng.uniform(*bounds))


# -- the five perturbations, in clip coordinates ------------------------------------------------


def late_response(t: Transition, p, rng) -> tuple[list[dict], dict] | None:
    if t.before[1] - t.before[0] < p.min_turn_s or t.after[1] - t.after[0] < p.min_turn_s:
        return None
    d = _u(rng, p.late_delay_s)
    edits = [{"op": "insert_silence", "at": t.end, "duration": d}]
    return edits, {"channel": t.next, "moved_start": t.after[0], "shift_s": d, "gap_before_s": t.end - t.start,
                   "gap_after_s": t.end - t.start + d}


def early_entry(clip_ipus, t: Transition, p, rng) -> tuple[list[dict], dict] | None:
    if t.before[1] - t.before[0] < p.min_turn_s or t.after[1] - t.after[0] < p.min_turn_s:
        return None
    a = _u(rng, p.early_advance_s)
    gap = t.end - t.start
    # The responder must have been silent where the utterance now goes.
    if _active(clip_ipus, t.next, t.after[0] - a, t.after[0]) or t.after[0] - a < 0:
        return None
    edits = [{"op": "move", "channel": t.next, "start": t.after[0], "end": t.after[1], "shift": -a}]
    return edits, {"channel": t.next, "moved_start": t.after[0], "shift_s": -a, "overlap_s": a - gap}


def hold_instead_of_shift(clip_ipus, t: Transition, p, rng) -> tuple[list[dict], dict] | None:
    x, y = t.prev, t.next
    # The responder's turn: its IPUs until the previous speaker speaks again.
    resume = [s for s, _ in clip_ipus[x] if s >= t.end]
    if not resume:
        return None
    x_next = min(resume)
    y_speech = [seg for seg in clip_ipus[y] if seg[0] >= t.end and seg[1] <= x_next]
    if not y_speech or any(s < x_next and e > x_next for s, e in clip_ipus[y]):
        return None
    turn_end = max(e for _, e in y_speech)
    if not p.removed_turn_s[0] <= turn_end - t.end <= p.removed_turn_s[1]:
        return None
    gap = _u(rng, p.compacted_gap_s)  # drawn either way: both removals pick the same pairs
    if p.hold_removal == "mute":
        edits = [{"op": "silence", "channel": y, "start": t.end, "end": turn_end}]
        return edits, {"channel": y, "removed_turn": [t.end, turn_end], "silence_s": x_next - t.start}
    edits = [
        {"op": "delete", "start": t.start, "end": x_next},
        {"op": "insert_silence", "at": t.start, "duration": gap},
    ]
    return edits, {"channel": y, "removed_turn": [t.end, turn_end], "compacted_gap_s": gap}


def shift_instead_of_hold(t: Transition, p, rng, donors: list[Segment]):
    pause = t.end - t.start
    if not p.hold_pause_s[0] <= pause <= p.hold_pause_s[1] or not donors:
        return None
    other = 1 - t.prev
    a, b = donors[int(rng.integers(len(donors)))]
    g = p.inserted_gap_s
    edits = [
        {"op": "delete", "start": t.start, "end": t.end},
        {"op": "insert_silence", "at": t.start, "duration": 2 * g + (b - a)},
        {"op": "paste", "channel": other, "at": t.start + g, "source_start": a, "source_end": b},
    ]
    return edits, {"channel": other, "inserted_turn": [a, b], "inserted_at": t.start + g, "hold_pause_s": pause}


def excessive_backchannel(clip_ipus, speaker_ipu: Segment, listener: int, p, rng, bcs: list[Segment]):
    n = int(rng.integers(p.extra_backchannels[0], p.extra_backchannels[1] + 1))
    if len(bcs) < n:
        return None
    chosen = [bcs[i] for i in sorted(rng.choice(len(bcs), size=n, replace=False))]
    t = speaker_ipu[0] + p.backchannel_spacing_s
    edits = []
    for a, b in chosen:
        if t + (b - a) > speaker_ipu[1] or _active(clip_ipus, listener, t - p.backchannel_spacing_s / 2, t + (b - a)):
            return None
        edits.append({"op": "paste", "channel": listener, "at": t, "source_start": a, "source_end": b})
        t += (b - a) + p.backchannel_spacing_s
    return edits, {"channel": listener, "count": n, "inserted_at": [e["at"] for e in edits]}


# -- building pairs ---------------------------------------------------------------------------


def _candidates(conv: Conversation, events, kind: str, p: PerturbationParams):
    """(event start, event end, payload) in absolute time for one perturbation type."""
    transitions = clean_transitions(events.ipus, conv.duration, p.context_s)
    if kind in ("late_response", "early_entry", "hold_instead_of_shift"):
        return [(t.start, t.end, t) for t in transitions if t.prev != t.next]
    if kind == "shift_instead_of_hold":
        return [(t.start, t.end, t) for t in transitions if t.prev == t.next]
    if kind == "excessive_backchannel":
        out = []
        for k in (0, 1):
            if len(events.backchannels[1 - k]) < p.extra_backchannels[0]:
                continue
            for s, e in events.ipus[k]:
                if e - s >= 4 * p.backchannel_spacing_s + 1.0 and not _active(events.ipus, 1 - k, s, e):
                    out.append((s, e, (k, (s, e))))
        return out
    raise ValueError(f"unknown perturbation type {kind!r}")


def _shift(t: Transition, offset: float) -> Transition:
    sh = lambda seg: (seg[0] - offset, seg[1] - offset)  # noqa: E731
    return Transition(t.start - offset, t.end - offset, t.prev, t.next, sh(t.before), sh(t.after))


def perturb_at(conv: Conversation, events, silences, kind: str, candidate, p: PerturbationParams, rng):
    """One pair for one candidate event, or None when no clip or magnitude fits."""
    ev_start, ev_end, payload = candidate
    extent_end = ev_end
    if kind == "hold_instead_of_shift":
        extent_end = ev_end + p.removed_turn_s[1]  # the removed turn and the resumption must fit
        resume = [s for s, _ in events.ipus[payload.prev] if s >= payload.end]
        if not resume:
            return None
        extent_end = min(extent_end, min(resume) + 1.0)
    bounds = clip_bounds(silences, ev_start, extent_end, p, rng)
    if bounds is None:
        return None
    cs, ce = bounds
    clip = crop(conv, cs, ce)
    clip_ipus = tuple([(s - cs, e - cs) for s, e in events.ipus[k] if s >= cs and e <= ce] for k in (0, 1))
    if kind == "excessive_backchannel":
        k, ipu = payload
        bcs = [b for b in events.backchannels[1 - k] if b[1] <= cs or b[0] >= ce]
        made = excessive_backchannel(clip_ipus, (ipu[0] - cs, ipu[1] - cs), 1 - k, p, rng, bcs)
    else:
        t = _shift(payload, cs)
        if kind == "late_response":
            made = late_response(t, p, rng)
        elif kind == "early_entry":
            made = early_entry(clip_ipus, t, p, rng)
        elif kind == "hold_instead_of_shift":
            made = hold_instead_of_shift(clip_ipus, t, p, rng)
        else:
            other = 1 - t.prev
            donors = [
                seg for seg in events.turns[other]
                if p.inserted_turn_s[0] <= seg[1] - seg[0] <= p.inserted_turn_s[1] and (seg[1] <= cs or seg[0] >= ce)
            ]
            made = shift_instead_of_hold(t, p, rng, donors)
    if made is None:
        return None
    edits, details = made
    # Paste sources are absolute times of the source conversation.
    perturbed = apply_edits(clip, edits, source=conv)
    details = dict(details, event_time_s=ev_start - cs)
    return cs, ce, clip, perturbed, edits, details


def build_pairs(
    conversations,
    per_type: int,
    seed: int = 0,
    types=PERTURBATION_TYPES,
    params: PerturbationParams = PerturbationParams(),
) -> list[PerturbationPair]:
    """`per_type` pairs of each type from `conversations` (a list); same seed, same pairs."""
    rng = np.random.default_rng(seed)
    conversations = list(conversations)
    analysed = [(conv, detect_events(conv, params.events)) for conv in conversations]
    silences = [
        [(s, e) for s, e in mutual_silences(ev.ipus, conv.duration)] for conv, ev in analysed
    ]
    pairs = []
    for kind in types:
        pool = [(i, c) for i, (conv, ev) in enumerate(analysed) for c in _candidates(conv, ev, kind, params)]
        order = rng.permutation(len(pool))
        made = 0
        for j in order:
            if made >= per_type:
                break
            i, cand = pool[j]
            conv, ev = analysed[i]
            result = perturb_at(conv, ev, silences[i], kind, cand, params, rng)
            if result is None:
                continue
            cs, ce, clip, perturbed, edits, details = result
            made += 1
            pairs.append(
                PerturbationPair(f"{kind}-{made:04d}", kind, conv.source, cs, ce, clip, perturbed, edits, details)
            )
    return pairs


def params_dict(p: PerturbationParams) -> dict:
    d = asdict(p)
    d["events"] = p.events.as_dict()
    return d
