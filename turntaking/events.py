"""Turn-taking events of a two-speaker conversation (Talking Turns, section 3.1).

From each speaker's voice activity:

- IPU: a stretch of one speaker's speech delimited by more than `ipu_silence_s` (200 ms) of
  silence on both sides.
- Silence: no IPU of either speaker. Talking Turns (3.1) calls a silence between IPUs of the
  same speaker a *pause*, between IPUs of different speakers a *gap*, backchannels included:
  kept as `ipu_pauses` / `ipu_gaps` ("ipu_pause" / "ipu_gap" in the statistics). That makes the
  silence before a listener's "yeah" a gap, so `pauses` / `gaps` leave out every silence next to
  a backchannel (a gap is then the silence before a turn change, as in Heldner & Edlund 2010).
  Leading and trailing silence of the recording is neither.
- Overlap: both speakers inside an IPU.
- Backchannel: an isolated listener IPU lying inside the other speaker's turn (needs words).
  From a transcript (`Conversation.words_from` "transcript"): its words together are a phrase of
  the backchannel list, or of at most `backchannel_max_words` words each listed. Words and list
  meet in one spelling (`backchannel_form`), so Switchboard's "uh-huh", an ASR's "uh" "huh" and a
  list's "Uh huh" are one phrase. From an ASR's words ("asr"), which leave most backchannels out,
  by what the listener did: short, the speaker keeping the floor, words not showing speech
  (`turntaking.listener_backchannels`).
- Turn: a speaker's successive non-backchannel IPUs whose in-between is free of the other
  speaker's non-backchannel speech (the paper's "[b_{j-1}, a_j] in SIL", with the listener's
  backchannels not breaking the speaker's turn).
- Interruption: a non-backchannel IPU of k' starting strictly inside a non-backchannel IPU of k;
  *floor-taking* when it outlasts that IPU, *butting-in* otherwise.
- Floor transfer: a turn of one speaker taking the floor from the other's turn; its offset (FTO)
  is the new turn's start minus the previous turn's end (`turntaking.floor_transfer`).

Every event is attributed to one speaker: the speaker holding the floor for a pause, the speaker
taking the turn for a gap, the speaker entering the overlap for an overlap, the interrupter for an
interruption.

`EventParams` is the one object that says how events are found; labels (judge.labels), judge
training, perturbations (annotation), study statistics and views all take it, and the CLIs set it
with `--ipu-silence` / `--backchannel-list` (`add_event_options`). A study sets it in its config
(`events:`), and the Switchboard reference is refused when it was built with other values.

Joining speech regions: four thresholds, decided in four places, on purpose different
- `turntaking.switchboard.DEFAULT_MERGE_GAP_S` = 0.001 s: reading MS-98 word alignments, whose
  adjacent words share boundaries; only rounding is absorbed, so activity = word intervals.
- `EventParams.ipu_silence_s` = 0.2 s: IPUs, pauses and gaps (Talking Turns' definition); every
  event, statistic and judge label uses it.
- `judge.training.TrainOptions.tbu_merge_gap_s` = 0.18 s: only the turnnat-va judge's training
  targets (turn-boundary units, TurnNat eq. 6) join word-level activity this close, so that
  short inter-word gaps of Switchboard do not end units; it is recorded in the checkpoint's
  manifest.
- `naturalness.turnnat_va.NaturalnessParams.merge_gap_s` = 0.0 s: that judge's units at scoring time.
  Recordings reach it through VAD, which already bridges short silences, so nothing more is
  joined; on word-level Switchboard clips this differs from training (0.18 s), and scoring them
  with 0.18 s is no better: pair accuracy 68.5 % vs 68.8 % on the 400 validation pairs
  (judge/checkpoints/MODEL_CARD.md, "What was tried").
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

from turntaking.activity import Conversation, Word
from turntaking.backchannel_words import is_backchannel_phrase, load_backchannel_list
from turntaking.listener_backchannels import ListenerRule, speaker_keeps_floor, words_show_speech
from turntaking.segment import Segment, gaps, merge_segments
from turntaking.floor_transfer import FloorTransfer, floor_transfers


@dataclass(frozen=True)
class EventParams:
    ipu_silence_s: float = 0.2
    backchannel_max_words: int = 2
    backchannel_list: str | None = None  # path of a phrase list; None = packaged default

    def __post_init__(self):
        if not (isinstance(self.ipu_silence_s, (int, float)) and 0 <= self.ipu_silence_s <= MAX_IPU_SILENCE_S):
            raise ValueError(f"ipu_silence_s must be a number of seconds in [0, {MAX_IPU_SILENCE_S:g}], "
                             f"got {self.ipu_silence_s!r}")
        if not (isinstance(self.backchannel_max_words, int) and 1 <= self.backchannel_max_words <= 10):
            raise ValueError(f"backchannel_max_words must be a whole number in [1, 10], got {self.backchannel_max_words!r}")

    def as_dict(self) -> dict:
        return {
            "ipu_silence_s": self.ipu_silence_s,
            "backchannel_max_words": self.backchannel_max_words,
            "backchannel_list": self.backchannel_list or "packaged",
        }

    @classmethod
    def from_dict(cls, data: dict | None) -> "EventParams":
        """From `as_dict`'s form (or a study config's `events:`); unknown keys are an error."""
        data = dict(data or {})
        unknown = sorted(set(data) - set(cls.__dataclass_fields__))
        if unknown:
            raise ValueError(f"unknown event parameter(s) {', '.join(unknown)} "
                             f"(known: {', '.join(cls.__dataclass_fields__)})")
        if data.get("backchannel_list") == "packaged":
            data["backchannel_list"] = None
        return cls(**data)


MAX_IPU_SILENCE_S = 5.0


def add_event_options(parser) -> None:
    """The CLI options that set `EventParams` (analysis, annotation and judge commands)."""
    parser.add_argument("--ipu-silence", type=float, default=EventParams.ipu_silence_s,
                        help=f"IPU-splitting silence, s ({EventParams.ipu_silence_s:g})")
    parser.add_argument("--backchannel-list", help="backchannel phrase list (one a line); default: packaged list")


def event_params_from_options(args) -> EventParams:
    return EventParams(ipu_silence_s=args.ipu_silence, backchannel_list=args.backchannel_list)


@dataclass(frozen=True)
class Event:
    start: float
    end: float
    speaker: int

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class Interruption:
    start: float
    end: float  # end of the overlap with the interrupted IPU
    interrupter: int
    interrupted: int
    floor_taking: bool

    @property
    def speaker(self) -> int:
        return self.interrupter


@dataclass
class Events:
    duration: float
    ipus: tuple[list[Segment], list[Segment]]
    ipu_words: tuple[list[list[Word]], list[list[Word]]] | None
    backchannels: tuple[list[Segment], list[Segment]]
    turns: tuple[list[Segment], list[Segment]]
    pauses: list[Event] = field(default_factory=list)
    gaps: list[Event] = field(default_factory=list)
    overlaps: list[Event] = field(default_factory=list)
    interruptions: list[Interruption] = field(default_factory=list)
    ipu_pauses: list[Event] = field(default_factory=list)  # Talking Turns 3.1: backchannels included
    ipu_gaps: list[Event] = field(default_factory=list)
    floor_transfers: list[FloorTransfer] = field(default_factory=list)


def inter_pausal_units(segments: list[Segment], ipu_silence_s: float) -> list[Segment]:
    """Merge speech separated by at most `ipu_silence_s` of silence into IPUs.

    >>> inter_pausal_units([(0, 1), (1.1, 2), (2.5, 3)], ipu_silence_s=0.2)  # 0.1 s joins, 0.5 s splits
    [Segment(start=0.0, end=2.0), Segment(start=2.5, end=3.0)]
    """
    return merge_segments(segments, gap=ipu_silence_s)


def words_in_segments(words: list[Word], segments: list[Segment]) -> list[list[Word]]:
    """Assign each word to the segment containing its midpoint.

    >>> words = [Word(0, .4, "so"), Word(.5, .9, "well"), Word(2.6, 2.9, "yes")]
    >>> [[w.text for w in ws] for ws in words_in_segments(words, [(0, 1), (2.5, 3)])]
    [['so', 'well'], ['yes']]
    """
    out: list[list[Word]] = [[] for _ in segments]
    j = 0
    for w in words:
        mid = 0.5 * (w.start + w.end)
        while j < len(segments) and segments[j][1] < mid:
            j += 1
        if j < len(segments) and segments[j][0] <= mid <= segments[j][1]:
            out[j].append(w)
    return out


def group_turns(ipus: list[Segment], other_speech: list[Segment]) -> list[Segment]:
    """Group successive IPUs into turns unless the other speaker speaks between them.

    >>> group_turns([(0, 1), (2, 3), (5, 6)], other_speech=[(3.5, 4.5)])  # the other speaks at 3.5
    [Segment(start=0, end=3), Segment(start=5, end=6)]
    """
    turns: list[list[float]] = []
    k = 0
    for start, end in ipus:
        if turns:
            prev_end = turns[-1][1]
            # Skip the other speaker's segments that end before the in-between interval.
            while k < len(other_speech) and other_speech[k][1] <= prev_end:
                k += 1
            interrupted = k < len(other_speech) and other_speech[k][0] < start
            if not interrupted:
                turns[-1][1] = end
                continue
        turns.append([start, end])
    return [Segment(s, e) for s, e in turns]


def _containing(point: float, spans: list[Segment], starts: list[float]) -> Segment | None:
    """The span of sorted, disjoint `spans` with start <= point < end, if any."""
    i = bisect_right(starts, point) - 1
    if i >= 0 and point < spans[i][1]:
        return spans[i]
    return None


def _inside_any(segment: Segment, spans: list[Segment]) -> bool:
    span = _containing(segment[0], spans, [s for s, _ in spans])
    return span is not None and segment[1] <= span[1]


def mutual_silences(ipus: tuple[list[Segment], list[Segment]], duration: float, min_s: float = 0.0) -> list[Segment]:
    """The stretches where neither speaker is inside an IPU, of at least `min_s` s, the leading
    and trailing silences included.

    >>> mutual_silences(([(0, 1), (3, 4)], [(1.5, 2.5)]), duration=5) == [(1.0, 1.5), (2.5, 3.0), (4.0, 5)]
    True
    """
    return gaps(list(ipus[0]) + list(ipus[1]), 0.0, duration, min_s)


def classify_silences(ipus, duration: float) -> tuple[list[Event], list[Event]]:
    """Pauses and gaps: silences with speech on both sides, by who spoke before and after.

    A pauses 1-1.5 s within its own speech; B takes the turn after the 2-2.5 s gap; the trailing
    4-5 s silence is neither.

    >>> classify_silences(([(0, 1), (1.5, 2)], [(2.5, 4)]), duration=5)
    ([Event(start=1.0, end=1.5, speaker=0)], [Event(start=2.0, end=2.5, speaker=1)])
    """
    ends = {k: {e for _, e in ipus[k]} for k in (0, 1)}
    starts = {k: {s for s, _ in ipus[k]} for k in (0, 1)}
    pauses, gaps = [], []
    for s, e in mutual_silences(ipus, duration):
        before = [k for k in (0, 1) if s in ends[k]]
        after = [k for k in (0, 1) if e in starts[k]]
        if not before or not after:  # leading or trailing silence
            continue
        same = [k for k in after if k in before]
        if same:
            pauses.append(Event(s, e, same[0]))
        else:
            gaps.append(Event(s, e, after[0]))
    return pauses, gaps


def away_from_backchannels(silences: list[Event], backchannels) -> list[Event]:
    """The silences that neither follow nor precede a backchannel.

    >>> silences = [Event(1, 1.5, speaker=0), Event(2, 2.5, speaker=1)]
    >>> away_from_backchannels(silences, ([], [(2.5, 2.8)]))  # the second precedes B's backchannel
    [Event(start=1, end=1.5, speaker=0)]
    """
    ends = {e for k in (0, 1) for _, e in backchannels[k]}
    starts = {s for k in (0, 1) for s, _ in backchannels[k]}
    return [ev for ev in silences if ev.start not in ends and ev.end not in starts]


def overlap_events(ipus) -> list[Event]:
    """Overlaps of the two speakers' IPUs, attributed to the speaker whose IPU started later.

    >>> overlap_events(([(0, 2)], [(1.5, 3)]))
    [Event(start=1.5, end=2, speaker=1)]
    """
    out, j = [], 0
    a, b = ipus
    for s0, e0 in a:
        while j < len(b) and b[j][1] <= s0:
            j += 1
        k = j
        while k < len(b) and b[k][0] < e0:
            s1, e1 = b[k]
            start, end = max(s0, s1), min(e0, e1)
            if end > start:
                out.append(Event(start, end, 1 if s1 > s0 else 0))
            k += 1
    return sorted(out, key=lambda ev: ev.start)


def interruption_events(turn_ipus) -> list[Interruption]:
    """Every IPU starting strictly inside the other speaker's IPU (backchannels already left out of
    `turn_ipus`): floor-taking when it outlasts that IPU, butting-in when it ends inside it.

    >>> for i in interruption_events(([(0, 3)], [(1, 2), (2.5, 4)])):
    ...     print(i.start, i.end, i.interrupter, i.floor_taking)
    1 2 1 False
    2.5 3 1 True
    """
    out = []
    for k in (0, 1):
        other = turn_ipus[1 - k]
        other_starts = [s for s, _ in other]
        for s, e in turn_ipus[k]:
            hit = _containing(s, other, other_starts)
            if hit is not None and hit[0] < s:
                out.append(Interruption(s, min(e, hit[1]), k, 1 - k, floor_taking=e > hit[1]))
    return sorted(out, key=lambda ev: ev.start)


def _floor_kept(ipus, candidates, k: int, i: int, rule: ListenerRule) -> bool:
    """Whether speaker 1 - k keeps the floor after listener k's candidate IPU i."""
    later = [s for j, (s, _) in enumerate(ipus[k]) if j > i and j not in candidates[k]]
    speaker = [seg for j, seg in enumerate(ipus[1 - k]) if j not in candidates[1 - k]]
    return speaker_keeps_floor(ipus[k][i], speaker, later[0] if later else float("inf"), rule.min_hold_s)


