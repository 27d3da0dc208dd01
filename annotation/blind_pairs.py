"""Blind natural/perturbed pairs: a third, independently written TurnNat perturbation benchmark.

Written from the TurnNat paper's text only (arXiv 2607.01345, section IV-A, "Turn-taking
Perturbation Benchmark"), to validate naturalness scorers on pairs their authors never saw.

    python -m annotation.blind_pairs --swb /tmp/swb --split val --per-type 80 --seed 0 \\
        --hold-removal excise --out DIR

writes DIR/manifest.jsonl (one pair a line: pair_id, type, natural, perturbed, source, plus the
clip windows and the drawn magnitudes) and DIR/clips/*.json (voice-activity JSON with words,
`turntaking.activity.conversation_to_json`). Types: late_response, early_entry,
hold_instead_of_shift, shift_instead_of_hold, excessive_backchannel. `python -m naturalness
validate` builds them as its generator `blind`.

Every edit moves a speaker's transcript words together with its voice activity (an item moves,
is removed or is inserted as a whole), so a word-reading scorer sees words where there is speech.

Candidate events (the paper's criteria)
- Clean shift / hold, "the VAP shift/hold criterion": a mutual silence (>= 0.1 s, shorter ones are
  within the word alignments' noise) with exactly one active speaker in the 1 s before its start
  and exactly one in the 1 s after its end; different speakers: shift, same speaker: hold.
- Backchannel, "isolated one- or two-word listener responses, such as 'yeah' or 'mmhmm', during
  the other speaker's turn": an IPU (speech joined over pauses <= 0.2 s) of one or two words of
  the backchannel vocabulary below (read from the transcript), at most 1.5 s long, with no other
  speech of the listener within 1 s either side (isolated) and speech of the other speaker within
  1 s before and within 1 s after it (during the other's turn).
- Turn, used for the answer removed by hold_instead_of_shift and the turn inserted by
  shift_instead_of_hold: one speaker's speech from a clean shift to them up to the next clean
  shift away from them, 1-8 s long ("a complete turn"), at least two words and not a backchannel,
  the other speaker saying nothing in it but backchannels (nothing at all for an inserted turn:
  the other's backchannels cannot be carried along).

Magnitudes: "clearly outside typical human-human response timing", where typical is "about -200
to 400 ms"; every magnitude is drawn uniformly from a range, per pair.
- late_response: the response to a clean shift whose gap is typical (0.1-0.5 s, so the natural
  clip is ordinary) is delayed by 1.2-2.0 s (the paper's range): every item from the response on,
  both speakers, moves later, so the new gap is 1.3-2.5 s.
- early_entry: same candidates; the response is advanced by 1.2-2.5 s (the paper's range): every
  item from the response on, both speakers, moves earlier, so the responder comes in 0.7-2.4 s
  before the current speaker ends. Kept only when that overlap is >= 0.5 s of the current
  speaker's speech (an overlap, not an entry into their pause) and no speaker then overlaps
  themselves (own speech kept >= 0.2 s apart); up to 8 draws, else the candidate is dropped.
- hold_instead_of_shift (from a clean shift whose answering turn is a Turn as above, the first
  speaker taking the floor back through a clean shift): the answering turn is removed, with the
  first speaker's backchannels inside it (they answer a turn that no longer exists).
    --hold-removal mute: removed in place; the timeline is kept, so the first speaker is silent
      from the end of their turn to their next turn (a long hold pause).
    --hold-removal excise: removed and the time closed, so the first speaker goes on after a pause
      drawn uniformly from 0.1-2.0 s (very short to the long end of a within-turn pause; capped
      at the original silence so excising never lengthens the clip).
- shift_instead_of_hold: at a clean hold whose pause is 0.25-1.5 s (a real pause, not a word
  boundary, and not a topic-ending lapse), a complete 1-5 s Turn of the other speaker, taken from
  the same conversation outside both clip windows, is inserted; it starts 0.1-0.5 s after the
  speaker's pause begins and the speaker resumes 0.1-0.5 s after it ends (typical response gaps,
  so the shift itself is the only oddity). Everything after the pause moves later.
- excessive_backchannel: 2 or 3 (the paper's "two to three") extra backchannels of the listener,
  naturally occurring ones of the same speaker and conversation taken from outside the clip
  window, distinct events with distinct words where the listener has them ("non-repetitive"), are
  laid onto the listener's channel (no time change) in a 3-6 s span where the listener is silent
  from 1 s before to 1 s after and the other speaker speaks >= 60 % of the time. Their onsets are
  drawn at random in the span with >= 0.8 s of silence between them, so 2-3 responses in a few
  seconds, far denser than listeners backchannel.

Clips and cropping. The natural clip is 20-25 s of the source conversation, cut at the middle of
mutual silences >= 0.2 s (no speech truncated), keeping >= 3 s of context between the edited span
and either clip end, and centred on the edited span: among the windows whose centre lies within
3 s of the event's centre, one is drawn among those at most max(1 s, the best offset) away. The
perturbed clip is the same stretch of the conversation after the edit: the same material outside
the edit, so its length is the natural length plus the edit's time change (late +1.2-2.0 s,
early -1.2-2.5 s, excise minus the removed time, shift_instead_of_hold plus the inserted turn and
gaps, mute and backchannel unchanged). Cut points map through the edit unchanged, so the perturbed
clip starts and ends in mutual silence too.

At most 2 pairs of a type per source conversation, with non-overlapping windows, and no event
used by two types; conversations are visited in a seeded random order until every type has
--per-type pairs. One seed gives the same events and windows for mute and excise.
"""

