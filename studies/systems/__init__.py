"""Dialogue systems behind one interface (studies.systems.base.DialogueSystem); their kinds, each
with its settings and class, are listed in studies.systems.kinds.

    system = make_system("cascaded", config, on_event=...)
    system.start(topic)
    every 20 ms: system.receive(mic_block); out = system.send()
    system.close()
"""

from __future__ import annotations

from studies.systems.base import DialogueSystem, SystemError_
from studies.systems.events import EventKind, SystemEvent
from studies.systems.kinds import KINDS, SystemKind, SystemSpec, system_kind, system_spec


def make_system(kind: str, config: dict | None = None, **kwargs) -> DialogueSystem:
    """A system of `kind` for one call; SystemError_ for an unknown kind or a bad config."""
    return system_spec(kind, dict(config or {})).build(**kwargs)


__all__ = ["KINDS", "DialogueSystem", "EventKind", "SystemError_", "SystemEvent", "SystemKind", "SystemSpec",
           "make_system", "system_kind", "system_spec"]
