"""When listeners backchannel, measured against the speaker's speech: the reference a system's
backchannels are held against.

A listener's backchannel starts at some *offset* from the end of the speaker's inter-pausal unit:
negative while the speaker is still speaking (time left to the IPU's end), positive in the pause
after it (time since the IPU ended). Over a corpus, the onsets per offset bin divided by the
seconds of the speaker's turns spent at that offset give a rate per second, bin by bin: inside an
IPU, in the first 200 ms of a pause, 1 s into it, and so on. For any speaker's speech these rates
then say how many backchannels the corpus's listeners would give and at which offsets, which
accounts for how much pause time the speech offers (a monologue with long pauses invites more
backchannels than one without).

Only the speaker's turns count (turntaking.events: the listener's backchannels are their short
IPUs inside the other's turn), and only offsets inside a turn: a turn's last silence, where the
floor may change, is not a pause.

Fitted on Switchboard's training conversations by `python -m analysis backchannel-timing
--corpus switchboard DIR` and stored as a small JSON table in the package (derived counts only).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from turntaking.events import Events, EventParams
from turntaking.segment import Segment

BIN_S = 0.2
BEFORE_END_S = 3.0  # offsets below -3 s share one bin: well inside an IPU
AFTER_END_S = 2.0  # offsets of 2 s and more share one bin: a long pause
N_BEFORE = int(round(BEFORE_END_S / BIN_S))
N_AFTER = int(round(AFTER_END_S / BIN_S))
N_BINS = 1 + N_BEFORE + N_AFTER + 1
TIMING_FILE = "data/switchboard_backchannel_timing.json"


def offset_bin(offset: float) -> int:
    """The bin of an onset's offset from the speaker's IPU end (s): 0 below -3 s, then 0.2 s bins,
    the last from +2 s on.

    >>> [offset_bin(x) for x in (-5.0, -0.1, 0.0, 0.3, 2.5)]
    [0, 15, 16, 17, 26]
    """
    if offset < -BEFORE_END_S:
        return 0
    if offset >= AFTER_END_S:
        return N_BINS - 1
    # the small epsilon keeps an offset of exactly -0.2 s in [-0.2, 0) despite binary fractions
    return 1 + N_BEFORE + int(np.floor(offset / BIN_S + 1e-9))


def bin_labels() -> list[str]:
    """Each bin's offset range, for tables and figures.

    >>> labels = bin_labels()
    >>> len(labels), labels[0], labels[15], labels[16], labels[-1]
    (27, '< -3.0', '[-0.2, +0.0)', '[+0.0, +0.2)', '>= +2.0')
    """
    inner = [f"[{(k - N_BEFORE) * BIN_S:+.1f}, {(k - N_BEFORE + 1) * BIN_S:+.1f})" for k in range(N_BEFORE + N_AFTER)]
    return [f"< {-BEFORE_END_S:+.1f}", *inner, f">= {AFTER_END_S:+.1f}"]


def turn_ipus(ipus: list[Segment], turn: Segment) -> list[Segment]:
    """The IPUs lying within the turn.

    >>> turn_ipus([(0, 1), (1.5, 2), (3, 4)], turn=(0, 2))
    [(0, 1), (1.5, 2)]
    """
    return [seg for seg in ipus if seg[0] >= turn[0] - 1e-6 and seg[1] <= turn[1] + 1e-6]


def _spread(length: float, bins: int) -> np.ndarray:
    """A stretch of `length` s over `bins` bins of BIN_S from its near end, the rest in one more."""
    inner = np.clip(length - BIN_S * np.arange(bins), 0.0, BIN_S)
    return np.append(inner, max(0.0, length - bins * BIN_S))


def exposure_s(ipus: list[Segment], turn: Segment) -> np.ndarray:
    """Seconds of the turn spent in each offset bin: inside its IPUs by the time left to the IPU's
    end, in the pauses between them by the time since the last one ended.

    IPUs of 1 s and 0.5 s around a 0.5 s pause: 0.2 s in each inner bin they reach, 2 s in all.

    >>> seconds = exposure_s([(0, 1), (1.5, 2)], turn=(0, 2))
    >>> float(seconds.sum()), seconds[11:19].round(2).tolist()  # bins [-1.0, -0.8) to [+0.4, +0.6)
    (2.0, [0.2, 0.2, 0.3, 0.4, 0.4, 0.2, 0.2, 0.1])
    """
    seconds = np.zeros(N_BINS)
    inside = turn_ipus(ipus, turn)
    for i, (start, end) in enumerate(inside):
        seconds[:N_BEFORE + 1] += _spread(end - start, N_BEFORE)[::-1]  # [-(k+1) W, -k W): time left
        if i + 1 < len(inside):
            seconds[N_BEFORE + 1:] += _spread(inside[i + 1][0] - end, N_AFTER)
    return seconds


def _offset(onset: float, inside: list[Segment]) -> float | None:
    if not inside or onset < inside[0][0] or onset >= inside[-1][1]:
        return None
    for start, end in inside:
        if start <= onset < end:
            return onset - end
    return onset - max(end for _, end in inside if end <= onset)


def onset_offset(onset: float, ipus: list[Segment], turn: Segment) -> float | None:
    """The onset's offset from the end of the speaker's IPU it falls in (negative) or follows
    (positive); None outside the turn's IPUs and pauses.

    >>> [None if x is None else round(x, 3) for x in
    ...  (onset_offset(t, [(0, 1), (1.5, 2)], turn=(0, 2)) for t in (0.9, 1.2, 2.5))]
    [-0.1, 0.2, None]
    """
    return _offset(onset, turn_ipus(ipus, turn))


def onset_counts(onsets, ipus: list[Segment], turn: Segment) -> tuple[np.ndarray, int]:
    """(onsets per offset bin, how many fell outside the turn).

    >>> counts, outside = onset_counts([0.9, 1.2, 2.5], [(0, 1), (1.5, 2)], turn=(0, 2))
    >>> np.flatnonzero(counts).tolist(), outside  # bins of -0.1 s and +0.2 s; 2.5 s is past the turn
    ([15, 17], 1)
    """
    counts, outside = np.zeros(N_BINS), 0
    inside = turn_ipus(ipus, turn)
    for onset in onsets:
        offset = _offset(onset, inside)
        if offset is None:
            outside += 1
        else:
            counts[offset_bin(offset)] += 1
    return counts, outside


@dataclass(frozen=True)
class BackchannelTiming:
    """Listener backchannel onsets and the speaker's turn seconds, per offset bin."""

    onsets: tuple[float, ...]
    exposure_s: tuple[float, ...]
    conversations: int
    source: str
    params: dict

    def rates(self) -> np.ndarray:
        """Backchannel onsets per second of the speaker's turn at each offset:
        rate_b = onsets_b / exposure_b (0 where there is no exposure).

        >>> onsets, exposure = np.zeros(N_BINS), np.zeros(N_BINS)
        >>> onsets[15], exposure[15], exposure[16] = 1.0, 0.4, 0.2
        >>> BackchannelTiming(tuple(onsets), tuple(exposure), 1, "toy", {}).rates()[14:18].tolist()
        [0.0, 2.5, 0.0, 0.0]
        """
        exposure = np.asarray(self.exposure_s)
        return np.divide(self.onsets, exposure, out=np.zeros(N_BINS), where=exposure > 0)

    def expected_counts(self, ipus: list[Segment], turn: Segment) -> np.ndarray:
        """How many backchannels these listeners would start in each bin of this speaker's turn:
        rate_b * exposure_b of the turn.

        >>> onsets, exposure = np.zeros(N_BINS), np.zeros(N_BINS)
        >>> onsets[15], exposure[15] = 1.0, 0.4  # 2.5 per s in the last 0.2 s of an IPU
        >>> timing = BackchannelTiming(tuple(onsets), tuple(exposure), 1, "toy", {})
        >>> float(timing.expected_counts([(0, 1)], turn=(0, 1)).sum())  # one IPU: 0.2 s there
        0.5
        """
        return self.rates() * exposure_s(ipus, turn)

    def as_dict(self) -> dict:
        return {"bin_s": BIN_S, "before_end_s": BEFORE_END_S, "after_end_s": AFTER_END_S, "bins": bin_labels(),
                "onsets": list(self.onsets), "exposure_s": [round(x, 3) for x in self.exposure_s],
                "conversations": self.conversations, "source": self.source, "params": self.params}

    @classmethod
    def from_dict(cls, data: dict) -> "BackchannelTiming":
        if data.get("bins") != bin_labels():
            raise ValueError("the backchannel timing table has other offset bins than this code; rebuild it "
                             "with `python -m analysis backchannel-timing --corpus switchboard DIR`")
        return cls(tuple(data["onsets"]), tuple(data["exposure_s"]), data["conversations"], data["source"],
                   data["params"])