from __future__ import annotations

import argparse
import bisect
import json
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tqdm import tqdm

from turntaking.activity import Conversation, Word, conversation_to_json
from turntaking.events import mutual_silences
from turntaking.pairs_manifest import read_pairs_manifest
from turntaking.segment import Segment, merge_segments
from turntaking.switchboard import TRANSCRIPTS_DIR, CorpusError, conversation_ids, load_conversation

TYPES = ("late_response", "early_entry", "hold_instead_of_shift", "shift_instead_of_hold", "excessive_backchannel")

# Clips (paper: "20-25 s dialogue segments", start and end where both speakers are silent).
CLIP_S = (20.0, 25.0)
CUT_SILENCE_MIN_S = 0.2
CONTEXT_S = 3.0  # context kept on each side of the edit, so the edit is inside the clip
MAX_CENTRE_OFFSET_S = 3.0
CENTRE_SLACK_S = 1.0

# Candidate events.
VAP_REGION_S = 1.0  # the VAP criterion's pre-offset / post-onset regions
MIN_SILENCE_S = 0.1
IPU_GAP_S = 0.2
TYPICAL_GAP_S = (0.1, 0.5)
HOLD_PAUSE_S = (0.25, 1.5)
TURN_S = (1.0, 8.0)
INSERT_TURN_S = (1.0, 5.0)
BC_MAX_S = 1.5
BC_ISOLATION_S = 1.0

# Magnitudes.
LATE_DELAY_S = (1.2, 2.0)
EARLY_ADVANCE_S = (1.2, 2.5)
EARLY_MIN_OVERLAP_S = 0.5
EXCISE_PAUSE_S = (0.1, 2.0)
INSERT_GAP_S = (0.1, 0.5)
EXTRA_BC_COUNT = (2, 3)
BC_SPAN_S = (3.0, 6.0)
BC_SPAN_SPEECH_MIN = 0.6
BC_SPACING_S = 0.8
OWN_GAP_MIN_S = 0.2  # after an edit a speaker's own speech items stay this far apart
MAX_DRAWS = 8
MAX_PER_SOURCE = 2

EPS = 1e-6

# Listener responses as Switchboard MS-98 spells them (after turntaking.switchboard's cleaning).
BC_WORDS = frozenset({
    "yeah", "yes", "yep", "uh-huh", "um-hum", "mm-hmm", "mhm", "hm", "hum", "huh", "right", "okay",
    "sure", "oh", "really", "exactly", "wow", "true", "gosh",
})
BC_PHRASES = frozenset({"that's right", "that's true", "i see", "oh my", "oh no", "all right", "i know"})


