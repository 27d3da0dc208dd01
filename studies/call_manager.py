"""The calls running in this server process (one per participant at most), and the loading of the
embedded systems' models, which calls share.

While calls run, the cyclic garbage collector is kept off the process's long-lived objects (the
loaded models, the web app): a full collection walks them all holding the interpreter lock, which
stops every call's audio at once (25-480 ms a full collection in a test process holding the
cascade's models, measured with gc.callbacks). So each call's start freezes what exists
(gc.freeze: constant time; frozen objects are left out of collections, not kept alive), and the
end of the last call unfreezes and collects, when a pause delays no call. In a process never
without a call, the cyclic garbage of ended calls waits for the next moment without one.
"""

from __future__ import annotations

import gc
import json
import logging
import threading
from pathlib import Path

from sqlmodel import select

from storage.db import session_scope
from storage.models import DialogueSystem, Study
from studies import call_quality
from studies.call_slots import WaitingRoom, call_slots_setting
from studies.preparation import Preparation
from studies.sessions import finish_session, mark_open_sessions_incomplete, renew_lease
from systems import SystemError_, SystemSpec, system_spec
from systems.cascaded import CascadedSettings
from systems.stages import LOAD_STEPS, load_stages

log = logging.getLogger(__name__)


def models_key(settings: CascadedSettings) -> str:
    """The models an embedded system's settings name: systems with the same key share them (an
    embedded kind's settings are the cascade's)."""
    return json.dumps([settings.asr_model, settings.llm, settings.llm_runtime, settings.llm_endpoint,
                       settings.llm_api_model, settings.llm_key_config, settings.llm_timeout_s,
                       settings.tts_voice, settings.threads, settings.llm_compute_type, settings.data_root])