def fit_backchannel_timing(events: list[Events], source: str, params: EventParams = EventParams()) -> BackchannelTiming:
    """Each side's backchannels inside the other's turns, binned by offset, over the conversations.

    B's "yeah" starts 2 s before the end of A's 0-3 s IPU; exposure: A's 3 s turn and B's 1.5 s.

    >>> from turntaking.activity import Conversation, Word
    >>> from turntaking.events import detect_events
    >>> conv = Conversation(8.0, ([(0, 3)], [(1, 1.3), (3.5, 5)]),
    ...                     words=([Word(0, 3, "so")], [Word(1, 1.3, "yeah"), Word(3.5, 5, "okay so")]))
    >>> timing = fit_backchannel_timing([detect_events(conv)], source="toy")
    >>> [bin_labels()[b] for b in np.flatnonzero(timing.onsets)], sum(timing.exposure_s)
    (['[-2.0, -1.8)'], 4.5)
    """
    onsets, exposure = np.zeros(N_BINS), np.zeros(N_BINS)
    for conversation in events:
        for listener in (0, 1):
            speaker = 1 - listener
            own_backchannels = set(conversation.backchannels[speaker])
            speech = [seg for seg in conversation.ipus[speaker] if seg not in own_backchannels]
            starts = [start for start, _ in conversation.backchannels[listener]]
            for turn in conversation.turns[speaker]:
                exposure += exposure_s(speech, turn)
                onsets += onset_counts([t for t in starts if turn[0] <= t < turn[1]], speech, turn)[0]
    return BackchannelTiming(tuple(float(x) for x in onsets), tuple(float(x) for x in exposure), len(events), source,
                             params.as_dict())


def save_backchannel_timing(timing: BackchannelTiming, path=None) -> Path:
    path = Path(path) if path else Path(__file__).parent / TIMING_FILE
    path.write_text(json.dumps(timing.as_dict(), indent=1) + "\n")
    return path


def switchboard_backchannel_timing() -> BackchannelTiming:
    """The packaged table: Switchboard's training conversations."""
    return BackchannelTiming.from_dict(json.loads(resources.files("turntaking").joinpath(TIMING_FILE).read_text()))
