"""Words with times for each speaker, from faster-whisper's model, transcribing only where they speak.

Each track's speech regions (its voice activity, padded a little) are cut out and joined, in
time order, into pieces of at most 7.5 s; a longer region is a piece of its own. Whisper's
encoder normally always sees 30 s; like whisper.cpp's reduced audio context we give it only a
window that holds the piece (3 to 8 s, or 16 or 30 s). On this machine an 8 s window costs a
third of a 30 s one per second of audio (the attention matrices fit in cache), and the
decoder's cross-attention shrinks too.

Pieces of the same window size are transcribed in batches: encode, greedy decoding without
timestamp tokens, then word times from the cross-attention alignment (`align`, as faster-whisper
does for `word_timestamps`). Two batches run at once, one core each: small matrices use one
core better than two. Every word's time is mapped back to the recording through the region it
falls in. Silence is never transcribed, which is both faster and avoids Whisper's
hallucinations in silence.

Greedy decoding sometimes loops ("right. right. right. ..."), mostly on short words side by
side. A piece whose text runs to a cap set by its duration, or puts more words in a region than
its time can hold, is transcribed again a region at a time; a single region that loops keeps
its words up to the loop.

Tried and not kept: a prompt spelling backchannels ("Mm-hmm. Uh-huh. Yeah. Right.
Okay."), as the `predictive` system reads speech over its own with. On 12 two-track recordings of
the examiner's voices (a speaker's 96 sentences, the other's 96 backchannels of 11 kinds in the
pauses) it kept 69 backchannels as backchannels against 62, word error rate on the sentences 6.6 %
against 6.8 %; but it writes a cough as "Mm-hmm." (12 of 12 renderings; unprompted "You"), which
would count a cough as a backchannel here. Most of the lost backchannels are not misheard but
mis-placed or repeated ("yeah" of the region before, "oh okay okay").

The default model is the packaged Whisper tiny.en (speech/models.py); `model` may name a local
CTranslate2 directory or a Hugging Face id (downloaded when online).
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from threadpoolctl import threadpool_limits

from turntaking.activity import Word
from turntaking.segment import Segment, merge_segments
from speech.cpus import usable_cpus
from speech.models import whisper_model_location

SAMPLE_RATE = 16000
WINDOWS_S = (3, 4, 5, 6, 7, 8, 16, 30)  # encoder windows; a piece goes in the smallest that holds it
PACK_WINDOW_S = 8  # short regions are packed to fill windows of this size
WINDOW_MARGIN_S = 0.5  # silence kept at a window's end, so the last word is not cut
MAX_WORDS_PER_S = 5  # more words than this (+ 3) in a region: a loop
TOKENS_PER_S = 7  # a cap on a piece's text (+ 6 tokens): fast speech is ~4 words, ~5-6 tokens, a second


@dataclass(frozen=True)
class AsrParams:
    pad_s: float = 0.1  # audio kept around each speech region (0.2: 11% slower, same word error rate)
    beam_size: int = 1  # greedy decoding: 2-3x faster than 5, same words on clear speech
    # A slight penalty on tokens already said: fewer greedy loops, so fewer pieces decoded to
    # their cap and redone (1.05: 10% faster, word error rate 0.5-1 point lower; 1.2: 7 points higher).
    repetition_penalty: float = 1.05
    language: str = "en"
    batch_size: int = 32  # pieces decoded together
    encode_batch: int = 4  # pieces encoded (and aligned) together
    workers: int = 2  # batches transcribed at once, one thread each


@lru_cache(maxsize=4)
def load_whisper(model: str | None = None, cpu_threads: int = 2, workers: int = 1):
    """faster-whisper's `WhisperModel`, int8 on CPU: `workers` calls may run at once, each on
    `cpu_threads` threads."""
    from faster_whisper import WhisperModel

    return WhisperModel(whisper_model_location(model), device="cpu", compute_type="int8",
                        cpu_threads=cpu_threads, num_workers=workers)


def clean_word(text: str) -> str:
    """Lower case, punctuation stripped (apostrophes and hyphens inside words kept: "don't",
    "mm-hmm", as Switchboard spells them). Backchannels are matched in one spelling whatever
    this keeps (`turntaking.backchannel_words.backchannel_form`)."""
    return re.sub(r"[^\w'\-]+", "", text.lower()).strip("'-")


def pack_regions(regions, capacity_s: float) -> list[list[Segment]]:
    """Consecutive regions (start, end), in time order, grouped so that each group's total
    duration fits `capacity_s`; a region longer than the capacity is a group of its own.

    (Packing by size instead, first-fit decreasing, fills windows a little better but mixes
    distant sentences, and Whisper tiny's word error rate went from 17-22% to 30-35% on the
    benchmark's dialogue.)"""
    groups: list[list] = []
    used = 0.0
    for start, end in sorted(regions):
        if not groups or used + (end - start) > capacity_s:
            groups.append([])
            used = 0.0
        groups[-1].append(Segment(start, end))
        used += end - start
    return groups


def window_for(duration_s: float) -> int:
    """The smallest encoder window (s) that holds `duration_s` of audio and the end margin."""
    return next((w for w in WINDOWS_S if duration_s <= w - WINDOW_MARGIN_S), WINDOWS_S[-1])


@dataclass
class Piece:
    """Regions of one track joined end to end, for one encoder window."""

    track: int
    regions: list  # (start, end) in the recording (s), in the order joined
    audio: np.ndarray
    window_s: int
    offsets: np.ndarray = field(init=False)  # where each region starts in the joined audio (s)

    def __post_init__(self):
        lengths = [end - start for start, end in self.regions]
        self.offsets = np.concatenate([[0.0], np.cumsum(lengths)[:-1]])

    @staticmethod
    def join(track: int, signal: np.ndarray, regions) -> "Piece":
        audio = np.concatenate([signal[int(round(start * SAMPLE_RATE)):int(round(end * SAMPLE_RATE))]
                                for start, end in regions]).astype(np.float32)
        return Piece(track, list(regions), audio, window_for(len(audio) / SAMPLE_RATE))

    def region_at(self, t: float) -> int:
        """The region a time in the joined audio belongs to."""
        return max(int(np.searchsorted(self.offsets, t, side="right")) - 1, 0)

    def recording_time(self, t: float, region: int) -> float:
        """A time in the joined audio -> the recording's time, kept inside `region`."""
        start, end = self.regions[region]
        return min(max(start + t - self.offsets[region], start), end)


def speech_pieces(track: int, signal: np.ndarray, segments, params: AsrParams) -> list[Piece]:
    """The track's padded speech regions packed into pieces (a region longer than the largest
    window is cut into parts that fit)."""
    duration = len(signal) / SAMPLE_RATE
    longest = WINDOWS_S[-1] - WINDOW_MARGIN_S
    regions = []
    for start, end in merge_segments([(max(0.0, s - params.pad_s), min(duration, e + params.pad_s))
                                          for s, e in segments]):
        parts = int(np.ceil((end - start) / longest))
        edges = np.linspace(start, end, parts + 1)
        regions += [(float(a), float(b)) for a, b in zip(edges[:-1], edges[1:]) if b > a]
    return [Piece.join(track, signal, group) for group in pack_regions(regions, PACK_WINDOW_S - WINDOW_MARGIN_S)]


def window_features(whisper, audio: np.ndarray, window_s: int) -> np.ndarray:
    """Log-mel features (80, 100 * window_s) of `audio` zero-padded to a `window_s` encoder window."""
    padded = np.zeros(window_s * SAMPLE_RATE, dtype=np.float32)
    padded[:len(audio)] = audio
    return whisper.feature_extractor(padded)[:, :window_s * 100]


def _transcribe_batch(whisper, tokenizer, pieces: list[Piece], params: AsrParams):
    """For each piece: (start, end, text) of each word in the piece's own time (s), and whether
    the decoding looped."""
    import ctranslate2

    features = [window_features(whisper, piece.audio, piece.window_s) for piece in pieces]
    # The encoder is fastest on a few windows at a time, the decoder on many sequences at once.
    step = params.encode_batch
    encoded = np.concatenate([
        np.asarray(whisper.model.encode(ctranslate2.StorageView.from_array(np.stack(features[i:i + step]))))
        for i in range(0, len(features), step)])
    prompt = list(tokenizer.sot_sequence) + [tokenizer.no_timestamps]
    cap = int(TOKENS_PER_S * max(len(p.audio) for p in pieces) / SAMPLE_RATE) + 6
    # CTranslate2 4.8's Whisper stops at max_length / 2 new tokens (measured): ask for twice the
    # cap, which is enough whatever the count means, and cut at the cap here.
    results = whisper.model.generate(ctranslate2.StorageView.from_array(encoded), [prompt] * len(pieces),
                                     beam_size=params.beam_size, max_length=2 * (len(prompt) + cap),
                                     repetition_penalty=params.repetition_penalty,
                                     suppress_blank=True, suppress_tokens=[-1])
    tokens = [[t for t in r.sequences_ids[0] if t < tokenizer.eot][:cap] for r in results]
    # Greedy decoding stuck in a loop ("at the park at the park at the...") runs on to the cap.
    # (Not gzip's compression ratio, as faster-whisper uses: people do repeat a sentence.)
    loops = [len(ts) >= cap for ts in tokens]
    tokens = [without_loop(ts) if loop else ts for ts, loop in zip(tokens, loops)]
    words: list[list] = [[] for _ in pieces]
    spoken = [i for i, ts in enumerate(tokens) if ts]
    for first in range(0, len(spoken), step):  # alignment, like encoding, is fastest a few at a time
        some = spoken[first:first + step]
        alignments = whisper.model.align(ctranslate2.StorageView.from_array(encoded[some]), tokenizer.sot_sequence,
                                         [tokens[i] for i in some], [len(pieces[i].audio) // 160 for i in some],
                                         median_filter_width=7)
        for i, alignment in zip(some, alignments):
            words[i] = _timed_words(tokenizer, tokens[i], alignment.alignments)
    # A loop can also stop by itself, its copies aligned onto one region: more words than the
    # region's time can hold is a loop too.
    for i, piece in enumerate(pieces):
        if crowded(piece, words[i]):
            loops[i] = True
            if len(piece.regions) == 1:
                words[i] = words[i][:len(without_loop([w[2].strip().lower() for w in words[i]]))]
    return list(zip(words, loops))


def crowded(piece: "Piece", words) -> bool:
    """Whether a region got more words than anyone says in its time (5 a second, + 3)."""
    counts = np.bincount([piece.region_at((start + end) / 2) for start, end, _ in words],
                         minlength=len(piece.regions))
    return any(count > MAX_WORDS_PER_S * (end - start) + 3 for count, (start, end) in zip(counts, piece.regions))


def without_loop(tokens: list) -> list:
    """The tokens (or words) of a decoding that looped, its repeating tail said once: "right right right
    right" -> "right", "at the park at home let us meet at the park at home let us" -> "at the
    park at home". The longest tail that repeats a unit is cut, after the unit's first copy."""
    n = len(tokens)
    best = n
    for period in range(1, n // 2 + 1):
        start = n  # tokens[start:] repeat with this period
        while start - 1 - period >= 0 and tokens[start - 1] == tokens[start - 1 - period]:
            start -= 1
        if n - start >= period:  # at least one whole repeat after the first copy
            best = min(best, start)
    return tokens[:best]


def _timed_words(tokenizer, tokens: list[int], alignment) -> list[tuple[float, float, str]]:
    """Word start/end times from the token-to-frame alignment path (Whisper's word timestamps)."""
    texts, word_tokens = tokenizer.split_to_word_tokens(tokens + [tokenizer.eot])
    if len(word_tokens) <= 1:
        return []
    path = np.array(alignment)
    text_index, time_index = path[:, 0], path[:, 1]
    jumps = np.pad(np.diff(text_index), (1, 0), constant_values=1).astype(bool)
    jump_times = time_index[jumps] / 50.0  # the alignment's frames are 20 ms encoder positions
    boundaries = np.pad(np.cumsum([len(t) for t in word_tokens[:-1]]), (1, 0))
    starts, ends = jump_times[boundaries[:-1]], jump_times[boundaries[1:]]
    return [(float(s), float(e), text) for s, e, text in zip(starts, ends, texts[:-1])]


def transcribe_tracks(signals, activity, model: str | None = None, params: AsrParams = AsrParams()) -> list[list[Word]]:
    """Words spoken in each (signal, segments) pair, in the recording's time base."""
    from faster_whisper.tokenizer import Tokenizer

    signals = [np.asarray(signal, dtype=np.float32) for signal in signals]
    pieces = [p for k, (signal, segs) in enumerate(zip(signals, activity)) for p in speech_pieces(k, signal, segs, params)]
    words: list[list[Word]] = [[] for _ in signals]
    if not pieces:
        return words
    workers = min(params.workers, usable_cpus())  # one thread a worker, no more than the CPUs given
    whisper = load_whisper(model, 1, workers)
    tokenizer = Tokenizer(whisper.hf_tokenizer, whisper.model.is_multilingual, task="transcribe",
                          language=params.language)
    speech = [np.array(merge_segments(segs), dtype=float).reshape(-1, 2) for segs in activity]
    # One BLAS thread per worker (the log-mel features), as in the VAD: two workers that each ask
    # OpenBLAS for both cores only oversubscribe them.
    with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(workers) as pool:
        retry = []
        for piece, (piece_words, loop) in _transcribed(pool, whisper, tokenizer, pieces, params):
            if loop and len(piece.regions) > 1:
                retry += [Piece.join(piece.track, signals[piece.track], [region]) for region in piece.regions]
            else:
                words[piece.track] += _recording_words(piece, piece_words, speech[piece.track])
        # A looped piece again, a region at a time: one short region alone loops much more rarely.
        for piece, (piece_words, _) in _transcribed(pool, whisper, tokenizer, retry, params):
            words[piece.track] += _recording_words(piece, piece_words, speech[piece.track])
    return [sorted(ws, key=lambda w: (w.start, w.end)) for ws in words]


def _transcribed(pool, whisper, tokenizer, pieces: list[Piece], params: AsrParams):
    """(piece, (words, looped)) for every piece, in batches of one window size."""
    batches = []
    for window in reversed(WINDOWS_S):  # the longest first, so that the two workers end together
        same = [p for p in pieces if p.window_s == window]
        batches += [same[i:i + params.batch_size] for i in range(0, len(same), params.batch_size)]
    done = pool.map(lambda batch: _transcribe_batch(whisper, tokenizer, batch, params), batches)
    for batch, results in zip(batches, done):
        yield from zip(batch, results)


def _recording_words(piece: Piece, piece_words, speech: np.ndarray) -> list[Word]:
    words = []
    for start, end, raw in piece_words:
        text = clean_word(raw)
        if not text:
            continue
        region = piece.region_at((start + end) / 2)  # both ends through the same region
        start, end = piece.recording_time(start, region), piece.recording_time(end, region)
        # Whisper's word edges are rough (~0.1-0.3 s): keep each word inside the speech
        # segment nearest to it, so words agree with the voice activity.
        lo, hi = _nearest(speech, (start + end) / 2)
        start = min(max(start, lo), hi)
        end = min(max(end, start), hi)
        words.append(Word(round(start, 3), round(end, 3), text))
    return words


def _nearest(segments: np.ndarray, t: float) -> Segment:
    """The segment (rows of sorted, disjoint start/end) containing time `t`, else the closest one."""
    k = int(np.searchsorted(segments[:, 0], t, side="right"))  # segments[k - 1] starts at or before t
    candidates = [i for i in (k - 1, k) if 0 <= i < len(segments)]
    best = min(candidates, key=lambda i: max(segments[i, 0] - t, t - segments[i, 1], 0.0))
    return Segment(float(segments[best, 0]), float(segments[best, 1]))


def transcribe_channels(samples, sample_rate: int, activity, mixture=None, model: str | None = None,
                        params: AsrParams = AsrParams()):
    """(words_A, words_B): each speaker's words, from their own channel of `samples` (2, n), or,
    for a mono recording (`samples` None), from the `mixture` during their voice activity."""
    if sample_rate != SAMPLE_RATE:
        raise ValueError(f"transcription needs {SAMPLE_RATE} Hz audio, got {sample_rate} Hz")
    if samples is None and mixture is None:
        raise ValueError("transcription needs the channels or the mono mixture")
    signals = [samples[k] if samples is not None else mixture for k in range(2)]
    words = transcribe_tracks(signals, activity[:2], model, params)
    return words[0], words[1]