class CallManager:
    """The calls running in this server process, one per participant at most."""

    def __init__(self, engine, data_root: Path, call_slots: int | None = None):
        self.engine = engine
        self.data_root = Path(data_root)
        self.calls: dict[int, object] = {}  # session id -> Call
        # The calls of embedded systems this process carries at once, and the line beyond them
        # (studies.call_slots); `call_slots` None: $TURNTAKING_CALL_SLOTS or 1.5 per core.
        self.waiting_room = WaitingRoom(call_slots_setting(call_slots), admits=self.on_time)
        # A remote system whose servers say how many more calls they take has its own line
        # (SystemKind.free_calls), its slots refreshed from what they say: system id -> room.
        self._remote_rooms: dict[int, WaitingRoom] = {}
        self._remote_systems: dict[int, SystemSpec] = {}  # system id -> the system
        self._slots: dict[int, tuple[WaitingRoom, str]] = {}  # session id -> the room and slot its call holds
        self._preparations: dict[str, Preparation] = {}
        self._lock = threading.Lock()

    def build_system(self, system: SystemSpec):
        """A system for one call; the embedded systems' models are loaded once and shared by calls.
        The check at each call's end is made ready first (once), while no call of this one's runs."""
        call_quality.prepare()
        if system.kind.embedded:
            return system.build(components=self._models(system))
        return system.build()

    def preparation(self, system: SystemSpec) -> Preparation | None:
        """The loading of a system's models, started now if it has not been (None: a system
        whose models run elsewhere, nothing to load here)."""
        if not system.kind.embedded:
            return None
        settings = system.settings
        key = models_key(settings)
        with self._lock:
            prepared = self._preparations.get(key)
            if prepared is None or prepared.status == "failed":  # a failed loading is tried again
                prepared = Preparation(lambda on_step: load_stages(settings, on_step), len(LOAD_STEPS)).start()
                self._preparations[key] = prepared
            return prepared

    def cascade_components(self, config: dict, loaded=None, kind: str = "cascaded"):
        """The models of an embedded system's config, loaded once (or `loaded`, given to share
        models loaded elsewhere); waits for a loading under way."""
        return self._models(system_spec(kind, config), loaded)

    def _models(self, system: SystemSpec, loaded=None):
        if loaded is not None:
            with self._lock:
                self._preparations[models_key(system.settings)] = Preparation.finished(loaded, len(LOAD_STEPS))
            return loaded
        try:
            return self.preparation(system).wait()
        except RuntimeError as e:
            raise SystemError_(f"its models could not be loaded: {e}") from None

    def prepare_all(self) -> None:
        """Start loading the models of every study's systems (at start-up), in the background;
        the log says when each study's systems are ready (or which failed)."""
        with session_scope(self.engine) as session:
            systems = [(study.name, s.name, s.kind, dict(s.config or {}))
                       for s, study in session.exec(select(DialogueSystem, Study).join(Study).order_by(DialogueSystem.id))]
        by_study: dict[str, list[tuple[str, Preparation | None]]] = {}
        for study, name, kind, config in systems:
            try:
                by_study.setdefault(study, []).append((name, self.preparation(system_spec(kind, config))))
            except SystemError_ as e:
                log.warning("study %s: system %s cannot be prepared: %s", study, name, e)
        for study, prepared in by_study.items():
            threading.Thread(target=_log_when_ready, args=(study, prepared), name=f"ready:{study}", daemon=True).start()

    def on_time(self) -> bool:
        """Whether this process's running calls kept real time in their last seconds: a new call
        is admitted only then (studies.server_load; a process behind would make them all late)."""
        return not any(c.status is None and getattr(c, "load", None) is not None and c.load.behind()
                       for c in list(self.calls.values()))

    def leave_lines(self, participant: str) -> None:
        """Take the participant out of every line of this process (they withdrew)."""
        with self._lock:
            rooms = [self.waiting_room, *self._remote_rooms.values()]
        for room in rooms:
            room.leave(participant)

    def active_call_of(self, participant: str):
        return next((c for c in self.calls.values() if c.participant == participant and c.status is None), None)

    def room_for(self, system_id: int, system: SystemSpec) -> WaitingRoom | None:
        """The line a call of this system waits in: the embedded kinds' call slots of this process,
        or the system's own line where its servers say how many more calls they take (refreshed
        now: its slots = this process's calls to it + what the servers still take); None where
        nothing limits the calls (a remote system whose servers do not say)."""
        if system.kind.embedded:
            return self.waiting_room
        if system.kind.free_calls is None:
            return None
        free = system.kind.free_calls(system.config)  # a few short HTTP requests: call it off the event loop
        with self._lock:
            self._remote_systems[system_id] = system
            room = self._remote_rooms.get(system_id)
            if free is None:
                return room  # the servers stopped saying: the ones waiting keep their place
            if room is None:
                room = self._remote_rooms[system_id] = WaitingRoom(1)  # its slots are set just below
        # A granted place counts against the free calls until its call reaches the server, so the
        # servers are never promised more than they said they take.
        room.set_slots(room.calls + free)
        return room

    def room_of_ticket(self, ticket: str) -> WaitingRoom | None:
        """The line holding `ticket`, a remote system's refreshed from its servers (None: no line
        knows it, e.g. it expired)."""
        with self._lock:
            rooms = [(None, self.waiting_room), *self._remote_rooms.items()]
        for system_id, room in rooms:
            if room.participant_of(ticket) is not None:
                if system_id is not None:
                    self.room_for(system_id, self._remote_systems[system_id])
                return room
        return None

    def claim_slot(self, participant: str, room: WaitingRoom | None) -> tuple[WaitingRoom, str] | None:
        """A slot of `room` for the participant's call (None: a call nothing limits); SlotsTaken
        when all are taken and the participant's turn has not come."""
        if room is None:
            return None
        claim = room.claim(participant)
        if claim is None:
            raise SlotsTaken(room.slots)
        return room, claim

    def add_call(self, session_id: int, call) -> None:
        """Register a call that is starting: the objects that exist now stay out of the collector's
        way until no call runs (the module docstring)."""
        with self._lock:
            self.calls[session_id] = call
            gc.freeze()

    def hold_slot(self, session_id: int, slot: tuple[WaitingRoom, str] | None) -> None:
        """The call `session_id` holds `slot` until it ends (finished) or is lost."""
        if slot is not None:
            self._slots[session_id] = slot

    def release_slot(self, slot: tuple[WaitingRoom, str] | None) -> None:
        if slot is not None:
            room, claim = slot
            room.release(claim)

    def heartbeat(self, call) -> bool:
        kept = renew_lease(self.engine, call.session_id)
        if not kept:  # the call stops without finishing (another process closed it): its slot is free
            self.release_slot(self._slots.pop(call.session_id, None))
        return kept

    def sweep(self) -> list[int]:
        """Close the calls of dead processes (expired leases), never one of this process."""
        return mark_open_sessions_incomplete(self.engine, self.data_root, keep=set(self.calls))

    def finished(self, call, status: str) -> None:
        try:
            finish_session(self.engine, call.session_id, status, self.data_root)
        finally:
            with self._lock:  # a call starting meanwhile waits: it freezes after the collection
                self.calls.pop(call.session_id, None)
                # (a call that lost its lease stays listed, stopped: heartbeat)
                if not any(c.status is None for c in self.calls.values()):
                    gc.unfreeze()
                    gc.collect()
            self.release_slot(self._slots.pop(call.session_id, None))


class SlotsTaken(Exception):
    """Every call slot of this process is taken (or reserved for participants ahead in line)."""


def _log_when_ready(study: str, prepared: list[tuple[str, Preparation | None]]) -> None:
    """Wait for the loading of a study's systems, then say in the log that they are ready (a
    system whose models run elsewhere is ready at once), or which could not be loaded."""
    failed = []
    for name, preparation in prepared:
        if preparation is None:
            continue
        try:
            preparation.wait()
        except RuntimeError as e:
            failed.append(f"{name} ({e})")
    names = ", ".join(name for name, _ in prepared)
    if failed:
        log.warning("study %s: systems not ready, models not loaded: %s", study, "; ".join(failed))
    else:
        seconds = max((p.seconds_taken for _, p in prepared if p is not None), default=0.0)
        log.info("study %s: systems ready (%s) after %.1f s", study, names, seconds)
