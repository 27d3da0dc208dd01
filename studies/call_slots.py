"""How many calls of embedded systems this process carries at once, and the waiting room of the
participants beyond them.

An embedded system (`embedded` in systems/kinds.py: the cascade and the kinds built on its
models) runs on this machine's cores; every call beyond what the cores carry in real time makes
every running call late, the first ones included. So the process carries `slots` such calls, and
further participants wait in line, first come first served:

    room = WaitingRoom(slots=2)
    state = room.join("p-abc", call_s=300)    # TicketState: ticket, place (0 once granted), granted
    room.poll(state.ticket, call_s=300)       # the same, refreshed; polling keeps the ticket alive
    claim = room.claim("p-abc")               # at the call's offer: the granted ticket's slot (or a free one)
    room.release(claim)                       # the call ended: the head of the line is granted

A ticket the page stops polling for `ticket_ttl_s` is dropped (the participant left), and so is a
granted one that no call used within that time: its slot goes to the next in line. The expected
wait is place x mean call length / slots, the mean being the study's session length until calls
of this process have ended, then their measured mean.

The slots are a ceiling; the measurement decides below it: while a call of this process runs late
(its event loop behind, its thread waiting for a CPU: studies.server_load, `admits`), no further
call is admitted and those waiting keep their place, however many slots are free.

The number of slots: `app.py --call-slots N`, else $TURNTAKING_CALL_SLOTS, else 1.5 per core
(three calls of the cascade were measured to run in real time on two cores, again on 7 Dec 2026
with its LLM on one thread: ~0.2 CPU s per second of call, p50 within 2 % of one call's;
benchmarks/bench_concurrent_calls.py), the cores shared among the processes of `app.py --workers N`.
"""

from __future__ import annotations

import math
import os
import secrets
import threading
import time
from dataclasses import dataclass

CALL_SLOTS_ENV = "TURNTAKING_CALL_SLOTS"
CALLS_PER_CORE = 1.5  # 3 calls of the cascade ran in real time on 2 cores
TICKET_TTL_S = 10.0  # the page polls every 2 s: five polls missed means it is gone
MAX_CALL_SLOTS = 10_000


class CallSlotsError(ValueError):
    """A call-slots setting that cannot be used; the message names it."""


def default_call_slots(cores: int | None = None, processes: int = 1) -> int:
    """About 1.5 calls per core, the cores shared among `processes` app processes; at least 1."""
    cores = cores if cores is not None else (os.cpu_count() or 1)
    return max(1, math.floor(CALLS_PER_CORE * cores / max(1, processes)))


def call_slots_setting(given: int | None = None, environ=None) -> int:
    """The number of call slots: `given` (from --call-slots), else $TURNTAKING_CALL_SLOTS, else the
    default for this machine's cores. CallSlotsError for a value that is not a whole number >= 1."""
    environ = os.environ if environ is None else environ
    if given is not None:
        return _checked(given, "--call-slots")
    text = environ.get(CALL_SLOTS_ENV)
    if text is None or not text.strip():
        return default_call_slots()
    try:
        value = int(text.strip())
    except ValueError:
        raise CallSlotsError(f"{CALL_SLOTS_ENV} must be a whole number of calls (1 or more), got {text!r}") from None
    return _checked(value, CALL_SLOTS_ENV)


