"""The two Switchboard references shown beside a study's or a recording's turn-taking statistics.

One is measured from Switchboard's word alignments (how Switchboard is usually reported); the
other from the same kind of conversations rendered as speech and measured exactly as a session is
(`turntaking.reference.PIPELINE_REFERENCE_FILE`). Only the second is like with like; their
difference is what the measurement alone does to each figure (docs/pipeline-bias.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from speech.silero_lags import CORRECTION
from turntaking.events import EventParams
from turntaking.reference import PIPELINE_REFERENCE_FILE, REFERENCE_FILE, ReferenceMismatch, switchboard_reference

WORD_REFERENCE = "Switchboard (word alignments)"
PIPELINE_REFERENCE = "Switchboard (session pipeline)"
# Column and series order: the customary one first, then the one measured as the sessions are.
REFERENCE_FILES = {WORD_REFERENCE: REFERENCE_FILE, PIPELINE_REFERENCE: PIPELINE_REFERENCE_FILE}
# Both grey, told apart by shade (and by dash or hatching where the figure draws them).
REFERENCE_COLORS = {WORD_REFERENCE: "#b0b0b0", PIPELINE_REFERENCE: "#5f5f5f"}


@dataclass(frozen=True)
class References:
    tables: dict[str, dict] = field(default_factory=dict)  # label -> reference table, in REFERENCE_FILES order
    refused: dict[str, str] = field(default_factory=dict)  # label -> why it is not shown


def switchboard_references(params: EventParams = EventParams()) -> References:
    """Both packaged Switchboard references; one built with other event parameters or statistics
    code is refused (and says why) while the other is still shown.

    >>> found = switchboard_references()
    >>> list(found.tables) == [WORD_REFERENCE, PIPELINE_REFERENCE], found.refused
    (True, {})
    """
    tables, refused = {}, {}
    for label, file in REFERENCE_FILES.items():
        try:
            tables[label] = switchboard_reference(params, file=file)
        except ReferenceMismatch as exc:
            refused[label] = str(exc)
    return References(tables, refused)


def _ms(seconds) -> str:
    return f"{1000 * seconds:+.0f} ms"


def pipeline_measurement(table: dict) -> str:
    """How the session-pipeline reference was measured, in words.

    >>> pipeline_measurement({"measurement": {"voice_activity": "Silero VAD", "asr": "Whisper",
    ...     "boundary_correction": {"method": "lags undone", "lags_by_snr": [[15.0, -0.04, 0.146], [60.0, -0.034, 0.082]]},
    ...     "backchannels": {"max_s": 1.0}}})
    'voice activity Silero VAD, lags undone (clean speech: onset -34 ms, offset +82 ms; 15 dB of noise: offset +146 ms), ASR words (Whisper), backchannels by the listener rule max_s=1.0'
    """
    m = table.get("measurement", {})
    correction = _correction(m.get("boundary_correction"))
    levels = (m.get("boundary_correction") or {}).get("lags_by_snr") if isinstance(m.get("boundary_correction"), dict) else None
    if levels:
        clean, noisy = levels[-1], next((lvl for lvl in levels if lvl[0] >= 14), levels[0])
        correction += (f" (clean speech: onset {_ms(clean[1])}, offset {_ms(clean[2])}; {noisy[0]:g} dB of noise: "
                       f"offset {_ms(noisy[2])})")
    rule = ", ".join(f"{k}={v}" for k, v in sorted((m.get("backchannels") or {}).items()))
    return (f"voice activity {m.get('voice_activity', '?')}, {correction}, ASR words ({m.get('asr', '?')}), "
            f"backchannels by the listener rule {rule or '?'}")


def reference_notes(found: References, measured_like: str = "the sessions are") -> list[str]:
    """What each shown reference is, which one is like with like (with what is `measured_like`),
    and why any is missing."""
    notes = [f"No {label} column: {why}." for label, why in found.refused.items()]
    pipeline, word = found.tables.get(PIPELINE_REFERENCE), found.tables.get(WORD_REFERENCE)
    if pipeline is not None:
        notes.append(f"{PIPELINE_REFERENCE} is the like-with-like comparison: {pipeline.get('conversations')} "
                     f"Switchboard conversations (the first {pipeline.get('seconds', '?'):g} s of each) rendered as "
                     f"speech by {pipeline.get('voices', '?')} and measured as {measured_like}: "
                     f"{pipeline_measurement(pipeline)}.")
    if word is not None:
        notes.append(f"{WORD_REFERENCE}: {word.get('conversations')} conversations measured from their MS-98 word "
                     f"alignments (voice activity = word intervals), how Switchboard is usually reported; not "
                     f"measured as {measured_like}.")
    if pipeline is not None and word is not None:
        notes.append("The two Switchboard columns differ by sample (the first minutes of a few conversations "
                     "against whole conversations) as well as by measurement" + _measurement_alone(pipeline)
                     + " (docs/pipeline-bias.md).")
    return notes



def _measurement_alone(pipeline: dict) -> str:
    """What the session pipeline alone moves, from the pipeline reference's own conversations.

    >>> _measurement_alone({"per_minute": {"gap": 3.3}, "floor_transfer_offset": {"percentiles_s": {"50": 0.29}},
    ...     "same_conversations_from_words": {"per_minute": {"gap": 3.2}, "floor_transfer_offset": {"percentiles_s": {"50": 0.35}}}})
    ': on the same conversations measured from their words, the median floor-transfer offset is 350 ms (pipeline 290 ms) and gaps 3.20 a minute (pipeline 3.30)'
    """
    words = pipeline.get("same_conversations_from_words")
    if not words:
        return ""
    def median_ms(table):
        return f"{1000 * table['floor_transfer_offset']['percentiles_s']['50']:.0f} ms"
    return (f": on the same conversations measured from their words, the median floor-transfer offset is "
            f"{median_ms(words)} (pipeline {median_ms(pipeline)}) and gaps {words['per_minute']['gap']:.2f} a minute "
            f"(pipeline {pipeline['per_minute']['gap']:.2f})")


def _correction(lags: dict | list | None) -> str:
    """A boundary correction in words: a reference's ({"method", ...}), a session's (one per
    channel, by its noise level), or one for both channels (statistics cached before)."""
    if not lags:
        return "no boundary correction"
    if isinstance(lags, list):
        return CORRECTION
    if "method" in lags:
        return lags["method"]
    return f"boundary correction onset {_ms(lags['onset_s'])}, offset {_ms(lags['offset_s'])}"


def sessions_measurement_note(stats: list[dict], found: References) -> str | None:
    """How the sessions' statistics were measured (boundary correction, backchannels), and a
    warning where the session-pipeline reference was measured otherwise.

    >>> found = References({PIPELINE_REFERENCE: {"measurement": {"boundary_correction": {"method": CORRECTION}}}})
    >>> sessions_measurement_note([{"boundary_correction": None, "backchannels_from": "listed phrases"}], found)
    "Sessions measured with no boundary correction; backchannels from listed phrases. Switchboard (session pipeline) was measured with Silero's boundary lags undone at each channel's noise level: not like with like for these sessions either."
    """
    if not stats:
        return None
    corrections = sorted({_correction(s.get("boundary_correction")) for s in stats})
    evidence = sorted({s.get("backchannels_from") or "(not recorded: cached before it was)" for s in stats})
    note = f"Sessions measured with {' / '.join(corrections)}; backchannels from {' / '.join(evidence)}."
    pipeline = found.tables.get(PIPELINE_REFERENCE)
    if pipeline is not None:
        expected = _correction((pipeline.get("measurement") or {}).get("boundary_correction"))
        if corrections != [expected]:
            note += f" {PIPELINE_REFERENCE} was measured with {expected}: not like with like for these sessions either."
    return note
