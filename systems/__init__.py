"""The dialogue systems, behind one interface (systems.base.DialogueSystem); their kinds, each
with its settings and class, are listed in systems.kinds.

    system = make_system("cascaded", config, on_event=...)
    system.start(topic)
    every 20 ms: system.receive(mic_block); out = system.send()
    system.close()

Where things are:
- the stages, one protocol each (systems.stages): speech_detection, recognition,
  language_models, voice; the reply worker every embedded system shares (reply_worker,
  reply_prompts);
- the embedded kinds composed from them (what they share: embedded): cascaded,
  cascade_backchannel, predictive (its policies: turn_end_cues, overlap_policy, lexical_completion);
- the clients of systems researchers run themselves: moshi_client, realtime_client (both on
  streaming), pipecat_client, and the LLM endpoint (language_models.EndpointLLM); their keys
  (api_keys);
- what every kind shares: settings (typed, parsed once), events (typed), kinds (the registry),
  models (the packaged model files).
"""

from __future__ import annotations

from systems.base import DialogueSystem, SystemError_
from systems.events import EventKind, SystemEvent
from systems.kinds import KINDS, SystemKind, SystemSpec, system_kind, system_spec


def make_system(kind: str, config: dict | None = None, **kwargs) -> DialogueSystem:
    """A system of `kind` for one call; SystemError_ for an unknown kind or a bad config."""
    return system_spec(kind, dict(config or {})).build(**kwargs)


__all__ = ["KINDS", "DialogueSystem", "EventKind", "SystemError_", "SystemEvent", "SystemKind", "SystemSpec",
           "make_system", "system_kind", "system_spec"]
