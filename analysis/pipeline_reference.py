"""Switchboard measured the way a session is: the like-with-like reference of the statistics view.

The packaged Switchboard reference (`turntaking.reference`) comes from word alignments: a side
speaks exactly where its words are, and a backchannel is a listed word. A session is measured from
its recording (Silero voice activity, its boundary lags undone, Whisper words, backchannels from
the listener's behaviour). This reference renders Switchboard validation conversations at their
own timings in the demo's voices (`analysis.switchboard_renderings`) and measures them through
that same pipeline, so a system and this reference differ by the system, not by the measurement.

    python -m analysis reference --corpus switchboard DIR --through-pipeline [--conversations 40 --seconds 120]
"""

from __future__ import annotations

from pathlib import Path

from tqdm import tqdm

from analysis.switchboard_renderings import VOICE_PAIRS, measured_conversation
from speech.models import WHISPER_TINY_EN
from speech.silero_lags import CORRECTION, LAGS_BY_SNR
from turntaking.activity import conversation_from_json
from turntaking.boundary_lags import lags_of
from turntaking.events import EventParams
from turntaking.listener_backchannels import ListenerRule
from turntaking.stats import STATISTICS_VERSION, conversation_statistics, corpus_statistics
from turntaking.switchboard import conversation_ids

PIPELINE_REFERENCE_NAME = "Switchboard, session pipeline"


def session_pipeline_statistics(row: dict, params: EventParams = EventParams()) -> dict:
    """A rendered conversation's statistics exactly as a session's are computed."""
    conv = conversation_from_json(row["vad+asr"], source=row["conversation"])
    conv.words_from = "asr"
    return conversation_statistics(conv, params, include_events=False, lags=lags_of(conv))


def build_pipeline_reference(root, work, conversations: int = 40, seconds: float = 120.0,
                             params: EventParams = EventParams(), progress: bool = True) -> dict:
    """The reference table (`corpus_statistics`' form) of the first `conversations` validation
    conversations' first `seconds`, rendered in the demo's voices (kept in `work`), with how it
    was made."""
    pair = VOICE_PAIRS["demo"]
    ids = conversation_ids(root, "val")[:conversations]
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    rows = [measured_conversation(root, conv_id, seconds, pair, work)
            for conv_id in tqdm(ids, desc="conversations", unit="conv", disable=not progress)]
    table = corpus_statistics([session_pipeline_statistics(row, params) for row in rows], name=PIPELINE_REFERENCE_NAME)
    # The same conversations from their word alignments: what the measurement alone changes.
    words = corpus_statistics([conversation_statistics(conversation_from_json(row["words"]), params, include_events=False)
                               for row in rows], name="the same conversations from their words")
    table.update({
        "splits": ["val"],
        "statistics_version": STATISTICS_VERSION,
        "source": (f"Switchboard-1 validation conversations ({len(ids)}, their first {seconds:g} s) rendered at "
                   f"their MS-98 word timings by {pair.label}, measured as a session is"),
        "measurement": {
            "voice_activity": "Silero VAD (speech/silero.py settings)",
            "boundary_correction": {"method": CORRECTION, "lags_by_snr": [list(level) for level in LAGS_BY_SNR]},
            "asr": WHISPER_TINY_EN.name,
            "backchannels": ListenerRule().as_dict(),
        },
        "same_conversations_from_words": {key: words[key] for key in ("per_minute", "percent", "floor_transfer_offset")},
        "conversation_ids": [f"sw{i}" for i in ids],
        "seconds": seconds,
        "voices": pair.label,
        "command": (f"python -m analysis reference --corpus switchboard DIR --through-pipeline "
                    f"--conversations {conversations} --seconds {seconds:g}"),
    })
    return table