@dataclass(frozen=True)
class Transition:
    """A clean mutual silence by the VAP criterion."""
    start: float
    end: float
    before: int  # the one speaker active in the second before
    after: int  # the one speaker active in the second after

    @property
    def shift(self) -> bool:
        return self.before != self.after


@dataclass(frozen=True)
class Turn:
    speaker: int
    start: float
    end: float
    entry: Transition  # the clean shift into it
    exit: Transition  # the clean shift out of it
    other_speaks: bool  # the other speaker backchannels inside it


@dataclass(frozen=True)
class Span:
    """One speaker's stretch of speech (a backchannel)."""
    speaker: int
    start: float
    end: float
    text: str


@dataclass(frozen=True)
class Candidate:
    type: str
    span: Segment  # the natural timeline's stretch the edit changes; the clip is centred on it
    transition: Transition | None = None
    turn: Turn | None = None
    listener: int | None = None


@dataclass(frozen=True)
class Tracks:
    """Both speakers' activity segments and words, edited together (Conversation normalises)."""
    segments: tuple[tuple[Segment, ...], tuple[Segment, ...]]
    words: tuple[tuple[Word, ...], tuple[Word, ...]]


@dataclass(frozen=True)
class Edit:
    tracks: Tracks
    delta: float  # time added (+) or removed (-) inside the edited span
    magnitude: dict = field(default_factory=dict)


# --- reading the timeline -------------------------------------------------------------------


def speaks(segments, t0: float, t1: float) -> bool:
    """Any speech in (t0, t1); segments sorted and disjoint, so the last one starting before t1
    has the latest end."""
    i = bisect.bisect_left(segments, (t1,))
    return i > 0 and segments[i - 1][1] > t0 + EPS


def speech_in(segments, t0: float, t1: float) -> float:
    return sum(max(0.0, min(e, t1) - max(s, t0)) for s, e in segments if s < t1 and e > t0)


def words_in(words, t0: float, t1: float) -> list[Word]:
    return [w for w in words if t0 - EPS <= (w.start + w.end) / 2 <= t1 + EPS]


def is_backchannel(words) -> bool:
    texts = [w.text for w in words]
    if not 1 <= len(texts) <= 2:
        return False
    return " ".join(texts) in BC_PHRASES or all(t in BC_WORDS for t in texts)


def clean_transitions(conv: Conversation) -> list[Transition]:
    out = []
    for s0, s1 in mutual_silences(conv.activity, conv.duration, MIN_SILENCE_S):
        if s0 <= 0 or s1 >= conv.duration:
            continue  # the recording's edges bound no exchange
        before = [k for k in (0, 1) if speaks(conv.activity[k], s0 - VAP_REGION_S, s0)]
        after = [k for k in (0, 1) if speaks(conv.activity[k], s1, s1 + VAP_REGION_S)]
        if len(before) == 1 and len(after) == 1:
            out.append(Transition(s0, s1, before[0], after[0]))
    return out


def ipus(conv: Conversation, k: int) -> list[Segment]:
    return merge_segments(conv.activity[k], gap=IPU_GAP_S)


def ipu_words(conv: Conversation, own_ipus: list[Segment], k: int, t: float, ending: bool = False) -> list[Word]:
    """Words of speaker k's IPU (one of `own_ipus`, `ipus(conv, k)`) starting (or ending) at t."""
    for s, e in own_ipus:
        if (abs(e - t) if ending else abs(s - t)) < 1e-3:
            return words_in(conv.words[k], s, e)
    return []


