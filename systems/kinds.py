"""Every kind of dialogue system a study can name, in one place: its name, its settings, its class,
and where it runs. Everything that lists or checks system kinds (study files, the participant
pages, the demo build, `python -m studies call` and `serve-realtime`) reads KINDS.

    kind = system_kind("cascaded")
    settings = kind.parse({"barge_in": "yield"})     # a CascadedSettings; SystemError_ if bad
    system = kind.build(config, components=...)      # a CascadedSystem

A call gets its system as a `SystemSpec` (`system_spec(name, config)`): the kind looked up and the
config parsed once, the parsed settings handed to the system it builds.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from systems.base import DialogueSystem, SystemError_
from systems.cascade_backchannel import CascadeBackchannel, CascadeBackchannelSettings
from systems.cascaded import CascadedSettings, CascadedSystem
from systems.moshi_client import MoshiClient, MoshiSettings
from systems.pipecat_client import PipecatClient, PipecatSettings
from systems.predictive import PredictiveSettings, PredictiveSystem
from systems.realtime_client import RealtimeClient, RealtimeSettings, free_calls
from systems.settings import SystemSettings


@dataclass(frozen=True)
class SystemKind:
    name: str  # what a study file writes as a system's `kind`
    description: str
    settings: type[SystemSettings]  # the `config` mapping, parsed
    system: type[DialogueSystem]  # built with the config (its models load when it is built)
    # Runs in this process on the cascade's models, which calls (and a server's calls) share.
    embedded: bool
    servable: bool  # `python -m studies serve-realtime` serves it over the OpenAI Realtime protocol
    aliases: tuple[str, ...] = ()  # other names rows in a database may carry
    # A remote kind whose servers say how many more calls they take (config -> int, or None when
    # they do not say): participants beyond wait in line as for the embedded kinds' call slots.
    free_calls: Callable[[dict], int | None] | None = None

    def parse(self, config: dict) -> SystemSettings:
        """`config` as this kind's settings; SystemError_ naming the kind and the problem (one line)."""
        try:
            return self.settings.from_config(config)
        except SystemError_ as e:
            raise SystemError_(f"{self.name} system: {e}") from None

    def build(self, config: dict, **kwargs) -> DialogueSystem:
        """A system of this kind for one call (`components`: the loaded stages,
        systems.stages.CascadeStages, for embedded kinds); a bad config is refused naming its
        kind, before any model loads."""
        return SystemSpec(self, dict(config), self.parse(config)).build(**kwargs)


@dataclass(frozen=True)
class SystemSpec:
    """A study's system as its calls need it: the kind, the config as the study file wrote it,
    and that config parsed into the kind's settings, which the system is built with."""

    kind: SystemKind
    config: dict
    settings: SystemSettings

    def build(self, **kwargs) -> DialogueSystem:
        """A system for one call (`components`: the loaded stages, systems.stages.CascadeStages, for embedded kinds)."""
        return self.kind.system(dict(self.config), settings=self.settings, **kwargs)


KINDS = (
    SystemKind("cascaded", "Silero VAD endpointing -> faster-whisper -> a chat LLM -> Piper, one after another",
               CascadedSettings, CascadedSystem, embedded=True, servable=True),
    SystemKind("cascade-backchannel", "the cascade with timers: ends a turn after a fixed silence, yields when "
               "talked over, plays a backchannel clip on a pause timer",
               CascadeBackchannelSettings, CascadeBackchannel, embedded=True, servable=True,
               # its former names: study files and database rows (the demo study's kind) that carry them
               aliases=("full-duplex-baseline", "full-duplex")),
    SystemKind("predictive", "full-duplex on the cascade's models: listens while it speaks, takes the turn when the "
               "turn-taking judge and the words predict a turn end (speculative reply, an opener), backchannels "
               "where the judge predicts one, yields to interruptions but not to backchannels or background voices",
               PredictiveSettings, PredictiveSystem, embedded=True, servable=True),
    SystemKind("moshi", "a Moshi server over its binary WebSocket protocol",
               MoshiSettings, MoshiClient, embedded=False, servable=False),
    SystemKind("realtime", "an OpenAI-Realtime-compatible server (server VAD; several servers share the calls)",
               RealtimeSettings, RealtimeClient, embedded=False, servable=False, free_calls=free_calls),
    SystemKind("pipecat", "a pipecat bot over WebRTC (its SmallWebRTCTransport's offer endpoint; the bot decides turns)",
               PipecatSettings, PipecatClient, embedded=False, servable=False),
)
KIND_NAMES = tuple(kind.name for kind in KINDS)
SERVABLE_KIND_NAMES = tuple(kind.name for kind in KINDS if kind.servable)
SERVABLE_KIND_ALIASES = tuple(alias for kind in KINDS if kind.servable for alias in kind.aliases)
_BY_NAME = {name: kind for kind in KINDS for name in (kind.name, *kind.aliases)}


def system_kind(name: str) -> SystemKind:
    """The kind called `name` (or one of its aliases); SystemError_ listing the known kinds."""
    kind = _BY_NAME.get(name)
    if kind is None:
        raise SystemError_(f"unknown dialogue system kind {name!r} (known: {', '.join(KIND_NAMES)})")
    return kind


def system_spec(name: str, config: dict) -> SystemSpec:
    """The system of kind `name` with `config`: looked up and parsed once per process for each
    config (a study's systems are read from the database at every call); SystemError_ for an
    unknown kind or a bad config."""
    try:
        key = json.dumps(config, sort_keys=True)
    except (TypeError, ValueError):  # not JSON (a config made in code): parsed, not remembered
        kind = system_kind(name)
        return SystemSpec(kind, dict(config), kind.parse(config))
    return _parsed(name, key)


@lru_cache(maxsize=256)
def _parsed(name: str, config_json: str) -> SystemSpec:
    kind, config = system_kind(name), json.loads(config_json)
    return SystemSpec(kind, config, kind.parse(config))
