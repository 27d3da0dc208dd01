"""Dialogue systems behind one interface (studies.systems.base.DialogueSystem).

    system = make_system("cascaded", config, on_event=...)
    system.start(topic)
    every 20 ms: system.receive(mic_block); out = system.send()
    system.close()
"""

from __future__ import annotations

from studies.systems.base import DialogueSystem, SystemError_, SystemEvent
from studies.systems.cascaded import CascadedSystem
from studies.systems.fullduplex_baseline import FullDuplexBaseline
from studies.systems.moshi_client import MoshiClient
from studies.systems.realtime_client import RealtimeClient


def system_class(kind: str) -> type[DialogueSystem]:
    """The class for a study's system kind (imported on demand: each pulls in its own models)."""
    if kind == "cascaded":

        return CascadedSystem
    if kind in ("full-duplex-baseline", "full-duplex"):  # the demo study calls it "full-duplex"

        return FullDuplexBaseline
    if kind == "moshi":

        return MoshiClient
    if kind == "realtime":

        return RealtimeClient
    raise SystemError_(f"unknown dialogue system kind {kind!r} (known: cascaded, full-duplex-baseline, moshi, realtime)")


def make_system(kind: str, config: dict | None = None, **kwargs) -> DialogueSystem:
    return system_class(kind)(dict(config or {}), **kwargs)


__all__ = ["DialogueSystem", "SystemError_", "SystemEvent", "make_system", "system_class"]