def backchannels(conv: Conversation, k: int) -> list[Span]:
    own, other = ipus(conv, k), conv.activity[1 - k]
    out = []
    for i, (s, e) in enumerate(own):
        ws = words_in(conv.words[k], s, e)
        if e - s > BC_MAX_S or not is_backchannel(ws):
            continue
        if i > 0 and s - own[i - 1][1] < BC_ISOLATION_S or i + 1 < len(own) and own[i + 1][0] - e < BC_ISOLATION_S:
            continue
        if not (speaks(other, s - VAP_REGION_S, s) and speaks(other, e, e + VAP_REGION_S)):
            continue
        out.append(Span(k, s, e, " ".join(w.text for w in ws)))
    return out


def turns(conv: Conversation, transitions: list[Transition], all_ipus) -> list[Turn]:
    """Complete turns: from a clean shift to a speaker to the next clean shift away from them,
    the other saying nothing but backchannels in between. `all_ipus`: both speakers' `ipus`."""
    bc_spans = [{(b.start, b.end) for b in backchannels(conv, k)} for k in (0, 1)]
    out = []
    for i, entry in enumerate(transitions):
        if not entry.shift:
            continue
        k = entry.after
        exit_ = next((t for t in transitions[i + 1:] if t.shift), None)
        if exit_ is None or exit_.before != k:
            continue
        start, end = entry.end, exit_.start
        if not TURN_S[0] <= end - start <= TURN_S[1]:
            continue
        ws = words_in(conv.words[k], start, end)
        if len(ws) < 2 or is_backchannel(ws):
            continue
        other_ipus = [(s, e) for s, e in all_ipus[1 - k] if s < end and e > start]
        if any(span not in bc_spans[1 - k] for span in other_ipus):
            continue
        out.append(Turn(k, start, end, entry, exit_, bool(other_ipus)))
    return out


# --- candidates per type ----------------------------------------------------------------------


def between_words(conv: Conversation, all_ipus, t: Transition) -> bool:
    """The IPUs on both sides of the silence have words and neither is a backchannel."""
    before = ipu_words(conv, all_ipus[t.before], t.before, t.start, ending=True)
    after = ipu_words(conv, all_ipus[t.after], t.after, t.end)
    return bool(before) and bool(after) and not is_backchannel(before) and not is_backchannel(after)


def response_candidates(conv: Conversation, transitions, all_ipus, type_: str) -> list[Candidate]:
    """Clean shifts with a typical gap, between two turns (neither side a backchannel)."""
    return [Candidate(type_, (t.start, t.end), transition=t) for t in transitions
            if t.shift and TYPICAL_GAP_S[0] <= t.end - t.start <= TYPICAL_GAP_S[1] and between_words(conv, all_ipus, t)]


def hold_instead_of_shift_candidates(conv, all_turns, all_ipus) -> list[Candidate]:
    out = []
    for turn in all_turns:
        k = turn.entry.before
        before = ipu_words(conv, all_ipus[k], k, turn.entry.start, ending=True)
        if before and not is_backchannel(before):  # the first speaker was holding a turn
            out.append(Candidate("hold_instead_of_shift", (turn.entry.start, turn.exit.end), turn=turn))
    return out


def shift_instead_of_hold_candidates(conv, transitions, all_ipus) -> list[Candidate]:
    return [Candidate("shift_instead_of_hold", (t.start, t.end), transition=t) for t in transitions
            if not t.shift and HOLD_PAUSE_S[0] <= t.end - t.start <= HOLD_PAUSE_S[1] and between_words(conv, all_ipus, t)]


def excessive_backchannel_candidates(conv, rng) -> list[Candidate]:
    """One span per stretch of listener silence: 3-6 s, clear of the listener's own speech by
    1 s, the other speaker talking >= 60 % of it."""
    out = []
    for listener in (0, 1):
        segs, other = conv.activity[listener], conv.activity[1 - listener]
        bounds = [0.0] + [x for s, e in segs for x in (s, e)] + [conv.duration]
        for g0, g1 in zip(bounds[::2], bounds[1::2]):
            u0, u1 = g0 + BC_ISOLATION_S, g1 - BC_ISOLATION_S
            width = float(rng.uniform(*BC_SPAN_S))
            if u1 - u0 < width:
                continue
            starts = [q for q in np.arange(u0, u1 - width + EPS, 0.5)
                      if speech_in(other, q, q + width) >= BC_SPAN_SPEECH_MIN * width]
            if starts:
                q0 = float(starts[rng.integers(len(starts))])
                out.append(Candidate("excessive_backchannel", (q0, q0 + width), listener=listener))
    return out