def _checked(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_CALL_SLOTS:
        raise CallSlotsError(f"{name} must be a whole number of calls from 1 to {MAX_CALL_SLOTS}, got {value!r}")
    return value


@dataclass(frozen=True)
class TicketState:
    """A participant's place in line, as the participant API answers it."""

    ticket: str
    participant: str
    place: int  # 1 = next in line; 0 once granted
    granted: bool
    waited_s: float  # since joining
    expected_wait_s: float  # 0 once granted


@dataclass
class _Ticket:
    participant: str
    joined: float
    seen: float  # the last poll
    granted: bool = False


class WaitingRoom:
    """The call slots of one process and the line of participants waiting for one. Thread-safe
    (calls end in worker threads, requests arrive on the event loop); `clock`: seconds, injectable
    for tests."""

    def __init__(self, slots: int, clock=time.monotonic, ticket_ttl_s: float = TICKET_TTL_S, admits=None):
        self.slots = _checked(slots, "slots")
        self.clock = clock
        # () -> bool: whether the process can take one more call now, by measurement (the calls
        # running are on time: studies.server_load); None: the slots alone decide
        self.admits = admits
        self.ticket_ttl_s = ticket_ttl_s
        self._tickets: dict[str, _Ticket] = {}  # in the order joined: the line
        self._held: dict[str, float] = {}  # claim -> when its call started
        self._ended_calls = 0
        self._ended_seconds = 0.0
        self._lock = threading.Lock()

    # the line

    def join(self, participant: str, call_s: float) -> TicketState:
        """The participant's ticket: their existing one (a reloaded page joins again), else a new
        one at the end of the line, granted at once when a slot is free."""
        with self._lock:
            now = self._update()
            ticket = next((t for t, entry in self._tickets.items() if entry.participant == participant), None)
            if ticket is None:
                ticket = secrets.token_urlsafe(12)
                self._tickets[ticket] = _Ticket(participant, joined=now, seen=now)
                self._grant()
            self._tickets[ticket].seen = now
            return self._state(ticket, now, call_s)

    def poll(self, ticket: str, call_s: float) -> TicketState | None:
        """The ticket's state, refreshed (it stays alive); None for an unknown or expired ticket."""
        with self._lock:
            now = self._update()
            if ticket not in self._tickets:
                return None
            self._tickets[ticket].seen = now
            return self._state(ticket, now, call_s)

    def participant_of(self, ticket: str) -> str | None:
        with self._lock:
            self._update()
            entry = self._tickets.get(ticket)
            return entry.participant if entry else None

    def place(self, ticket: str) -> int | None:
        """1-based place among those still waiting; 0 once granted; None for an unknown ticket."""
        with self._lock:
            self._update()
            return self._place(ticket) if ticket in self._tickets else None

    def leave(self, participant: str) -> None:
        """The participant leaves the line, whatever their ticket (they withdrew from the study)."""
        with self._lock:
            for ticket in [t for t, e in self._tickets.items() if e.participant == participant]:
                del self._tickets[ticket]
            self._update()

    def abandon(self, ticket: str) -> None:
        """The participant leaves the line (or gives up a granted slot)."""
        with self._lock:
            self._tickets.pop(ticket, None)
            self._update()

    # the slots

    def claim(self, participant: str) -> str | None:
        """A slot for the participant's call: the one their granted ticket holds, else a free one
        nobody waits for; None when every slot is taken (or reserved for those ahead)."""
        with self._lock:
            now = self._update()
            granted = next((t for t, e in self._tickets.items() if e.participant == participant and e.granted), None)
            if granted is not None:
                del self._tickets[granted]
            elif self._free() <= 0:
                return None
            claim = secrets.token_urlsafe(12)
            self._held[claim] = now
            return claim

    def release(self, claim: str) -> None:
        """The call holding `claim` ended: its length counts to the mean, its slot goes to the
        head of the line."""
        with self._lock:
            started = self._held.pop(claim, None)
            now = self._update()
            if started is not None:
                self._ended_calls += 1
                self._ended_seconds += now - started

    def set_slots(self, slots: int) -> None:
        """Change the number of slots (freed ones go to the line at once)."""
        with self._lock:
            self.slots = max(0, int(slots))
            self._update()

    @property
    def calls(self) -> int:
        """Calls holding a slot now."""
        with self._lock:
            return len(self._held)

    def waiting(self) -> int:
        with self._lock:
            self._update()
            return sum(1 for e in self._tickets.values() if not e.granted)

    def mean_call_s(self, call_s: float) -> float:
        """The mean length of the calls that ended here; `call_s` until one has."""
        with self._lock:
            return self._mean(call_s)

    def expected_wait_s(self, place: int, call_s: float) -> float:
        with self._lock:
            return self._expected(place, call_s)

    # under the lock

    def _update(self) -> float:
        """Drop the tickets not polled within the ticket's lifetime, grant free slots; the time now."""
        now = self.clock()
        for ticket in [t for t, e in self._tickets.items() if now - e.seen > self.ticket_ttl_s]:
            del self._tickets[ticket]
        self._grant()
        return now

    def _free(self) -> int:
        free = self.slots - len(self._held) - sum(1 for e in self._tickets.values() if e.granted)
        # while the calls running are late, no further one: it would make them later still
        if free > 0 and self._held and self.admits is not None and not self.admits():
            return 0
        return free

    def _grant(self) -> None:
        free = self._free()
        for entry in self._tickets.values():
            if free <= 0:
                break
            if not entry.granted:
                entry.granted = True
                free -= 1

    def _place(self, ticket: str) -> int:
        if self._tickets[ticket].granted:
            return 0
        place = 0
        for t, entry in self._tickets.items():
            place += not entry.granted
            if t == ticket:
                return place
        raise KeyError(ticket)

    def _mean(self, call_s: float) -> float:
        return self._ended_seconds / self._ended_calls if self._ended_calls else float(call_s)

    def _expected(self, place: int, call_s: float) -> float:
        return place * self._mean(call_s) / max(1, self.slots)

    def _state(self, ticket: str, now: float, call_s: float) -> TicketState:
        entry = self._tickets[ticket]
        place = self._place(ticket)
        return TicketState(ticket=ticket, participant=entry.participant, place=place, granted=entry.granted,
                           waited_s=round(now - entry.joined, 3),
                           expected_wait_s=round(self._expected(place, call_s), 1))
