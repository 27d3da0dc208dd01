"""Two voice-activity tracks from an RTTM diarization file (e.g. a diarizer's output).

Read with pyannote.database's RTTM loader. The two speakers with the most speech become the
two tracks, the one who speaks first being A. More than two speakers with speech is an error
unless the two to use are named (`speakers=("spk1", "spk2")`).
"""

from __future__ import annotations

from pathlib import Path

from turntaking.segment import Segment


class RttmError(ValueError):
    """An RTTM file that cannot give two speakers; the message names the file and the problem."""


def load_rttm_speakers(path, uri: str | None = None) -> dict[str, list[Segment]]:
    """Speaker label -> merged speech segments (s) of one recording of an RTTM file.

    A file with several recordings (uris) needs `uri`, e.g. the audio file's stem.
    """
    from pyannote.database.util import load_rttm

    path = Path(path)
    if not path.is_file():
        raise RttmError(f"RTTM file not found: {path}")
    try:
        annotations = load_rttm(str(path))
    except Exception as exc:  # pandas raises several types for malformed text
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise RttmError(f"{path} is not a valid RTTM file: {reason}") from None
    annotations = {u: a for u, a in annotations.items() if len(a) > 0}
    if not annotations:
        raise RttmError(f"{path} has no SPEAKER lines")
    if len(annotations) == 1:
        annotation = next(iter(annotations.values()))
    elif uri is not None and uri in annotations:
        annotation = annotations[uri]
    else:
        raise RttmError(
            f"{path} holds {len(annotations)} recordings ({', '.join(sorted(map(str, annotations)))}); "
            f"none is named {uri!r}: name the RTTM's recording like the audio file"
        )
    return {
        str(label): [Segment(float(s.start), float(s.end)) for s in annotation.label_timeline(label).support()]
        for label in annotation.labels()
    }


def two_tracks(speakers: dict[str, list[Segment]], chosen=None, source: str = "RTTM"):
    """((segments_A, segments_B), (label_A, label_B)): the two speakers to analyse."""
    speaking = {label: segs for label, segs in speakers.items() if sum(e - s for s, e in segs) > 0}
    if chosen is not None:
        chosen = [str(c) for c in chosen]
        missing = [c for c in chosen if c not in speakers]
        if len(chosen) != 2 or missing:
            raise RttmError(
                f"{source}: pick exactly two of its speakers ({', '.join(sorted(speakers))}); "
                f"not found: {', '.join(missing) or '-'}"
            )
        labels = chosen
    elif len(speaking) > 2:
        ranked = sorted(speaking, key=lambda k: -sum(e - s for s, e in speaking[k]))
        amounts = ", ".join(f"{k} {sum(e - s for s, e in speaking[k]):.1f} s" for k in ranked)
        raise RttmError(
            f"{source} has {len(speaking)} speakers with speech ({amounts}); a two-party analysis needs "
            "two: pick them (speakers=(A, B))"
        )
    else:
        labels = sorted(speaking, key=lambda k: -sum(e - s for s, e in speaking[k]))
        if not labels:
            raise RttmError(f"{source} has no speech")
    labels = sorted(labels, key=lambda k: speakers[k][0][0] if speakers[k] else float("inf"))
    tracks = [speakers[k] for k in labels] + [[] for _ in range(2 - len(labels))]
    names = tuple(labels) + tuple(f"speaker {i + 1}" for i in range(len(labels), 2))
    return (tracks[0], tracks[1]), names