# --- editing ---------------------------------------------------------------------------------


def tracks_of(conv: Conversation) -> Tracks:
    return Tracks(tuple(tuple(s) for s in conv.activity), tuple(tuple(w) for w in conv.words))


def moved(tracks: Tracks, at: float, by: float) -> Tracks:
    """Every item (both speakers) starting at or after `at` moved by `by` seconds."""
    segs = tuple(tuple((s + by, e + by) if s >= at - EPS else (s, e) for s, e in ch) for ch in tracks.segments)
    words = tuple(tuple(Word(w.start + by, w.end + by, w.text) if w.start >= at - EPS else w for w in ch)
                  for ch in tracks.words)
    return Tracks(segs, words)


def removed(tracks: Tracks, t0: float, t1: float) -> Tracks:
    """Every item (both speakers) starting inside (t0, t1) removed."""
    def keep(start):
        return not t0 + EPS < start < t1 - EPS
    return Tracks(tuple(tuple(x for x in ch if keep(x[0])) for ch in tracks.segments),
                  tuple(tuple(w for w in ch if keep(w.start)) for ch in tracks.words))


def added(tracks: Tracks, conv: Conversation, k: int, s: float, e: float, to: float) -> Tracks:
    """Speaker k's speech (segments and words) of conv's [s, e] copied to start at `to`."""
    by = to - s
    segs = [(a + by, b + by) for a, b in conv.activity[k] if a >= s - EPS and b <= e + EPS]
    ws = [Word(w.start + by, w.end + by, w.text) for w in conv.words[k] if w.start >= s - EPS and w.end <= e + EPS]
    new_segs = list(tracks.segments)
    new_words = list(tracks.words)
    new_segs[k] = tuple(sorted(tracks.segments[k] + tuple(segs)))
    new_words[k] = tuple(sorted(tracks.words[k] + tuple(ws), key=lambda w: (w.start, w.end)))
    return Tracks(tuple(new_segs), tuple(new_words))


def overlaps_itself(tracks: Tracks) -> bool:
    """Some speaker's own segments (or words) overlap: a last safety net, since Conversation
    would silently merge them (touching items of one source stretch are fine)."""
    for ch in tracks.segments:
        for (_, e), (s, _) in zip(ch, ch[1:]):
            if s < e - EPS:
                return True
    for ch in tracks.words:
        for a, b in zip(ch, ch[1:]):
            if b.start < a.end - EPS:
                return True
    return False


def edit_late_response(conv, cand, window, rng) -> Edit | None:
    t = cand.transition
    d = float(rng.uniform(*LATE_DELAY_S))
    return Edit(moved(tracks_of(conv), t.end, d), d, {"delay_s": d, "gap_s": t.end - t.start})


def edit_early_entry(conv, cand, window, rng) -> Edit | None:
    t = cand.transition
    first, responder = conv.activity[t.before], conv.activity[t.after]
    for _ in range(MAX_DRAWS):
        d = float(rng.uniform(*EARLY_ADVANCE_S))
        new_onset = t.end - d
        if speech_in(first, new_onset, t.start) < EARLY_MIN_OVERLAP_S:
            continue
        # Each speaker's last item before the move and first item after it must stay apart.
        ok = True
        for ch in (first, responder):
            before = [e for s, e in ch if s < t.end - EPS]
            after = [s for s, e in ch if s >= t.end - EPS]
            if before and after and after[0] - d - before[-1] < OWN_GAP_MIN_S:
                ok = False
        if ok:
            return Edit(moved(tracks_of(conv), t.end, -d), -d,
                        {"advance_s": d, "gap_s": t.end - t.start, "overlap_s": d - (t.end - t.start)})
    return None


