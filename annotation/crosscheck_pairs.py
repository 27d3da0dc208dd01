"""A second, independently written generator of TurnNat's perturbation pairs (paper, IV-A), to
check the naturalness scorers on pairs they were not built on.

It follows the paper's text only, not `annotation.perturbations` (the study builder): it works on
voice-activity frames at 100 Hz, crops windows its own way and draws every magnitude from wider
ranges, so that a scorer tuned to the builder's habits would show it here.

- Crop: a 20-25 s window with the targeted event at a random 30-70 % of it, both ends moved to
  the middle of the nearest mutual silence within 1.5 s.
- Clean regions (VAP criterion): a mutual silence with one speaker alone active in the 1 s before
  it and one alone in the 1 s after; different speakers = shift, the same = hold.
- late_response: the answer after a shift delayed by 1.0-2.5 s (silence opened before it);
- early_entry: the answer (the responder's speech up to its first 0.5 s silence) moved 1.0-3.0 s
  earlier, into the other's speech;
- hold_instead_of_shift: the answering turn (0.8-10 s, up to the first speaker's resumption)
  removed, in one of two forms: "excise" cuts the whole exchange out of both channels and leaves a
  pause of 0.3-2.0 s before the first speaker goes on; "mute" silences the answer on its channel
  and keeps the timeline;
- shift_instead_of_hold: a hold pause of 0.2-1.5 s replaced by a complete 0.8-5 s turn of the
  other speaker from elsewhere in the conversation, with silences of 0.15-0.7 s around it;
- excessive_backchannel: 2-4 distinct backchannels of the listener (isolated one- or two-word
  responses from elsewhere in the conversation, from a word list of this module) pasted 0.6-2 s
  apart into a stretch of at least 5 s where the listener was silent.

Equal-length cropping (`equal_length=True`, `--equal-length`): the perturbed clip is cut to the
natural clip's duration, its window placed on the perturbed timeline so that the edit stays where
it was and the change of length is split between the two ends (`equal_length_window`): a late
answer or an inserted turn loses half the inserted time of material at each end, the cut-out
answer takes in half the removed time more at each end. A per-second score then compares the
same length of dialogue.

Words (where the conversation has them) travel with the speech they belong to: each clip keeps
the words of its kept speech with their times moved by the edit (delayed, advanced, pasted with a
donor), and the cut-out or silenced answer's words are gone, so a lexical cue reads the perturbed
clip as it would a real one.

At most two pairs of one type come from one conversation. The draws that pick a pair come before
the removal's form, so both forms of one seed hold the same pairs. Written as the builder writes
(voice-activity JSON clips and manifest.jsonl with each pair's source conversation), so
`python -m naturalness pairs` reads them.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from turntaking.activity import Conversation, Word, conversation_to_json, frames_to_segments

RATE = 100  # frames per second
TYPES = ("late_response", "early_entry", "hold_instead_of_shift", "shift_instead_of_hold", "excessive_backchannel")
FORMS = ("excise", "mute")
# Isolated one- or two-word listener responses (Switchboard spellings).
BACKCHANNEL_WORDS = frozenset(
    "yeah yes yep uh-huh um-hum mhm mm-hmm hm-mm right okay ok oh sure really wow huh no exactly true "
    "uh um hm i see gosh".split())


@dataclass(frozen=True)
class CrosscheckParams:
    clip_s: tuple[float, float] = (20.0, 25.0)
    event_position: tuple[float, float] = (0.3, 0.7)
    snap_s: float = 1.5
    bridge_s: float = 0.05  # silences this short inside a channel are closed (word-boundary jitter)
    context_s: float = 1.0
    late_s: tuple[float, float] = (1.0, 2.5)
    early_s: tuple[float, float] = (1.0, 3.0)
    utterance_silence_s: float = 0.5
    answer_s: tuple[float, float] = (0.8, 10.0)
    kept_pause_s: tuple[float, float] = (0.3, 2.0)
    hold_pause_s: tuple[float, float] = (0.2, 1.5)
    inserted_turn_s: tuple[float, float] = (0.8, 5.0)
    inserted_silence_s: tuple[float, float] = (0.15, 0.7)
    backchannels: tuple[int, int] = (2, 4)
    backchannel_spacing_s: tuple[float, float] = (0.6, 2.0)
    listener_silence_s: float = 5.0
    per_conversation: int = 2
    equal_length_pad_s: float = 8.0  # material beyond the clip an equal-length crop may take in


def runs(x: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) of every run of True."""
    d = np.diff(np.concatenate([[0], x.astype(np.int8), [0]]))
    return list(zip(np.flatnonzero(d == 1).tolist(), np.flatnonzero(d == -1).tolist()))


