"""The human-human reference: corpus statistics of Switchboard, shown next to each system.

Built once by `python -m analysis reference --corpus switchboard DIR` from the train and
validation conversations' MS-98 word alignments, and stored as a small JSON table in the package
(derived numbers only; no corpus data). Statistics measured from audio differ from these by
measurement alone (docs/pipeline-bias.md; the pipeline reference measures them as a session). A table built by other code than the statistics in use
(`turntaking.stats.STATISTICS_VERSION`) is refused like one built with other event parameters.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from tqdm import tqdm

from turntaking.events import EventParams
from turntaking.stats import STATISTICS_VERSION, conversation_statistics, corpus_statistics
from turntaking.switchboard import conversation_ids, load_conversation

REFERENCE_FILE = "data/switchboard_reference.json"
# The same conversations measured as a session is (analysis.pipeline_reference builds it).
PIPELINE_REFERENCE_FILE = "data/switchboard_pipeline_reference.json"


def switchboard_corpus_statistics(
    root, ids: list[str], params: EventParams = EventParams(), progress: bool = True, name: str = "Switchboard"
) -> dict:
    stats = [
        conversation_statistics(load_conversation(root, conv_id), params, include_events=False)
        for conv_id in tqdm(ids, desc="conversations", unit="conv", disable=not progress)
    ]
    return corpus_statistics(stats, name=name)


def build_switchboard_reference(
    root, splits=("train", "val"), params: EventParams = EventParams(), progress: bool = True
) -> dict:
    ids = [i for split in splits for i in conversation_ids(root, split)]
    table = switchboard_corpus_statistics(root, ids, params, progress=progress)
    table["splits"] = list(splits)
    table["statistics_version"] = STATISTICS_VERSION
    table["source"] = "Switchboard-1, ISIP MS-98 word alignments (voice activity = word intervals)"
    # Said in the table: built before this, "mm-hmm" and "mmhmm" were different phrases.
    table["backchannel_matching"] = "words and list in turntaking.events.backchannel_form"
    return table


def save_reference(table: dict, path=None, file: str = REFERENCE_FILE) -> Path:
    path = Path(path) if path else Path(__file__).parent / file
    path.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    return path


class ReferenceMismatch(ValueError):
    """The reference was built with other event parameters than the ones in use."""


def switchboard_reference(params: EventParams = EventParams(), file: str = REFERENCE_FILE) -> dict:
    """The packaged Switchboard reference table (`file`: the word-based one, or
    `PIPELINE_REFERENCE_FILE`), refused unless it was built with `params` (statistics found with
    other thresholds are not comparable)."""
    table = json.loads(resources.files("turntaking").joinpath(file).read_text())
    command = table.get("command", "python -m analysis reference --corpus switchboard DIR")
    if table.get("params") != params.as_dict():
        raise ReferenceMismatch(
            f"the packaged Switchboard reference was built with event parameters {table.get('params')}, "
            f"not {params.as_dict()}; rebuild it with `{command}` "
            "and the same --ipu-silence / --backchannel-list")
    if table.get("statistics_version") != STATISTICS_VERSION:
        raise ReferenceMismatch(
            f"the packaged Switchboard reference was built by statistics version {table.get('statistics_version')}, "
            f"not {STATISTICS_VERSION}; rebuild it with `{command}`")
    return table