def edit_hold_instead_of_shift(conv, cand, window, rng, mode: str) -> Edit | None:
    turn = cand.turn
    s0, resume = turn.entry.start, turn.exit.end
    tracks = removed(tracks_of(conv), s0, resume)
    info = {"removed_turn_s": turn.end - turn.start, "hold_removal": mode,
            "removed_backchannels": turn.other_speaks}
    # Drawn in both forms, so that one seed gives the same events (and the same other pairs) for
    # mute and excise: the two sets differ only in how the answer is removed.
    pause = float(rng.uniform(EXCISE_PAUSE_S[0], min(EXCISE_PAUSE_S[1], resume - s0)))
    if mode == "mute":
        return Edit(tracks, 0.0, info | {"pause_s": resume - s0})
    delta = s0 + pause - resume
    return Edit(moved(tracks, resume, delta), delta, info | {"pause_s": pause})


def edit_shift_instead_of_hold(conv, cand, window, rng, all_turns) -> Edit | None:
    t = cand.transition
    other = 1 - t.before
    a, b = window
    # A complete turn of the other speaker, alone on the floor, from outside the clip window, so
    # neither clip holds it twice.
    sources = [u for u in all_turns
               if u.speaker == other and not u.other_speaks and INSERT_TURN_S[0] <= u.end - u.start <= INSERT_TURN_S[1]
               and len(words_in(conv.words[other], u.start, u.end)) >= 3
               and (u.end < a - EPS or u.start > b + EPS)]
    if not sources:
        return None
    src = sources[rng.integers(len(sources))]
    g1, g2 = (float(rng.uniform(*INSERT_GAP_S)) for _ in range(2))
    length = src.end - src.start
    delta = g1 + length + g2 - (t.end - t.start)
    tracks = moved(tracks_of(conv), t.end, delta)
    tracks = added(tracks, conv, other, src.start, src.end, t.start + g1)
    return Edit(tracks, delta, {"inserted_turn_s": length, "gap_before_s": g1, "gap_after_s": g2,
                                "hold_pause_s": t.end - t.start, "inserted_from": [src.start, src.end]})


def edit_excessive_backchannel(conv, cand, window, rng) -> Edit | None:
    k = cand.listener
    a, b = window
    pool = [x for x in backchannels(conv, k) if x.end < a - EPS or x.start > b + EPS]
    n = int(rng.integers(EXTRA_BC_COUNT[0], EXTRA_BC_COUNT[1] + 1))
    if len(pool) < n:
        return None
    # Non-repetitive: distinct events, distinct words first.
    order = [pool[i] for i in rng.permutation(len(pool))]
    chosen, seen = [], set()
    for x in order:
        if x.text not in seen:
            chosen.append(x)
            seen.add(x.text)
    chosen += [x for x in order if x not in chosen]
    chosen = chosen[:n]
    q0, q1 = cand.span
    lengths = [x.end - x.start for x in chosen]
    free = (q1 - q0) - sum(lengths) - (n - 1) * BC_SPACING_S
    if free < 0:
        return None
    offsets = np.sort(rng.uniform(0.0, free, size=n))
    tracks = tracks_of(conv)
    onsets = []
    for i, x in enumerate(chosen):
        onset = q0 + float(offsets[i]) + sum(lengths[:i]) + i * BC_SPACING_S
        onsets.append(onset)
        tracks = added(tracks, conv, k, x.start, x.end, onset)
    return Edit(tracks, 0.0, {"inserted": len(chosen), "texts": [x.text for x in chosen],
                              "onsets_in_source": onsets, "inserted_from": [[x.start, x.end] for x in chosen]})


# --- clips and pairs -------------------------------------------------------------------------