def close_short_silences(x: np.ndarray, frames: int) -> np.ndarray:
    x = x.copy()
    spans = runs(x)
    for (_, e), (s, _) in zip(spans, spans[1:]):
        if s - e <= frames:
            x[e:s] = True
    return x


@dataclass(frozen=True)
class Region:
    """A clean mutual silence [start, end) (frames) between `before` and `after` speakers."""

    start: int
    end: int
    before: int
    after: int


def clean_regions(va: np.ndarray, context: int) -> list[Region]:
    n = va.shape[1]
    out = []
    for s, e in runs(~(va[0] | va[1])):
        if s == 0 or e == n or s < context or e + context > n:
            continue
        before = [k for k in (0, 1) if va[k, s - 1]]
        after = [k for k in (0, 1) if va[k, e]]
        if len(before) != 1 or len(after) != 1:
            continue
        b, a = before[0], after[0]
        if va[1 - b, s - context:s].any() or va[1 - a, e:e + context].any():
            continue
        out.append(Region(s, e, b, a))
    return out


def crop_window(va: np.ndarray, first: int, last: int, p: CrosscheckParams, rng) -> tuple[int, int] | None:
    """[start, end) of a clip holding frames first..last, ends in the middle of mutual silences."""
    n = va.shape[1]
    length = int(rng.uniform(*p.clip_s) * RATE)
    centre = (first + last) / 2
    start = int(centre - rng.uniform(*p.event_position) * length)
    silent = ~(va[0] | va[1])
    mids = np.array([(s + e) // 2 for s, e in runs(silent)])
    if not len(mids):
        return None
    snap = int(p.snap_s * RATE)

    def nearest(t: int) -> int | None:
        j = int(np.argmin(np.abs(mids - t)))
        return int(mids[j]) if abs(int(mids[j]) - t) <= snap else None

    a, b = nearest(start), nearest(start + length)
    if a is None or b is None or a < 0 or b > n or not (a < first and last < b):
        return None
    if not p.clip_s[0] * RATE - snap <= b - a <= p.clip_s[1] * RATE + snap:
        return None
    return a, b


def frames_of(s: float) -> int:
    return int(round(s * RATE))


def turn_donors(va: np.ndarray, speaker: int, p: CrosscheckParams) -> list[tuple[int, int]]:
    """Stretches of `speaker`'s speech (joined across silences under 0.5 s) with the other silent."""
    joined = close_short_silences(va[speaker], frames_of(p.utterance_silence_s))
    lo, hi = (frames_of(x) for x in p.inserted_turn_s)
    pad = frames_of(0.3)
    return [(s, e) for s, e in runs(joined)
            if lo <= e - s <= hi and not va[1 - speaker, max(0, s - pad):e + pad].any()]


def backchannel_donors(conv: Conversation, va: np.ndarray, listener: int, context: int) -> list[tuple[int, int]]:
    """Isolated listener responses of one or two backchannel words during the other's speech."""
    if conv.words is None:
        return []
    out = []
    for s, e in runs(va[listener]):
        words = [w.text for w in conv.words[listener] if w.start < (e / RATE) and w.end > (s / RATE)]
        if not 1 <= len(words) <= 2 or not all(w in BACKCHANNEL_WORDS for w in words) or e - s > frames_of(1.5):
            continue
        if va[listener, max(0, s - context):s].any() or va[listener, e:e + context].any():
            continue
        if va[1 - listener, max(0, s - context // 2):e + context // 2].mean() < 0.5:
            continue
        out.append((s, e))
    return out


def _draw(rng, bounds) -> float:
    return float(rng.uniform(*bounds))


def candidate_events(va: np.ndarray, kind: str, p: CrosscheckParams) -> list[tuple[int, int, object]]:
    """(first frame, last frame, what) of every place a pair of `kind` could be made."""
    regions = clean_regions(va, frames_of(p.context_s))
    if kind in ("late_response", "early_entry"):
        return [(r.start - frames_of(1.0), r.end + frames_of(1.0), r) for r in regions if r.before != r.after]
    if kind == "hold_instead_of_shift":
        out = []
        for r in regions:
            if r.before == r.after:
                continue
            resumes = np.flatnonzero(va[r.before, r.end:])
            if len(resumes):
                out.append((r.start - frames_of(1.0), r.end + int(resumes[0]) + frames_of(1.0), r))
        return out
    if kind == "shift_instead_of_hold":
        lo, hi = (frames_of(x) for x in p.hold_pause_s)
        return [(r.start - frames_of(1.0), r.end + frames_of(1.0), r) for r in regions
                if r.before == r.after and lo <= r.end - r.start <= hi]
    if kind == "excessive_backchannel":
        out = []
        for listener in (0, 1):
            for s, e in runs(~va[listener]):
                if e - s >= frames_of(p.listener_silence_s) and va[1 - listener, s:e].mean() >= 0.6:
                    out.append((s, e, listener))
        return out
    raise ValueError(f"unknown perturbation type {kind!r}")


Words = list[list[Word]]  # per channel, times in seconds from the start of the frames they go with


def words_between(conv: Conversation, start: int, end: int, at: int = 0) -> Words:
    """The conversation's words whose middle lies in frames [start, end), placed from frame `at` on."""
    if conv.words is None:
        return [[], []]
    a, b, shift = start / RATE, end / RATE, (at - start) / RATE
    return [[Word(w.start + shift, w.end + shift, w.text) for w in conv.words[k] if a <= (w.start + w.end) / 2 < b]
            for k in (0, 1)]


def _words_shifted(words: list[Word], at: int, by: int) -> list[Word]:
    """Words starting at frame `at` or later moved by `by` frames."""
    t, d = at / RATE, by / RATE
    return [Word(w.start + d, w.end + d, w.text) if (w.start + w.end) / 2 >= t else w for w in words]


def _words_cut(words: list[Word], start: int, end: int, new_length: int) -> list[Word]:
    """Frames [start, end) replaced by `new_length` frames: words inside them dropped, later ones
    moved. A word belongs where its middle is (word and frame boundaries differ by rounding)."""
    a, b = start / RATE, end / RATE
    kept = [w for w in words if not a <= (w.start + w.end) / 2 < b]
    return _words_shifted(kept, start, new_length - (end - start))


def perturb(conv: Conversation, va: np.ndarray, kind: str, event, clip: tuple[int, int], form: str,
            p: CrosscheckParams, rng, pad: int = 0) -> tuple[np.ndarray, dict, Words] | None:
    """The perturbed frames of the clip, what was done, and the words that go with the frames
    (`Words`; empty without words), or None where it does not fit.
    `event` is one of `candidate_events`: (first frame, last frame, what). With `pad` the frames
    returned reach `pad` frames beyond the clip on both sides (material for an equal-length crop);
    donors are still taken from outside the clip itself."""
    cs, ce = clip
    x = va[:, cs - pad:ce + pad].copy()
    words = words_between(conv, cs - pad, ce + pad)
    if kind == "excessive_backchannel":
        first, last, listener = event
        donors = [d for d in backchannel_donors(conv, va, listener, frames_of(p.context_s)) if d[1] <= cs or d[0] >= ce]
        count = int(rng.integers(p.backchannels[0], p.backchannels[1] + 1))
        if len(donors) < count:
            return None
        chosen = [donors[i] for i in rng.choice(len(donors), size=count, replace=False)]
        at = first - cs + pad + frames_of(_draw(rng, (0.5, 1.5)))
        placed = []
        for s, e in chosen:
            if at + (e - s) > last - cs + pad - frames_of(0.5):
                return None
            x[listener, at:at + e - s] = va[listener, s:e]
            words[listener] += words_between(conv, s, e, at)[listener]
            placed.append(round((at - pad) / RATE, 2))
            at += (e - s) + frames_of(_draw(rng, p.backchannel_spacing_s))
        words[listener].sort(key=lambda w: w.start)
        return x, {"listener": listener, "count": count, "at_s": placed}, words

    e0 = event[2]
    r = Region(e0.start - cs + pad, e0.end - cs + pad, e0.before, e0.after)
    if kind == "late_response":
        delay = frames_of(_draw(rng, p.late_s))
        x = np.concatenate([x[:, :r.end], np.zeros((2, delay), bool), x[:, r.end:]], axis=1)
        words = [_words_shifted(w, r.end, delay) for w in words]
        return x, {"delay_s": delay / RATE, "gap_s": (r.end - r.start) / RATE}, words
    if kind == "early_entry":
        advance = frames_of(_draw(rng, p.early_s))
        answer = close_short_silences(x[r.after], frames_of(p.utterance_silence_s))
        end = next(e for s, e in runs(answer) if s == r.end)
        speech = runs(x[r.before, :r.start])
        new_start = r.end - advance
        if not speech or new_start < speech[-1][0] + frames_of(0.3) or new_start - frames_of(0.3) < pad:
            return None  # the answer must land inside the other's last utterance
        if x[r.after, new_start - frames_of(0.3):r.end].any():
            return None
        moved = x[r.after, r.end:end].copy()
        x[r.after, r.end:end] = False
        x[r.after, new_start:new_start + len(moved)] = moved
        a, b = r.end / RATE, end / RATE
        words[r.after] = sorted((Word(w.start - advance / RATE, w.end - advance / RATE, w.text)
                                 if a <= (w.start + w.end) / 2 < b else w for w in words[r.after]), key=lambda w: w.start)
        return x, {"advance_s": advance / RATE, "overlap_s": (advance - (r.end - r.start)) / RATE}, words
    if kind == "hold_instead_of_shift":
        resume = r.end + int(np.flatnonzero(x[r.before, r.end:])[0])
        answer_speech = np.flatnonzero(x[r.after, r.end:resume])
        if x[r.after, resume] or not len(answer_speech):
            return None
        answer_end = r.end + int(answer_speech[-1]) + 1
        if not frames_of(p.answer_s[0]) <= answer_end - r.end <= frames_of(p.answer_s[1]):
            return None
        pause = frames_of(_draw(rng, p.kept_pause_s))  # drawn in both forms: the same pairs
        if form == "mute":
            x[r.after, r.end:answer_end] = False
            a, b = r.end / RATE, answer_end / RATE
            words[r.after] = [w for w in words[r.after] if not a <= (w.start + w.end) / 2 < b]
            return x, {"answer_s": (answer_end - r.end) / RATE, "silence_s": (resume - r.start) / RATE}, words
        x = np.concatenate([x[:, :r.start], np.zeros((2, pause), bool), x[:, resume:]], axis=1)
        words = [_words_cut(w, r.start, resume, pause) for w in words]
        return x, {"answer_s": (answer_end - r.end) / RATE, "removed_s": (resume - r.start) / RATE,
                   "pause_s": pause / RATE}, words
    if kind == "shift_instead_of_hold":
        other = 1 - r.before
        donors = [d for d in turn_donors(va, other, p) if d[1] <= cs or d[0] >= ce]
        if not donors:
            return None
        s, e = donors[int(rng.integers(len(donors)))]
        g1, g2 = (frames_of(_draw(rng, p.inserted_silence_s)) for _ in range(2))
        inserted = np.zeros((2, g1 + (e - s) + g2), bool)
        inserted[other, g1:g1 + e - s] = va[other, s:e]
        x = np.concatenate([x[:, :r.start], inserted, x[:, r.end:]], axis=1)
        words = [_words_cut(w, r.start, r.end, inserted.shape[1]) for w in words]
        words[other] = sorted(words[other] + words_between(conv, s, e, r.start + g1)[other], key=lambda w: w.start)
        return x, {"turn_s": (e - s) / RATE, "silences_s": [g1 / RATE, g2 / RATE],
                   "pause_s": (r.end - r.start) / RATE}, words
    raise ValueError(f"unknown perturbation type {kind!r}")


@dataclass(frozen=True)
class CrosscheckPair:
    pair_id: str
    type: str
    source: str
    clip_start: float
    clip_end: float
    natural: Conversation
    perturbed: Conversation
    details: dict


def _conversation(x: np.ndarray, source: str, words: Words | None = None) -> Conversation:
    """The clip's conversation; `words` (times from the start of `x`) kept where their middle is
    inside it, their times clipped to it."""
    duration = x.shape[1] / RATE
    kept = None if words is None else tuple(
        sorted((Word(max(w.start, 0.0), min(w.end, duration), w.text) for w in words[k]
                if 0.0 <= (w.start + w.end) / 2 < duration), key=lambda w: w.start)
        for k in (0, 1))
    return Conversation(duration, tuple(frames_to_segments(x[k], RATE) for k in (0, 1)), kept, source=source)


def conversation_frames(conv: Conversation, p: CrosscheckParams) -> np.ndarray:
    va = conv.frames(RATE) > 0.5
    return np.stack([close_short_silences(va[k], frames_of(p.bridge_s)) for k in (0, 1)])


def equal_length_window(perturbed_frames: int, clip_frames: int, pad: int) -> tuple[int, int] | None:
    """[start, end) in the padded perturbed frames of a window as long as the natural clip.

    The perturbed timeline equals the natural one before the edit and is shifted by the edit's
    change of length d after it; the window starts d/2 later than the natural clip (d < 0: earlier),
    so the edit keeps its place in the middle and the change of length is split between the two
    ends: an edit that inserts time loses d/2 of material at each end, one that removes time (the
    cut-out answer) takes in |d|/2 more at each end. None where the padding is too short."""
    change = perturbed_frames - (clip_frames + 2 * pad)
    start = pad + int(np.floor(change / 2))
    if start < 0 or start + clip_frames > perturbed_frames:
        return None
    return start, start + clip_frames


def build_crosscheck_pairs(conversations, per_type: int, seed: int, form: str = "excise",
                           p: CrosscheckParams = CrosscheckParams(), types=TYPES,
                           equal_length: bool = False) -> list[CrosscheckPair]:
    """`per_type` pairs of each type (fewer where the conversations offer fewer).

    equal_length: the perturbed clip is cut to the natural clip's duration (`equal_length_window`);
    its ends then need not fall in mutual silences."""
    if form not in FORMS:
        raise ValueError(f"unknown hold removal {form!r} ({' or '.join(FORMS)})")
    conversations = list(conversations)
    frames = [conversation_frames(c, p) for c in conversations]
    pad = frames_of(p.equal_length_pad_s) if equal_length else 0
    pairs = []
    for t_index, kind in enumerate(types):
        rng = np.random.default_rng([seed, t_index])
        pool = [(i, ev) for i, va in enumerate(frames) for ev in candidate_events(va, kind, p)]
        used: Counter = Counter()
        for j in rng.permutation(len(pool)):
            if sum(1 for q in pairs if q.type == kind) >= per_type:
                break
            i, ev = pool[j]
            if used[i] >= p.per_conversation:
                continue
            conv, va = conversations[i], frames[i]
            clip = crop_window(va, ev[0], ev[1], p, rng)
            if clip is None or clip[0] < pad or clip[1] + pad > va.shape[1]:
                continue
            made = perturb(conv, va, kind, ev, clip, form, p, rng, pad)
            if made is None:
                continue
            x, details, words = made
            if equal_length:
                window = equal_length_window(x.shape[1], clip[1] - clip[0], pad)
                if window is None:
                    continue
                change = x.shape[1] - (clip[1] - clip[0] + 2 * pad)
                details = {**details, "length_change_s": change / RATE,
                           "perturbed_window_shift_s": (window[0] - pad) / RATE}
                x = x[:, window[0]:window[1]]
                words = [_words_shifted(w, 0, -window[0]) for w in words]
            has_words = conv.words is not None
            used[i] += 1
            n = sum(1 for q in pairs if q.type == kind) + 1
            natural_words = words_between(conv, clip[0], clip[1]) if has_words else None
            pairs.append(CrosscheckPair(f"{kind}-{n:04d}", kind, conv.source, clip[0] / RATE, clip[1] / RATE,
                                        _conversation(va[:, clip[0]:clip[1]], conv.source, natural_words),
                                        _conversation(x, conv.source, words if has_words else None), details))
    return pairs


def write_crosscheck_pairs(pairs: list[CrosscheckPair], out_dir, info: dict) -> Path:
    """Clips as voice-activity JSON and manifest.jsonl (the format `python -m naturalness pairs` reads)."""
    out = Path(out_dir)
    (out / "clips").mkdir(parents=True, exist_ok=True)
    lines = []
    for pair in pairs:
        entry = {"pair_id": pair.pair_id, "type": pair.type, "source": pair.source,
                 "clip_start": pair.clip_start, "clip_end": pair.clip_end, "details": pair.details}
        for side, conv in (("natural", pair.natural), ("perturbed", pair.perturbed)):
            rel = f"clips/{pair.pair_id}.{side}.json"
            (out / rel).write_text(json.dumps(conversation_to_json(conv)))
            entry[side] = rel
        lines.append(json.dumps(entry, sort_keys=True) + "\n")
    (out / "manifest.jsonl").write_text("".join(lines))
    counts = defaultdict(int)
    for pair in pairs:
        counts[pair.type] += 1
    (out / "benchmark.json").write_text(json.dumps({**info, "generator": "crosscheck", "counts": counts},
                                                   indent=1, sort_keys=True) + "\n")
    return out / "manifest.jsonl"


def params_dict(p: CrosscheckParams) -> dict:
    return asdict(p)
