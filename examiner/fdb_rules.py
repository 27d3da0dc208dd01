"""Full-Duplex-Bench v1/v1.5's scoring rules, one function each, as its evaluation scripts apply
them (github.com/DanielLin94144/Full-Duplex-Bench, v1_v1.5/evaluation/, read at d7336bd).

Written from the rules, not copied; every threshold carries the name the scripts give it.

- Take-over (`eval_pause_handling.py`, `eval_smooth_turn_taking.py`, `eval_user_interruption.py`):
  the whole `output.json`, no window. No words: no take-over. Else the span from the first word's
  start to the last word's end (its start when the end is null) is the turn's duration; a turn
  shorter than 1 s (`turn_duration_threshold`) with at most 3 words (`turn_num_words_threshold`)
  is not a take-over, anything else is.
- Latency: first word start minus the user's turn end (`turn_taking.json` timestamp[0]) or the
  interruption's end (`interrupt.json` timestamp[1]), negative values counted as 0, averaged over
  take-over examples only.
- Backchannel (`eval_backchannel.py`): Silero segments of `output.wav`; a segment longer than
  3 s (`time_threshold`) is a take-over and ends the scan; every shorter segment before it counts
  as a backchannel, and sets the clip's take-over by its words (more than 3: 1; shorter than 1 s
  with at most 2: 0; else 1; the last segment decides). Frequency = backchannels / clip seconds.
  JSD: backchannels counted into 0.2 s bins (`window_size`), + 1e-10 (`epsilon`), normalised,
  against the ground truth linearly interpolated to the same length; scipy's Jensen-Shannon
  distance (natural log); a clip without backchannels scores 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from turntaking.segment import Segment

# scipy is imported where it is used: its modules take about a second, which most commands never need.

TURN_DURATION_THRESHOLD_S = 1.0  # turn_duration_threshold
TURN_NUM_WORDS_THRESHOLD = 3  # turn_num_words_threshold
BACKCHANNEL_SEGMENT_MAX_S = 3.0  # time_threshold: a longer output segment is a turn, not a backchannel
BACKCHANNEL_MAX_WORDS = 3  # more words in a segment: a take-over
BACKCHANNEL_SHORT_S = 1.0  # a segment shorter than this with at most 2 words is a backchannel
BACKCHANNEL_SHORT_MAX_WORDS = 2
WINDOW_S = 0.2  # window_size of the backchannel histogram
EPSILON = 1e-10
NO_BACKCHANNEL_JSD = 1.0  # FDB's score for a clip with no backchannel


@dataclass(frozen=True)
class TimedWord:
    text: str
    start: float | None  # FDB's chunks may carry null times
    end: float | None


def words_of_output_json(data: dict) -> list[TimedWord]:
    """The words of an FDB `output.json`: {"text", "chunks": [{"text", "timestamp": [s, e]}]}.

    >>> words_of_output_json({"text": "hi there", "chunks": [{"text": "hi", "timestamp": [0.5, 0.8]},
    ...                                                      {"text": "there", "timestamp": [0.9, None]}]})
    [TimedWord(text='hi', start=0.5, end=0.8), TimedWord(text='there', start=0.9, end=None)]
    """
    chunks = data.get("chunks")
    if not isinstance(chunks, list):
        raise ValueError("output.json has no 'chunks' list")
    words = []
    for chunk in chunks:
        start, end = chunk["timestamp"]
        words.append(TimedWord(str(chunk.get("text", "")), None if start is None else float(start),
                               None if end is None else float(end)))
    return words


@dataclass(frozen=True)
class Takeover:
    tor: int  # 1: the system took the turn
    duration_s: float | None  # first word start to last word end; None without words
    words: int
    first_word_s: float | None


def takeover(words: list[TimedWord]) -> Takeover:
    """FDB's take-over decision over all words of one output: no take-over when the words span
    under 1 s and number at most 3.

    >>> takeover([TimedWord("mm", 1.0, 1.3)]).tor  # 0.3 s, one word
    0
    >>> takeover([TimedWord("well", 1.0, 1.3), TimedWord("I", 1.4, 1.5), TimedWord("think", 1.6, 2.4)])
    Takeover(tor=1, duration_s=1.4, words=3, first_word_s=1.0)
    """
    if not words:
        return Takeover(0, None, 0, None)
    first = words[0].start
    # eval_pause_handling.py falls back to the last word's start when its end is null (the other
    # two scripts would fail there); the fallback is used for all three.
    last = words[-1].end if words[-1].end is not None else words[-1].start
    duration = last - first
    short = duration < TURN_DURATION_THRESHOLD_S and len(words) <= TURN_NUM_WORDS_THRESHOLD
    return Takeover(0 if short else 1, duration, len(words), first)


def latency_s(decision: Takeover, user_end_s: float) -> float | None:
    """First word start after the user's end, negative counted as 0; None when no take-over:
    max(0, first word start - user end).

    >>> decision = Takeover(tor=1, duration_s=1.4, words=3, first_word_s=1.0)
    >>> latency_s(decision, user_end_s=0.6), latency_s(decision, user_end_s=1.2)
    (0.4, 0.0)
    >>> latency_s(Takeover(0, None, 0, None), user_end_s=0.6) is None
    True
    """
    if not decision.tor:
        return None
    return max(0.0, decision.first_word_s - user_end_s)


def mean_or_none(values) -> float | None:
    """The mean as FDB's scripts take it (sum / len, in order: the same float to the last bit).

    >>> mean_or_none([1.0, None, 2.0]), mean_or_none([None])  # None values are left out
    (1.5, None)
    """
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def bootstrap_interval(values, confidence: float = 0.95, resamples: int = 2000) -> list[float] | None:
    """Percentile bootstrap interval of the mean over examples (scipy.stats.bootstrap, seeded); None
    for fewer than two values; a point when all are equal.

    >>> bootstrap_interval([0, 1, 1, 1])  # resamples range from one 0 in four to no 0
    [0.25, 1.0]
    >>> bootstrap_interval([1.0]) is None, bootstrap_interval([1, 1])
    (True, [1.0, 1.0])
    """
    from scipy.stats import bootstrap
    values = np.asarray([v for v in values if v is not None], dtype=float)
    if len(values) < 2:
        return None
    if np.all(values == values[0]):
        return [float(values[0]), float(values[0])]
    result = bootstrap((values,), np.mean, confidence_level=confidence, n_resamples=resamples, method="percentile",
                       rng=np.random.default_rng(0))
    return [float(result.confidence_interval.low), float(result.confidence_interval.high)]


def words_in_segment(words: list[TimedWord], start: float, end: float) -> list[str]:
    """The words eval_backchannel.py assigns to the speech segment [start, end]: inside it, or
    running over its end or its start (a null start skips a word; a null end skips it when it
    starts before the segment's end, else counts as the start).

    >>> words = [TimedWord("yeah", 1.0, 1.3), TimedWord("so", 2.8, 3.2), TimedWord("um", None, None)]
    >>> words_in_segment(words, 0.9, 1.5), words_in_segment(words, 2.0, 3.0), words_in_segment(words, 3.0, 4.0)
    (['yeah'], ['so'], ['so'])
    """
    found = []
    for word in words:
        w_start, w_end = word.start, word.end
        if w_start is None or (w_end is None and w_start < end):
            continue
        if w_end is None:
            w_end = w_start
        inside = w_start >= start and w_end <= end
        over_end = w_start <= end and w_end > end
        over_start = w_start <= start and w_end > start
        if inside or over_end or over_start:
            found.append(word.text)
    return found


@dataclass(frozen=True)
class BackchannelClip:
    tor: int
    backchannels: tuple[Segment, ...]  # the segments counted as backchannels (s)
    frequency_per_s: float
    jsd: float | None  # None: no reference distribution for this clip


def backchannel_decision(segments, words: list[TimedWord]) -> tuple[int, list[Segment]]:
    """(take-over, backchannel segments) from the output's speech segments, FDB's scan.

    A 0.4 s "mm" (a backchannel), a 1.5 s one-word segment (counted, yet take-over 1), then a 4 s
    segment: a turn, which ends the scan before the last segment.

    >>> backchannel_decision([(1.0, 1.4), (5.0, 6.5), (8.0, 12.0), (13.0, 13.5)],
    ...                      [TimedWord("mm", 1.0, 1.3), TimedWord("uh", 5.0, 5.2)])
    (1, [Segment(start=1.0, end=1.4), Segment(start=5.0, end=6.5)])
    """
    tor, backchannels = 0, []
    for start, end in segments:
        duration = end - start
        if duration > BACKCHANNEL_SEGMENT_MAX_S:  # the system is speaking a turn: the scan stops here
            tor = 1
            break
        n_words = len(words_in_segment(words, start, end))
        if n_words > BACKCHANNEL_MAX_WORDS:
            tor = 1
        elif duration < BACKCHANNEL_SHORT_S and n_words <= BACKCHANNEL_SHORT_MAX_WORDS:
            tor = 0
        else:
            tor = 1
        backchannels.append(Segment(start, end))  # counted whatever its words say, as FDB does
    return tor, backchannels


def backchannel_histogram(backchannels, clip_s: float) -> np.ndarray:
    """Backchannels per 0.2 s bin (each counted in every bin from its start's to its end's),
    + epsilon, normalised.

    >>> backchannel_histogram([(0.1, 0.3)], clip_s=1.0).round(3)  # 6 bins; the segment covers 2
    array([0.5, 0.5, 0. , 0. , 0. , 0. ])
    """
    counts = np.zeros(int(clip_s / WINDOW_S) + 1)
    for start, end in backchannels:
        first, last = int(start / WINDOW_S), int(end / WINDOW_S)
        counts[first:min(last, len(counts) - 1) + 1] += 1
    counts = counts + EPSILON
    return counts / counts.sum()


def backchannel_jsd(histogram: np.ndarray, reference) -> float:
    """Jensen-Shannon distance of the histogram to the reference, the reference linearly
    interpolated (and extrapolated) onto the histogram's length.

    JSD = sqrt((KL(p || m) + KL(q || m)) / 2), m = (p + q) / 2, natural log.

    >>> round(backchannel_jsd(np.array([0.5, 0.5]), [1.0, 0.0]), 4)
    0.4645
    >>> backchannel_jsd(np.array([0.5, 0.5]), [0.5, 0.0, 0.5])  # read at 0 and 1: [0.5, 0.5]
    0.0
    """
    from scipy.interpolate import interp1d
    from scipy.spatial.distance import jensenshannon
    reference = np.asarray(reference, dtype=float)
    resized = interp1d(np.linspace(0, 1, len(reference)), reference, kind="linear",
                       fill_value="extrapolate")(np.linspace(0, 1, len(histogram)))
    # interpolating between a zero bin and a full one can leave -1e-18, and one negative bin makes
    # the distance infinite (seen on a monologue's reference): a share is never below zero
    return float(jensenshannon(histogram, np.clip(resized, 0.0, None)))


def backchannel_clip(segments, words: list[TimedWord], clip_s: float, reference=None) -> BackchannelClip:
    """One clip's backchannel scores: take-over and backchannels (`backchannel_decision`),
    frequency = backchannels / clip seconds, and the JSD to `reference` (1 without backchannels).

    >>> backchannel_clip([(0.1, 0.3)], [], clip_s=2.0)
    BackchannelClip(tor=0, backchannels=(Segment(start=0.1, end=0.3),), frequency_per_s=0.5, jsd=None)
    >>> backchannel_clip([], [], clip_s=2.0, reference=[1.0, 0.0]).jsd
    1.0
    """
    tor, backchannels = backchannel_decision(segments, words)
    if reference is None:
        jsd = None
    elif not backchannels:
        jsd = NO_BACKCHANNEL_JSD
    else:
        jsd = backchannel_jsd(backchannel_histogram(backchannels, clip_s), reference)
    return BackchannelClip(tor, tuple(backchannels), len(backchannels) / clip_s, jsd)