def choose_window(conv: Conversation, span: Segment, rng) -> Segment | None:
    cuts = [(s + e) / 2 for s, e in mutual_silences(conv.activity, conv.duration, CUT_SILENCE_MIN_S)]
    # Only cut points a clip of at most CLIP_S[1] around the span can use.
    starts = [c for c in cuts if span[1] + CONTEXT_S - CLIP_S[1] <= c <= span[0] - CONTEXT_S]
    ends = [c for c in cuts if span[1] + CONTEXT_S <= c <= span[0] - CONTEXT_S + CLIP_S[1]]
    centre = (span[0] + span[1]) / 2
    options = [(abs((a + b) / 2 - centre), a, b) for a in starts for b in ends
               if CLIP_S[0] <= b - a <= CLIP_S[1] and abs((a + b) / 2 - centre) <= MAX_CENTRE_OFFSET_S]
    if not options:
        return None
    best = min(o[0] for o in options)
    near = [o for o in options if o[0] <= max(CENTRE_SLACK_S, best)]
    _, a, b = near[rng.integers(len(near))]
    return a, b


def crop(tracks: Tracks, a: float, b: float, conv: Conversation) -> Conversation | None:
    """The clip [a, b], times from its start; None if any item crosses a cut."""
    segs, words = [], []
    for ch_s, ch_w in zip(tracks.segments, tracks.words):
        if any(s < a - EPS < e or s < b + EPS < e for s, e in ch_s):
            return None
        segs.append([(s - a, e - a) for s, e in ch_s if s >= a - EPS and e <= b + EPS])
        words.append([Word(w.start - a, w.end - a, w.text) for w in ch_w if w.start >= a - EPS and w.end <= b + EPS])
    if not segs[0] or not segs[1]:
        return None
    return Conversation(b - a, (segs[0], segs[1]), (words[0], words[1]), speakers=conv.speakers, source=conv.source)


def make_pair(conv, cand: Candidate, rng, mode: str, all_turns):
    """(natural clip, perturbed clip, window, edit) or None."""
    window = choose_window(conv, cand.span, rng)
    if window is None:
        return None
    if cand.type == "late_response":
        edit = edit_late_response(conv, cand, window, rng)
    elif cand.type == "early_entry":
        edit = edit_early_entry(conv, cand, window, rng)
    elif cand.type == "hold_instead_of_shift":
        edit = edit_hold_instead_of_shift(conv, cand, window, rng, mode)
    elif cand.type == "shift_instead_of_hold":
        edit = edit_shift_instead_of_hold(conv, cand, window, rng, all_turns)
    else:
        edit = edit_excessive_backchannel(conv, cand, window, rng)
    if edit is None or overlaps_itself(edit.tracks):
        return None
    a, b = window
    natural = crop(tracks_of(conv), a, b, conv)
    perturbed = crop(edit.tracks, a, b + edit.delta, conv)
    if natural is None or perturbed is None:
        return None
    return natural, perturbed, window, edit


def conversation_pairs(conv: Conversation, rng, mode: str, wanted: dict[str, int]) -> list[dict]:
    """Up to MAX_PER_SOURCE pairs of each still-wanted type from one conversation."""
    transitions = clean_transitions(conv)
    all_ipus = (ipus(conv, 0), ipus(conv, 1))
    all_turns = turns(conv, transitions, all_ipus)
    candidates = {
        "late_response": lambda: response_candidates(conv, transitions, all_ipus, "late_response"),
        "early_entry": lambda: response_candidates(conv, transitions, all_ipus, "early_entry"),
        "hold_instead_of_shift": lambda: hold_instead_of_shift_candidates(conv, all_turns, all_ipus),
        "shift_instead_of_hold": lambda: shift_instead_of_hold_candidates(conv, transitions, all_ipus),
        "excessive_backchannel": lambda: excessive_backchannel_candidates(conv, rng),
    }
    out = []
    used_events = set()  # one event feeds one pair: two types on one event would share a natural clip
    for type_ in TYPES:
        need = min(MAX_PER_SOURCE, wanted[type_])
        if need <= 0:
            continue
        cands = candidates[type_]()
        windows = []
        for i in rng.permutation(len(cands)):
            if len(windows) >= need:
                break
            if cands[i].span in used_events:
                continue
            made = make_pair(conv, cands[i], rng, mode, all_turns)
            if made is None:
                continue
            natural, perturbed, window, edit = made
            if any(window[0] < b and a < window[1] for a, b in windows):
                continue  # a second pair of one type from elsewhere in the conversation
            windows.append(window)
            used_events.add(cands[i].span)
            out.append({"type": type_, "natural": natural, "perturbed": perturbed, "window": window,
                        "event": [cands[i].span[0] - window[0], cands[i].span[1] - window[0]],
                        "delta": edit.delta, "magnitude": edit.magnitude})
    return out