def detect_events(conv: Conversation, params: EventParams = EventParams(),
                  rule: ListenerRule = ListenerRule()) -> Events:
    """Every event of the conversation (the module's definitions), with `params`; backchannels of
    words an ASR heard by the listener's behaviour (`rule`, `turntaking.listener_backchannels`).

    A speaks 0-3 s (its 0.1 s pause is inside one IPU), B says "yeah" at 1 s (a backchannel: no
    turn, no floor transfer), then takes the turn at 3.5 s after a 0.5 s gap.

    >>> words = ([Word(0, 2, "so"), Word(2.1, 3, "right")], [Word(1, 1.3, "yeah"), Word(3.5, 5, "okay so")])
    >>> conv = Conversation(8.0, ([(0, 2), (2.1, 3)], [(1, 1.3), (3.5, 5)]), words=words)
    >>> events = detect_events(conv)
    >>> (events.ipus, events.backchannels, events.turns) == (  # Segments equal plain (start, end) pairs
    ...     ([(0.0, 3.0)], [(1.0, 1.3), (3.5, 5.0)]), ([], [(1.0, 1.3)]), ([(0.0, 3.0)], [(3.5, 5.0)]))
    True
    >>> events.gaps, [round(t.offset_s, 3) for t in events.floor_transfers]
    ([Event(start=3.0, end=3.5, speaker=1)], [0.5])
    """
    ipus = tuple(inter_pausal_units(conv.activity[k], params.ipu_silence_s) for k in (0, 1))

    ipu_words = None
    candidates: tuple[set[int], set[int]] = (set(), set())
    asr = conv.words is not None and conv.words_from == "asr"
    if conv.words is not None:
        phrases = load_backchannel_list(params.backchannel_list)
        ipu_words = tuple(words_in_segments(conv.words[k], ipus[k]) for k in (0, 1))
        for k in (0, 1):
            for i, ws in enumerate(ipu_words[k]):
                listed = is_backchannel_phrase(ws, phrases, params.backchannel_max_words)
                # Heard by an ASR, a short vocalization is a candidate unless its words show speech.
                heard = asr and ipus[k][i].duration <= rule.max_s and not words_show_speech(ws, phrases, rule)
                if listed or heard:
                    candidates[k].add(i)

    # Two passes: turns without any candidate decide which candidates are backchannels (inside the
    # other speaker's turn); the final turns exclude just the backchannels.
    def without(k, skip):
        return [seg for i, seg in enumerate(ipus[k]) if i not in skip[k]]

    prelim_turns = tuple(group_turns(without(k, candidates), without(1 - k, candidates)) for k in (0, 1))
    bc_index = tuple(
        {i for i in candidates[k] if _inside_any(ipus[k][i], prelim_turns[1 - k])
         and (not asr or _floor_kept(ipus, candidates, k, i, rule))} for k in (0, 1)
    )
    backchannels = tuple([ipus[k][i] for i in sorted(bc_index[k])] for k in (0, 1))
    turn_ipus = tuple(without(k, bc_index) for k in (0, 1))
    turns = tuple(group_turns(turn_ipus[k], turn_ipus[1 - k]) for k in (0, 1))

    ipu_pauses, ipu_gaps = classify_silences(ipus, conv.duration)
    return Events(
        duration=conv.duration,
        ipus=ipus,
        ipu_words=ipu_words,
        backchannels=backchannels,
        turns=turns,
        pauses=away_from_backchannels(ipu_pauses, backchannels),
        gaps=away_from_backchannels(ipu_gaps, backchannels),
        overlaps=overlap_events(ipus),
        interruptions=interruption_events(turn_ipus),
        ipu_pauses=ipu_pauses,
        ipu_gaps=ipu_gaps,
        floor_transfers=floor_transfers(turns),
    )
