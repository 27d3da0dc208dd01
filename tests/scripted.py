"""A scripted two-speaker conversation whose turn-taking events are known exactly.

Timeline (seconds), speaker A = 0, B = 1, duration 20 s:

    A  0.5-2.0 "so i went home", 2.1-3.0 "and slept"  (0.1 s dip: one IPU 0.5-3.0)
    B  3.2-3.6 "uh-huh"            backchannel in A's pause
    A  3.8-6.0 "then i woke up"
    B  5.0-5.4 "yeah"              backchannel overlapping A
    A  6.5-8.0 "you know what i mean"   (pause A 6.0-6.5)
    B  8.6-11.0 "yes i do and i think so too"   (gap 8.0-8.6, B takes the turn)
    A  9.5-10.0 "but wait"         butting-in interruption (ends inside B's IPU)
    B 11.5-13.0 "anyway where was i"     (pause B 11.0-11.5)
    A 12.5-15.0 "let me tell you something now"  floor-taking interruption
    B 16.0-16.4 "okay"             a reply after A's turn ended: not a backchannel

Gaps and pauses leave out the silences next to "uh-huh" (3.0-3.2, 3.6-3.8); Talking Turns' IPU
gaps keep them. Floor transfers: A -> B at 8.6 (+0.6 s), B -> A at 12.5 (-0.5 s, A's floor-taking
interruption), A -> B at 16.0 (+1.0 s); "but wait" (inside B's turn) and the backchannels transfer
nothing.
"""

from __future__ import annotations

from pathlib import Path

from turntaking.activity import Conversation, Word

UTTERANCES = [
    (0, 0.5, 2.0, "so i went home"),
    (0, 2.1, 3.0, "and slept"),
    (1, 3.2, 3.6, "uh-huh"),
    (0, 3.8, 6.0, "then i woke up"),
    (1, 5.0, 5.4, "yeah"),
    (0, 6.5, 8.0, "you know what i mean"),
    (1, 8.6, 11.0, "yes i do and i think so too"),
    (0, 9.5, 10.0, "but wait"),
    (1, 11.5, 13.0, "anyway where was i"),
    (0, 12.5, 15.0, "let me tell you something now"),
    (1, 16.0, 16.4, "okay"),
]
DURATION = 20.0

EXPECTED = {
    "ipus": (
        [(0.5, 3.0), (3.8, 6.0), (6.5, 8.0), (9.5, 10.0), (12.5, 15.0)],
        [(3.2, 3.6), (5.0, 5.4), (8.6, 11.0), (11.5, 13.0), (16.0, 16.4)],
    ),
    "pauses": [(6.0, 6.5, 0), (11.0, 11.5, 1)],
    "gaps": [(8.0, 8.6, 1), (15.0, 16.0, 1)],
    "ipu_pauses": [(6.0, 6.5, 0), (11.0, 11.5, 1)],
    "ipu_gaps": [(3.0, 3.2, 1), (3.6, 3.8, 0), (8.0, 8.6, 1), (15.0, 16.0, 1)],
    # (from speaker, to speaker, offset s)
    "floor_transfers": [(0, 1, 0.6), (1, 0, -0.5), (0, 1, 1.0)],
    "overlaps": [(5.0, 5.4, 1), (9.5, 10.0, 0), (12.5, 13.0, 0)],
    "backchannels": ([], [(3.2, 3.6), (5.0, 5.4)]),
    "turns": ([(0.5, 8.0), (9.5, 10.0), (12.5, 15.0)], [(8.6, 13.0), (16.0, 16.4)]),
    # (start, end of overlap, interrupter, floor_taking)
    "interruptions": [(9.5, 10.0, 0, False), (12.5, 13.0, 0, True)],
    "words": (23, 15),
}


def utterance_words(start: float, end: float, text: str) -> list[Word]:
    """Spread an utterance's words evenly over its interval, edge to edge."""
    tokens = text.split()
    step = (end - start) / len(tokens)
    return [
        Word(round(start + i * step, 6), end if i == len(tokens) - 1 else round(start + (i + 1) * step, 6), t)
        for i, t in enumerate(tokens)
    ]


def scripted_conversation(with_words: bool = True) -> Conversation:
    activity = ([], [])
    words = ([], [])
    for speaker, start, end, text in UTTERANCES:
        activity[speaker].append((start, end))
        words[speaker].extend(utterance_words(start, end, text))
    return Conversation(DURATION, activity, words if with_words else None, source="scripted")


def write_ms98(root: Path, conv_id: str = "4321", utterances=UTTERANCES, duration: float = DURATION) -> Path:
    """Write the utterances as a Switchboard MS-98 conversation (word files with [silence] and
    [noise] tokens between speech) under ROOT in the original layout; returns the conversation dir."""
    conv_dir = root / "swb_ms98_transcriptions" / conv_id[:2] / conv_id
    conv_dir.mkdir(parents=True, exist_ok=True)
    for speaker, side in ((0, "A"), (1, "B")):
        lines, t, n = [], 0.0, 1
        for spk, start, end, text in utterances:
            if spk != speaker:
                continue
            if start > t:
                lines.append(f"sw{conv_id}{side}-ms98-a-{n:04d} {t:.6f} {start:.6f} [silence]")
            n += 1
            for w in utterance_words(start, end, text):
                lines.append(f"sw{conv_id}{side}-ms98-a-{n:04d} {w.start:.6f} {w.end:.6f} {w.text}")
            t = end
        lines.append(f"sw{conv_id}{side}-ms98-a-{n + 1:04d} {t:.6f} {duration - 0.5:.6f} [noise]")
        lines.append(f"sw{conv_id}{side}-ms98-a-{n + 1:04d} {duration - 0.5:.6f} {duration:.6f} [silence]")
        (conv_dir / f"sw{conv_id}{side}-ms98-a-word.text").write_text("\n".join(lines) + "\n")
    return conv_dir


def block_utterances(blocks: int = 12) -> list[tuple[int, float, float, str]]:
    """15 s blocks: A talks, holds 0.6 s, goes on; B answers 0.3 s after A stops (a shift of a
    typical gap) for 3.2 s; A takes the floor back after 0.3 s and B says "yeah" once inside it."""
    out = []
    for i in range(blocks):
        o = 15.0 * i
        out += [(0, o + 0.5, o + 4.0, "well we talked about the weather there"),
                (0, o + 4.6, o + 7.0, "and then we went home"),
                (1, o + 7.3, o + 10.5, "i think that is right for sure"),
                (0, o + 10.8, o + 14.0, "so we did it all again"),
                (1, o + 12.0, o + 12.3, "yeah")]
    return out