def rounded(x):
    """Times to 0.1 ms for the manifest (the alignments' grid is 1/16 ms; nobody needs more)."""
    if isinstance(x, float):
        return round(x, 4)
    if isinstance(x, dict):
        return {k: rounded(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [rounded(v) for v in x]
    return x


def write_pairs(out_dir: Path, pairs: list[dict], mode: str) -> Path:
    clips = out_dir / "clips"
    clips.mkdir(parents=True, exist_ok=True)
    manifest = out_dir / "manifest.jsonl"
    with manifest.open("w") as f:
        for p in pairs:
            files = {}
            for side in ("natural", "perturbed"):
                rel = f"clips/{p['pair_id']}.{side}.json"
                (out_dir / rel).write_text(json.dumps(conversation_to_json(p[side])))
                files[side] = rel
            entry = {"pair_id": p["pair_id"], "type": p["type"], **files, "source": p["source"],
                     "window_s": rounded(p["window"]), "natural_duration_s": rounded(p["natural"].duration),
                     "perturbed_duration_s": rounded(p["perturbed"].duration),
                     "event_s": rounded(p["event"]), "magnitude": rounded(p["magnitude"]),
                     "generator": "blind_pairs"}
            if p["type"] == "hold_instead_of_shift":
                entry["hold_removal"] = mode
            f.write(json.dumps(entry) + "\n")
    return manifest


def build(swb: str, split: str, per_type: int, seed: int, mode: str, out_dir: Path) -> tuple[Path, dict]:
    ids = conversation_ids(swb, split)
    order = [ids[i] for i in np.random.default_rng(seed).permutation(len(ids))]
    counts = {t: 0 for t in TYPES}
    pairs = []
    bar = tqdm(order, desc=f"blind pairs ({mode})", unit="conv")
    for conv_id in bar:
        if all(counts[t] >= per_type for t in TYPES):
            break
        conv = load_conversation(swb, conv_id)
        rng = np.random.default_rng([seed, zlib.crc32(conv_id.encode())])
        wanted = {t: per_type - counts[t] for t in TYPES}
        for p in conversation_pairs(conv, rng, mode, wanted):
            counts[p["type"]] += 1
            p["source"] = conv.source
            p["pair_id"] = f"{p['type']}-{counts[p['type']]:03d}"
            pairs.append(p)
        bar.set_postfix({t.split("_")[0][:5]: n for t, n in counts.items()})
    bar.close()
    manifest = write_pairs(out_dir, pairs, mode)
    read_pairs_manifest(manifest)  # reads back as the scorers will
    return manifest, counts


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--swb", required=True, help="Switchboard root (splits/, swb_ms98_transcriptions/)")
    p.add_argument("--split", default="val")
    p.add_argument("--per-type", type=int, default=80)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--hold-removal", choices=("mute", "excise"), default="excise")
    p.add_argument("--out", required=True, type=Path)
    args = p.parse_args(argv)
    root = Path(args.swb)
    if not (root / TRANSCRIPTS_DIR).is_dir():
        print(f"error: {root} is not a Switchboard MS-98 directory (no {TRANSCRIPTS_DIR}/)", file=sys.stderr)
        return 2
    try:
        manifest, counts = build(str(root), args.split, args.per_type, args.seed, args.hold_removal, args.out)
    except CorpusError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{manifest}: " + ", ".join(f"{t} {n}" for t, n in counts.items()))
    short = [t for t, n in counts.items() if n < args.per_type]
    if short:
        print(f"warning: fewer than {args.per_type} pairs of {', '.join(short)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
