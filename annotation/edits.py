"""Timeline edits of a two-channel dialogue, applied to voice activity (and later to audio).

A perturbation is a short list of edit operations in the coordinates of the *natural clip*
(seconds from the clip start), applied in order, each in the coordinates left by the previous:

    {"op": "insert_silence", "at": t, "duration": d}          both channels: d s of silence at t
    {"op": "delete", "start": a, "end": b}                     both channels: remove [a, b)
    {"op": "move", "channel": k, "start": a, "end": b, "shift": s}   channel k's [a, b) moved by s
    {"op": "silence", "channel": k, "start": a, "end": b}      channel k's speech in [a, b) removed
    {"op": "paste", "channel": k, "at": t, "source_start": a, "source_end": b}
                                        channel k gets the speech of the *source conversation's*
                                        channel k in [a, b) (absolute times) placed at t

The same list drives the audio renderer, so the edit metadata says exactly what moved, by how
much and where.
"""

from __future__ import annotations

from turntaking.activity import Conversation, Segment, Word
from turntaking.segment import merge_segments


def crop_segments(segments: list[Segment], start: float, end: float, offset: float = 0.0) -> list[Segment]:
    """The parts of `segments` inside [start, end), shifted by `offset - start`."""
    out = []
    for s, e in segments:
        s2, e2 = max(s, start), min(e, end)
        if e2 > s2:
            out.append((s2 - start + offset, e2 - start + offset))
    return out


def crop_words(words: list[Word], start: float, end: float, offset: float = 0.0) -> list[Word]:
    return [
        Word(w.start - start + offset, w.end - start + offset, w.text)
        for w in words
        if w.start >= start and w.end <= end
    ]


def crop(conv: Conversation, start: float, end: float) -> Conversation:
    activity = tuple(crop_segments(conv.activity[k], start, end) for k in (0, 1))
    words = None if conv.words is None else tuple(crop_words(conv.words[k], start, end) for k in (0, 1))
    meta = dict(conv.meta, clip_start=start, clip_end=end)
    return Conversation(end - start, activity, words, conv.speakers, conv.source, meta)


def _shift_after(segments: list[Segment], at: float, by: float) -> list[Segment]:
    """Shift what lies after `at` by `by`, splitting a segment that straddles `at`."""
    out = []
    for s, e in segments:
        if e <= at:
            out.append((s, e))
        elif s >= at:
            out.append((s + by, e + by))
        else:
            out += [(s, at), (at + by, e + by)]
    return out


def _shift_words_after(words: list[Word], at: float, by: float) -> list[Word]:
    return [Word(w.start + by, w.end + by, w.text) if w.start >= at else w for w in words]


def apply_edits(clip: Conversation, edits: list[dict], source: Conversation | None = None) -> Conversation:
    """The perturbed clip: `edits` applied to the natural `clip`; `source` serves "paste"."""
    activity = [list(clip.activity[0]), list(clip.activity[1])]
    words = None if clip.words is None else [list(clip.words[0]), list(clip.words[1])]
    duration = clip.duration
    for edit in edits:
        op = edit["op"]
        if op == "insert_silence":
            at, d = edit["at"], edit["duration"]
            activity = [_shift_after(a, at, d) for a in activity]
            if words is not None:
                words = [_shift_words_after(w, at, d) for w in words]
            duration += d
        elif op == "delete":
            a, b = edit["start"], edit["end"]
            activity = [crop_segments(x, 0, a) + crop_segments(x, b, duration, offset=a) for x in activity]
            if words is not None:
                words = [crop_words(w, 0, a) + crop_words(w, b, duration, offset=a) for w in words]
            duration -= b - a
        elif op == "move":
            k, a, b, s = edit["channel"], edit["start"], edit["end"], edit["shift"]
            moved = crop_segments(activity[k], a, b, offset=a + s)
            activity[k] = crop_segments(activity[k], 0, a) + crop_segments(activity[k], b, duration, offset=b) + moved
            if words is not None:
                inside = [w for w in words[k] if a <= w.start and w.end <= b]
                words[k] = [w for w in words[k] if w not in inside] + [
                    Word(w.start + s, w.end + s, w.text) for w in inside
                ]
        elif op == "silence":
            k, a, b = edit["channel"], edit["start"], edit["end"]
            activity[k] = crop_segments(activity[k], 0, a) + crop_segments(activity[k], b, duration, offset=b)
            if words is not None:
                words[k] = [w for w in words[k] if not (a <= w.start and w.end <= b)]
        elif op == "paste":
            if source is None:
                raise ValueError("a 'paste' edit needs the source conversation")
            k, t, a, b = edit["channel"], edit["at"], edit["source_start"], edit["source_end"]
            activity[k] = activity[k] + crop_segments(source.activity[k], a, b, offset=t)
            if words is not None and source.words is not None:
                words[k] = words[k] + crop_words(source.words[k], a, b, offset=t)
        else:
            raise ValueError(f"unknown edit operation {op!r}")
    activity = tuple(merge_segments([(max(0.0, s), min(duration, e)) for s, e in a]) for a in activity)
    return Conversation(
        duration,
        activity,
        None if words is None else tuple(words),
        clip.speakers,
        clip.source,
        dict(clip.meta, edits=edits),
    )
