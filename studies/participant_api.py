"""HTTP routes of the participant area, under /participate (mounted by studies.web):

    GET  /participate/study/NAME                  the call page of a study link (consent, topic, call);
                                                  ?pid= of a participant who finished: their code
    GET  /participate/api/ready/STUDY/SYSTEM      whether the system's models are loaded (asking starts them)
    POST /participate/api/STUDY/consent           {"external_id", "consents": {item: bool}} -> the participant's
                                                  state and secret (409: one who withdrew)
    GET  /participate/api/participant/PSEUDONYM   what the participant has done and may do next
    POST /participate/api/queue                   {"participant", "system"} -> a place in line for a call slot
    GET  /participate/api/queue/TICKET            that place, refreshed (polling keeps it)
    DELETE /participate/api/queue/TICKET          leave the line
    POST /participate/api/offer                   {"participant", "system", "topic", "sdp", "type"}: a WebRTC call
    POST /participate/api/listener/SESSION        the page's recording of what the participant heard
    POST /participate/api/end/SESSION             end the call
    GET  /participate/api/ice/PSEUDONYM           the RTCConfiguration (ICE servers) of the participant's call
    POST /participate/api/STUDY/check             before consent: a connection check (studies/connection_check.py)
    POST /participate/api/check/ID/offer          {"token", "sdp", "type"}: the check's WebRTC connection
    POST /participate/api/check/ID/result         {"token", ...}: what the page found, stored once
    GET|POST /participate/api/questionnaire/PSEUDONYM  the questions after a call (studies/questionnaire_api.py)
    POST /participate/api/withdraw/PSEUDONYM      withdrawal, and of one consent item (studies/withdrawal_api.py)

The page knows the study's systems only by neutral labels (`system-1`, `system-2`, ... in the
study's order): participants must not learn which systems are compared. `ready` and `offer` take
a label (or a system's name, for scripts that know it).

Refusals answer {"error": "<one line>"} with 400 (a bad request), 403 (no consent, or no secret:
offer, listener and end need the `X-Participant-Secret` given at consent), 404 (an unknown study,
system or participant, or an expired place in line), 409 (a call running already, not the next
system), 413 (a body too large), 429 (every call slot taken: wait in line, studies.call_slots) or
503 (the system cannot start); an unknown study link gets a 404 page.
"""

from __future__ import annotations

import asyncio
import functools
import html
import inspect
import json
import secrets
from dataclasses import asdict, dataclass
from pathlib import Path

import soundfile
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse
from sqlmodel import select

from storage.db import session_scope
from storage.erasure import erased_before, erased_rows_before
from storage.models import (
    ConnectionCheck,
    ConversationSession,
    DialogueSystem,
    Participant,
    Recording,
    Study,
    utc_now,
)
from storage.records import (
    NotFound,
    add_recording,
    get_or_create_participant,
    get_participant,
    start_session,
    study_by_name,
)
from studies import connection_check
from studies.call_manager import CallManager, SlotsTaken
from studies.call_quality import SERVER_BEHIND
from studies.call_slots import TicketState, WaitingRoom
from studies.config import OWN_TOPIC, OWN_TOPIC_MAX, next_systems, study_settings
from studies.ice import NO_ICE_SERVERS, IceSettings
from studies.participant_secret import HEADER, new_secret, secret_matches
from studies.preparation import READY
from studies.questionnaire_api import QuestionnaireProgress, QuestionnaireRoutes
from studies.withdrawal_api import ALREADY, WithdrawalRoutes, consent_choices
from studies.recorder import TwoChannelRecorder
from studies.sessions import CALL_KIND, call_relpath, network_relpath, session_dir, timing_relpath
from systems import SystemError_, SystemSpec, system_spec
from webguard.request_body import BodyError, missing_text, read_capped, read_json, text_field_problem

PAGE = Path(__file__).resolve().parent / "call_page.html"


CALL_RUNNING = "you already have a call running (in another window or tab): end it first"


@dataclass(frozen=True)
class CallAsked:
    """A call request that passed every check: whose, with which system, on which topic."""

    participant: str  # pseudonym
    system_id: int
    system: SystemSpec  # its kind and parsed settings: the call builds it from these
    seconds: float
    topic: str  # as stored ("own topic: ..." for one the participant typed)
    spoken: str  # as the system is told it


class ParticipantRoutes:
    """The participant area's routes, on `router` (prefix `path`); `calls`: the calls of this
    process; `ice`: the ICE servers of every call and connection check, both ends."""

    def __init__(self, engine, data_root, calls: CallManager, path: str = "/participate",
                 ice: IceSettings = NO_ICE_SERVERS):
        self.engine, self.data_root, self.calls, self.path, self.ice = engine, Path(data_root), calls, path, ice
        self.check_peers = None  # this process's studies.check_peer.CheckPeers, made at the first check's offer
        self.router = APIRouter(prefix=path)
        def route(path, handler, **options):
            self.router.add_api_route(path, answering_refusals(handler), **options)

        # in this order: the first route whose path matches answers
        route("/study/{name}", self.study_page, methods=["GET"], response_class=HTMLResponse)
        route("/api/ready/{name}/{system}", self.ready, methods=["GET"])
        route("/api/{name}/consent", self.consent, methods=["POST"])
        route("/api/participant/{pseudonym}", self.participant_state, methods=["GET"])
        route("/api/queue", self.join_queue, methods=["POST"])
        route("/api/queue/{ticket}", self.queue_place, methods=["GET"])
        route("/api/queue/{ticket}", self.leave_queue, methods=["DELETE"])
        route("/api/offer", self.offer, methods=["POST"])
        route("/api/listener/{session_id}", self.listener, methods=["POST"])
        route("/api/end/{session_id}", self.end, methods=["POST"])
        route("/api/ice/{pseudonym}", self.ice_configuration, methods=["GET"])
        route("/api/{name}/check", self.start_check, methods=["POST"])
        route("/api/check/{check_id}/offer", self.check_offer, methods=["POST"])
        route("/api/check/{check_id}/result", self.check_result, methods=["POST"])
        self.router.on_shutdown.append(self.close_check_peers)
        self.router.include_router(QuestionnaireRoutes(engine, self.owner_of, participant_progress).router)
        self.router.include_router(WithdrawalRoutes(engine, self.data_root, calls).router)

    # -- who may act ------------------------------------------------------------------------------

    def owner_of(self, session, pseudonym: str, request: Request) -> Participant:
        """The participant `pseudonym` when the request carries their secret; NotFound otherwise
        (the same answer for an unknown pseudonym and a wrong secret)."""
        participant = get_participant(session, pseudonym)
        if not secret_matches(participant.secret_sha256, request.headers.get(HEADER)):
            raise NotFound("this action needs the secret given at consent: open the study link again")
        return participant

    def _owner(self, session, pseudonym: str, request: Request, refusal: str) -> Participant:
        """owner_of, or a 403 Refusal saying `refusal`."""
        try:
            return self.owner_of(session, pseudonym, request)
        except NotFound:
            raise Refusal(403, refusal) from None

    def session_owned(self, session_id: int, request: Request) -> bool:
        if not 0 < session_id < 2**31:  # no such row, and PostgreSQL's integer stops there
            return False
        with session_scope(self.engine) as session:
            conversation = session.get(ConversationSession, session_id)
            if conversation is None:
                return False
            participant = session.get(Participant, conversation.participant_id)
            return secret_matches(participant.secret_sha256, request.headers.get(HEADER))

    # -- the study link, consent, the participant's state ----------------------------------------

    def study_page(self, name: str, pid: str | None = None):
        with session_scope(self.engine) as session:
            study = study_by_name(session, name)
            if study is None:
                return HTMLResponse(_message_page(
                    "Unknown study link", f"There is no study called “{name}” (no study called that exists). Check the link you were given."
                ), status_code=404)
            settings = study_settings(study)
            systems = len(session.exec(select(DialogueSystem.id).where(DialogueSystem.study_id == study.id)).all())
            # how many calls and how long: said before consent
            data = {"study": study.name, "title": study.title or study.name, "consent": settings.consent,
                    "api": self.path + "/api", "systems_total": systems, "session_seconds": settings.session_seconds,
                    # questions after the last call: a step of their own in the step indicator
                    "final_questions": bool(settings.call_questionnaire(systems).after_last),
                    # optional consents, each its own box (studies.config `consent_items`)
                    "consent_items": [{"id": i["id"], "text": i["text"]} for i in settings.consent_items],
                    # the withdrawal's confirmation says a code for Prolific follows
                    "has_withdrawn_code": bool(settings.withdrawn_code)}
            finished = _finished_state(session, study, pid)
            if finished is not None:  # the link opened again after the last call: the code, not consent
                data["finished"] = finished
        # JSON inside <script>: only "</" could end it early
        return PAGE.read_text(encoding="utf-8").replace("__STUDY__", json.dumps(data).replace("</", "<\\/"))

    def ready(self, name: str, system: str):
        """Whether the system's models are loaded; asking starts their loading. The call page
        waits on this (with what is loading) before it connects."""
        with session_scope(self.engine) as session:
            row = _system_called(session, _study(session, name), system)
            if row is None:
                return _error(404, f"study {name!r} has no system called {system!r}")
            kind, config = row.kind, dict(row.config or {})
        try:
            prepared = self.calls.preparation(system_spec(kind, config))
        except SystemError_ as e:
            return _error(503, f"the dialogue system cannot start: {e}")
        return READY if prepared is None else prepared.as_dict()

    async def consent(self, name: str, request: Request):
        body = await _body(request)
        external = body.get("external_id") or None
        problem = external_id_problem(external)
        if problem:
            return _error(400, problem)
        secret, secret_hash = new_secret()
        with session_scope(self.engine) as session:
            study = _study(session, name)
            choices = consent_choices(study_settings(study).consent_items, body.get("consents"))
            if isinstance(choices, str):
                return _error(400, choices)
            if external is not None and erased_before(session, study.id, "participant", external) is not None:
                return _error(409, ALREADY + " (you cannot take part again)")
            participant = get_or_create_participant(session, study, external_id=external, consent_at=utc_now())
            if "consents" in body or not participant.consents:  # a page opened again keeps the answers given
                participant.consents = choices
            # A new consent (this tab, or the study link opened again) gets a new secret; an older
            # one stops working, so whoever consented last acts for the participant.
            participant.secret_sha256 = secret_hash
            session.add(participant)
            return {**_participant_state(session, study, participant), "secret": secret}

    def participant_state(self, pseudonym: str):
        with session_scope(self.engine) as session:
            try:
                participant = get_participant(session, pseudonym)
            except NotFound:
                return _error(404, "unknown participant: open the study link again")
            return _participant_state(session, session.get(Study, participant.study_id), participant)

    # -- the line for a call slot (studies.call_slots) -------------------------------------------

    async def join_queue(self, request: Request):
        """A place in line for a call slot of the system's kind (studies.call_slots), granted at
        once when one is free. The page polls GET /api/queue/TICKET and connects when granted."""
        body = await _body(request, "participant", "system", lacks="the queue request")
        with session_scope(self.engine) as session:
            participant = self._owner(session, body["participant"], request, WAITING_NEEDS_SECRET)
            study = session.get(Study, participant.study_id)
            row = _system_called(session, study, body["system"])
            if row is None:
                return _error(404, f"study {study.name!r} has no system called {body['system']!r}")
            settings, system_id, kind, config = study_settings(study), row.id, row.kind, dict(row.config or {})
        if self.calls.active_call_of(body["participant"]) is not None:
            return _error(409, CALL_RUNNING)
        try:  # a remote system's line asks its servers how many more calls they take
            system = system_spec(kind, config)
            room = await asyncio.get_running_loop().run_in_executor(None, self.calls.room_for, system_id, system)
        except SystemError_ as e:
            return _error(503, f"the dialogue system cannot start: {e}")
        if room is None:  # nothing limits this system's calls: no line
            return {"ticket": None, "place": 0, "expected_wait_s": 0.0, "granted": True}
        return _queue_answer(room, room.join(body["participant"], settings.session_seconds), settings)

    def queue_place(self, ticket: str, request: Request):
        room = self.calls.room_of_ticket(ticket)
        pseudonym = room.participant_of(ticket) if room is not None else None
        if pseudonym is None:
            return _error(404, "this place in line has expired (the page stopped asking): start the call again")
        with session_scope(self.engine) as session:
            participant = self._owner(session, pseudonym, request, WAITING_NEEDS_SECRET)
            settings = study_settings(session.get(Study, participant.study_id))
        state = room.poll(ticket, settings.session_seconds)
        if state is None:
            return _error(404, "this place in line has expired (the page stopped asking): start the call again")
        return _queue_answer(room, state, settings)

    def leave_queue(self, ticket: str, request: Request):
        room = self.calls.room_of_ticket(ticket)
        pseudonym = room.participant_of(ticket) if room is not None else None
        if pseudonym is not None:
            with session_scope(self.engine) as session:
                self._owner(session, pseudonym, request, "leaving the line needs the secret given at consent")
            room.abandon(ticket)
        return {"left": ticket}

    # -- the call ---------------------------------------------------------------------------------

    async def offer(self, request: Request):
        """The answer to the page's WebRTC offer: a call with the participant's next system, in
        a call slot of theirs, recorded from its first packet."""
        body = await _body(request, "participant", "system", "topic", "sdp", "type", lacks="the call request")
        asked = self.call_asked(body, request)
        if isinstance(asked, JSONResponse):
            return asked
        built = await self.system_in_slot(asked)
        if isinstance(built, JSONResponse):
            return built
        system, slot = built
        call = self.register_call(asked, system, slot)
        return await self.connect_call(call, system, asked, body["sdp"], body["type"])

    def call_asked(self, body: dict, request: Request) -> CallAsked | JSONResponse:
        """The call `body` asks for, or the refusal: no secret, a call running, no consent, not
        the participant's next system, a topic the study does not offer."""
        with session_scope(self.engine) as session:
            self._owner(session, body["participant"], request,
                        "this call needs the secret given at consent: open the study link again")
        if self.calls.active_call_of(body["participant"]) is not None:
            return _error(409, CALL_RUNNING)
        with session_scope(self.engine) as session:
            participant = get_participant(session, body["participant"])
            if participant.consent_at is None:
                return _error(403, "consent is needed before a call")
            study = session.get(Study, participant.study_id)
            state = _participant_state(session, study, participant)
            chosen = _system_called(session, study, body["system"])
            if chosen is None or system_label(session, study, chosen.name) not in state["next_systems"]:
                return _error(409, f"system {body['system']!r} is not the next one for you ({state['next_systems']})")
            topic = _topic_asked(body, state)
            if isinstance(topic, JSONResponse):
                return topic
            try:
                system = system_spec(chosen.kind, dict(chosen.config or {}))
            except SystemError_ as e:
                return _error(503, f"the dialogue system cannot start: {e}")
            return CallAsked(participant=body["participant"], system_id=chosen.id, system=system,
                             seconds=state["session_seconds"], topic=topic[0], spoken=topic[1])

    async def system_in_slot(self, asked: CallAsked) -> tuple | JSONResponse:
        """(the dialogue system built, the call slot it holds): the participant's granted place in
        line, or a free slot nobody waits for. A refusal frees the slot."""
        loop = asyncio.get_running_loop()
        try:
            room = await loop.run_in_executor(None, self.calls.room_for, asked.system_id, asked.system)
            slot = self.calls.claim_slot(asked.participant, room)
        except SlotsTaken:
            return _error(429, "every call this server can carry is taken: wait for your turn in line "
                               "(the call page does) and start the call when it comes")
        except SystemError_ as e:
            return _error(503, f"the dialogue system cannot start: {e}")
        try:
            system = await loop.run_in_executor(None, self.calls.build_system, asked.system)
        except SystemError_ as e:
            self.calls.release_slot(slot)
            return _error(503, f"the dialogue system cannot start: {e}")
        if self.calls.active_call_of(asked.participant) is not None:  # a second request while loading
            self.calls.release_slot(slot)
            return _error(409, CALL_RUNNING)
        return system, slot

    def register_call(self, asked: CallAsked, system, slot):
        """The call (its session row, recorder and peer connection), registered with `calls`;
        it holds `slot` until it ends (CallManager.finished)."""
        root = self.data_root
        try:  # whatever fails before the call holds the slot frees it (a database error, a full disk)
            from studies.webrtc import Call, peer_connection

            with session_scope(self.engine) as session:
                participant = get_participant(session, asked.participant)
                conversation = start_session(session, participant, session.get(DialogueSystem, asked.system_id),
                                             asked.topic)
                session_id = conversation.id
            recorder = TwoChannelRecorder(root / call_relpath(session_id), root / timing_relpath(session_id))
            # The same ICE servers as the page's (GET /api/ice); the minted credentials live only in
            # this peer connection, never in the database or the timing log.
            call = Call(session_id, asked.participant, system, recorder, asked.seconds, self.calls.finished,
                        on_heartbeat=self.calls.heartbeat, network_path=root / network_relpath(session_id),
                        pc=peer_connection(self.ice.aiortc_configuration(self.ice.for_peer(asked.participant))))
        except BaseException:
            self.calls.release_slot(slot)
            raise
        system.on_event = lambda event: recorder.log(event.kind, **event.fields)
        self.calls.add_call(session_id, call)  # registered first: a second offer meanwhile gets 409
        self.calls.hold_slot(session_id, slot)  # until the call ends (CallManager.finished)
        return call

    async def connect_call(self, call, system, asked: CallAsked, sdp: str, offer_type: str):
        """The system started on the topic and the browser's offer answered; a failure of either
        ends the call."""
        loop = asyncio.get_running_loop()
        try:
            # A remote system connects here: off the event loop that paces every call's audio.
            await loop.run_in_executor(None, system.start, asked.spoken)
        except SystemError_ as e:
            await call.finish("failed")
            return _error(503, f"the dialogue system cannot start: {e}")
        try:
            answer = await call.answer(sdp, offer_type)
        except Exception as e:  # a malformed offer
            await call.finish("failed")
            return _error(400, f"the browser's call offer could not be used: {e}")
        return {"sdp": answer.sdp, "type": answer.type, "session_id": call.session_id, "seconds": asked.seconds}

    async def listener(self, session_id: int, request: Request):
        """The page's recording of what the participant heard (mic + played system voice)."""
        from studies.listener import MAX_UPLOAD_BYTES

        if not self.session_owned(session_id, request):
            return _error(403, "this upload needs the secret given at consent")
        root = self.data_root
        if (root / session_dir(session_id) / "listener.wav").exists():
            return _error(409, f"session {session_id} has its listener recording already")
        try:
            data = await read_capped(request, MAX_UPLOAD_BYTES)
        except BodyError as e:
            return _error(e.status, str(e))
        call = self.calls.calls.get(session_id)
        if call is not None:  # the upload may overtake the end of the call
            await call.finish("complete")
        wav = root / call_relpath(session_id)
        if not wav.is_file():
            return _error(404, f"no call recording for session {session_id}")
        return await self.store_listener(session_id, data, wav)

    async def store_listener(self, session_id: int, data: bytes, wav: Path):
        """The upload decoded, aligned with the call's recording `wav` and stored beside it; the
        offsets found (studies.listener.playback_delay)."""
        from studies.listener import ListenerError, decode_upload, playback_delay

        loop = asyncio.get_running_loop()
        try:
            audio = await loop.run_in_executor(None, decode_upload, data)
            offsets = await loop.run_in_executor(None, playback_delay, audio, wav)
        except ListenerError as e:
            return _error(400, str(e))
        root = self.data_root
        relpath = f"{session_dir(session_id)}/listener.wav"
        soundfile.write(str(root / relpath), audio, 16000, subtype="PCM_16")
        (root / session_dir(session_id) / "listener.json").write_text(json.dumps(offsets))
        with session_scope(self.engine) as session:
            add_recording(session, relpath, kind="listener", data_root=root,
                          conversation=session.get(ConversationSession, session_id), system_channel=1)
        return offsets

    async def end(self, session_id: int, request: Request):
        if not self.session_owned(session_id, request):
            return _error(403, "ending a call needs the secret given at consent")
        call = self.calls.calls.get(session_id)
        if call is not None:
            await call.finish("complete")
        return {"ended": session_id}

    def ice_configuration(self, pseudonym: str, request: Request):
        """The page's RTCConfiguration for the participant's next call: the app's ICE servers,
        with TURN credentials minted now (never stored)."""
        with session_scope(self.engine) as session:
            self._owner(session, pseudonym, request, "a call needs the secret given at consent: open the study link again")
        return JSONResponse(self.ice.for_peer(pseudonym), headers=NO_STORE)

    # -- the connection check before consent (studies/connection_check.py) ------------------------

    def check_with_token(self, session, check_id: int, token) -> ConnectionCheck | None:
        """The check when `token` is its token; None otherwise (the same for an unknown check)."""
        if not 0 < check_id < 2**31 or not isinstance(token, str):
            return None
        row = session.get(ConnectionCheck, check_id)
        return row if row is not None and secret_matches(row.token_sha256, token) else None

    def peers(self):
        from studies.check_peer import CheckPeers

        if self.check_peers is None:
            self.check_peers = CheckPeers()
        return self.check_peers

    async def close_check_peers(self):
        if self.check_peers is not None:
            await self.check_peers.close_all()

    async def start_check(self, name: str, request: Request):
        """A new connection check of the study's link (no participant, no consent): its id,
        the token the page acts for it with, and the RTCConfiguration to connect with."""
        body = await _body(request)
        external = body.get("external_id") or None
        agent = body.get("user_agent") or None
        problem = external_id_problem(external) or connection_check.user_agent_problem(agent)
        if problem:
            return _error(400, problem)
        token, token_hash = new_secret()
        with session_scope(self.engine) as session:
            study = _study(session, name)
            row = ConnectionCheck(study_id=study.id, external_id=external, user_agent=agent, token_sha256=token_hash)
            session.add(row)
            session.flush()
            check_id = row.id
        return JSONResponse({"check_id": check_id, "token": token, "rtc": self.ice.for_peer(f"check-{check_id}"),
                             "limits": connection_check.limits()}, headers=NO_STORE)

    async def check_offer(self, check_id: int, request: Request):
        """The answer to the check's WebRTC offer: a peer that sends the audio straight back."""
        body = await _body(request, "sdp", "type", lacks="the check's offer")
        with session_scope(self.engine) as session:
            row = self.check_with_token(session, check_id, body.get("token"))
            if row is None:
                return _error(403, "this check needs its token: reload the page to check again")
            if row.outcome != "pending":
                return _error(409, "this check is finished: reload the page to check again")
            if (utc_now() - row.created_at).total_seconds() > connection_check.OFFER_WITHIN_S:
                return _error(409, "this check started too long ago: reload the page to check again")
        if body["type"] != "offer" or "m=audio" not in body["sdp"]:  # aiortc would answer anything
            return _error(400, "the browser's offer could not be used: it offers no audio")
        checking = self.peers()
        if check_id in checking.peers:
            return _error(409, "this check is connected already")
        if checking.full():
            return _error(503, "too many connection checks at once: try again in a minute")
        configuration = self.ice.aiortc_configuration(self.ice.for_peer(f"check-{check_id}"))
        try:
            answer = await checking.answer(check_id, body["sdp"], body["type"], configuration)
        except ValueError as e:
            return _error(400, f"the browser's offer could not be used: {e}")
        return {"sdp": answer.sdp, "type": answer.type}

    async def check_result(self, check_id: int, request: Request):
        """The page's findings, stored once; a failed check's answer carries what the page shows
        one who cannot take part (the study's code and link)."""
        body = await _body(request)
        with session_scope(self.engine) as session:
            row = self.check_with_token(session, check_id, body.get("token"))
            if row is None:
                return _error(403, "this check needs its token: reload the page to check again")
            if row.outcome != "pending":
                return _error(409, "this check's result is stored already")
            try:
                result = connection_check.parse_result(body)
            except connection_check.CheckError as e:
                return _error(400, str(e))
            for key, value in asdict(result).items():
                setattr(row, key, value)
            session.add(row)
            settings = study_settings(session.get(Study, row.study_id))
        if self.check_peers is not None:
            await self.check_peers.close(check_id)
        answer = {"check_id": check_id, "outcome": result.outcome}
        if result.outcome == "failed":
            answer["could_not_take_part"] = connection_check.could_not_take_part(settings)
        return answer


def participant_router(engine, data_root, calls: CallManager, path: str = "/participate",
                       ice: IceSettings = NO_ICE_SERVERS) -> APIRouter:
    """The participant area's routes under `path` (ParticipantRoutes' router)."""
    return ParticipantRoutes(engine, data_root, calls, path, ice).router


NO_STORE = {"Cache-Control": "no-store"}  # answers with a token or TURN credentials
WAITING_NEEDS_SECRET = "waiting for a call needs the secret given at consent: open the study link again"


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


class Refusal(Exception):
    """A request refused: its status and the one line the page shows (`{"error": ...}`)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def answering_refusals(handler):
    """The route `handler`, a Refusal it raises answered with its status and line: each route's
    checks (the body, the study, the secret) are a line each. A plain function stays one (FastAPI
    runs it off the event loop that paces the calls' audio)."""
    if inspect.iscoroutinefunction(handler):
        @functools.wraps(handler)
        async def answering(*args, **kwargs):
            try:
                return await handler(*args, **kwargs)
            except Refusal as refused:
                return _error(refused.status, str(refused))
    else:
        @functools.wraps(handler)
        def answering(*args, **kwargs):
            try:
                return handler(*args, **kwargs)
            except Refusal as refused:
                return _error(refused.status, str(refused))
    return answering


def _study(session, name: str) -> Study:
    """The study called `name`, or a 404 Refusal."""
    study = study_by_name(session, name)
    if study is None:
        raise Refusal(404, f"there is no study called {name!r}: check the link you were given")
    return study


def _finished_calls(session, participant: Participant) -> list[tuple[int, int, float]]:
    """(session id, system id, seconds) of the participant's complete calls, oldest first; the
    seconds are its two-channel recording's (stored with the status, in one transaction), 0
    without one."""
    rows = session.exec(
        select(ConversationSession.id, ConversationSession.system_id, Recording.duration_s)
        .join(Recording, (Recording.session_id == ConversationSession.id) & (Recording.kind == CALL_KIND),
              isouter=True)
        .where(ConversationSession.participant_id == participant.id, ConversationSession.status == "complete")
        .order_by(ConversationSession.id)
    ).all()
    return [(session_id, system_id, seconds or 0.0) for session_id, system_id, seconds in rows]


def _participant_state(session, study: Study, participant: Participant) -> dict:
    """What the participant has done and may do next, by the study's rule for calls shorter than
    its minimum (studies.config: `short_calls`); the completion code once every system is met
    and no questionnaire part is left (`questionnaire_due`)."""
    return participant_progress(session, study, participant)[0]


def participant_progress(session, study: Study, participant: Participant) -> tuple[dict, QuestionnaireProgress]:
    """The participant's state (`_participant_state`) and where they stand with the questionnaire."""
    settings = study_settings(study)
    systems = _study_systems(session, study)
    minimum = settings.call_minimum_s
    calls = _finished_calls(session, participant)
    name_of = {s.id: s.name for s in systems}
    done = {name_of[system_id] for _, system_id, seconds in calls if seconds >= minimum}
    # met only by calls too short to count: asked again ("repeat"), or moved past ("skip")
    short = {name_of[system_id] for _, system_id, _ in calls} - done
    met = done | short if settings.short_calls == "skip" else done
    # the participant's place in the counterbalanced order: everyone who came before, erased or not
    # (an erasure must not move the others to another order mid-study)
    index = len(session.exec(
        select(Participant.id).where(Participant.study_id == study.id, Participant.id < participant.id)
    ).all()) + erased_rows_before(session, study.id, "participant", participant.id)
    names = [s.name for s in systems]
    labels = system_labels(names)
    state = {
        "participant": participant.pseudonym,
        "study": study.name,
        "title": study.title or study.name,
        "topics": settings.topics,
        "own_topic": OWN_TOPIC if OWN_TOPIC in settings.topics else None,
        "instructions": settings.instructions,
        "session_seconds": settings.session_seconds,
        "assignment": settings.assignment,
        "systems_total": len(names),
        "systems_done": sorted(labels[name] for name in done),
        "systems_skipped": sorted(labels[name] for name in met - done),
        "next_systems": [labels[name] for name in next_systems(names, settings.assignment, index, met)],
        "short_calls": settings.short_calls,
    }
    if calls and calls[-1][2] < minimum:
        session_id, system_id, seconds = calls[-1]
        state["last_call_too_short"] = {"session_id": session_id, "system": labels[name_of[system_id]],
                                        "seconds": round(seconds, 1), "minimum": minimum}
    if calls and (reason := session.get(ConversationSession, calls[-1][0]).quality_reason) \
            and reason.startswith(SERVER_BEHIND):
        # the participant is told it was not their fault (their network, their behaviour)
        state["last_call_degraded_by_server"] = {"session_id": calls[-1][0]}
    progress = _questionnaire_progress(session, participant, settings, calls, name_of, labels, met)
    if (due := progress.due()) is not None:
        state["questionnaire_due"] = due
    elif names and len(met) == len(names):
        state["completion"] = _completion(session, participant, settings)
    return state, progress


def _questionnaire_progress(session, participant: Participant, settings, calls, name_of: dict, labels: dict,
                            met: set) -> QuestionnaireProgress:
    """`calls` as _finished_calls gives them; `met`: the names of the systems met."""
    minimum = settings.call_minimum_s
    complete = tuple((session_id, labels[name_of[system_id]]) for session_id, system_id, _ in calls)
    counted = {}  # label -> the first call of that system that counts
    for session_id, system_id, seconds in calls:
        if seconds >= minimum:
            counted.setdefault(labels[name_of[system_id]], session_id)
    met_labels = {labels[name] for name in met}
    order = tuple(dict.fromkeys(label for _, label in complete if label in met_labels))
    return QuestionnaireProgress(
        questionnaire=settings.call_questionnaire(len(labels)), calls=complete,
        counted=tuple((session_id, label) for label, session_id in counted.items()), met=order,
        all_met=bool(labels) and len(met) == len(labels),
        answered=QuestionnaireProgress.answered_parts(session, participant.id),
        names={label: name for name, label in labels.items()}, minimum_s=minimum)


def _finished_state(session, study: Study, external_id: str | None) -> dict | None:
    """What the page shows a participant (by their external id, e.g. Prolific's) who has finished
    the study: their completion, and no pseudonym (the link is not the secret given at consent).
    None for anyone else."""
    if external_id is None or external_id_problem(external_id):
        return None
    participant = session.exec(select(Participant).where(
        Participant.study_id == study.id, Participant.external_id == external_id)).first()
    if participant is None or participant.consent_at is None:
        return None
    state = _participant_state(session, study, participant)
    if "completion" not in state:
        return None
    return {key: state[key] for key in ("systems_total", "systems_done", "systems_skipped", "next_systems",
                                        "completion")}


def system_labels(names: list[str]) -> dict[str, str]:
    """{system name: the neutral label the participant's page knows it by}, in the study's order."""
    return {name: f"system-{k}" for k, name in enumerate(names, 1)}


def _study_systems(session, study: Study) -> list[DialogueSystem]:
    return list(session.exec(
        select(DialogueSystem).where(DialogueSystem.study_id == study.id).order_by(DialogueSystem.id)).all())


def system_label(session, study: Study, name: str) -> str:
    return system_labels([s.name for s in _study_systems(session, study)])[name]


def _system_called(session, study: Study, given: str) -> DialogueSystem | None:
    """The study's system with the label (or the name) `given`; None when there is none."""
    systems = _study_systems(session, study)
    labels = system_labels([s.name for s in systems])
    return next((s for s in systems if given in (labels[s.name], s.name)), None)


def _queue_answer(room: WaitingRoom, state: TicketState, settings) -> dict:
    """A place in line as the page reads it; past the study's `max_wait_seconds` the participant
    leaves the line with the study's could-not-take-part code."""
    answer = {"ticket": state.ticket, "place": state.place, "expected_wait_s": state.expected_wait_s,
              "granted": state.granted}
    if not state.granted and state.waited_s >= settings.max_wait_seconds:
        room.abandon(state.ticket)
        code, url = settings.could_not_take_part_code, settings.could_not_take_part_url
        could_not = {"code": code, **({"url": url.replace("{code}", code or "")} if url else {})}
        wait = settings.max_wait_seconds
        waited = f"{round(wait / 60)} minutes" if wait >= 120 else f"{round(wait)} seconds"
        answer.update(waited_too_long=True, could_not_take_part=could_not,
                      message=f"Every call place stayed taken for {waited}, the longest this study lets you wait, "
                              "so you could not take part this time. Thank you for your patience.")
    return answer


def _completion(session, participant: Participant, settings) -> dict:
    """The code a participant gets once every system of the study was talked to (the study's
    fixed code, e.g. Prolific's, or one of their own), with the study's return link."""
    if participant.completion_code is None:
        participant.completion_code = settings.completion_code or secrets.token_hex(4).upper()
        session.add(participant)
        session.flush()
    completion = {"code": participant.completion_code}
    if settings.completion_url:
        completion["url"] = settings.completion_url.replace("{code}", participant.completion_code)
    return completion


def own_topic_problem(text) -> str | None:
    """Why a topic typed by the participant cannot be used (None when it can)."""
    if not isinstance(text, str) or not text.strip():
        return "type the topic you would like to talk about"
    if len(text) > OWN_TOPIC_MAX:
        return f"the topic is longer than {OWN_TOPIC_MAX} characters"
    if any(ord(c) < 32 or 0xD800 <= ord(c) <= 0xDFFF for c in text):
        return "the topic contains control characters"
    return None


def _topic_asked(body: dict, state: dict) -> tuple[str, str] | JSONResponse:
    """(the call's topic as stored, as the system is told it) from the offer's `topic` (and
    `own_topic`, when the participant typed their own); the refusal when it cannot be used."""
    topic = spoken = body["topic"]
    if topic == state["own_topic"]:  # the participant typed their own
        problem = own_topic_problem(body.get("own_topic"))
        if problem:
            return _error(400, problem)
        spoken = body["own_topic"].strip()
        return f"{OWN_TOPIC}: {spoken}", spoken
    if topic not in state["topics"]:
        return _error(400, f"unknown topic {body['topic']!r}")
    return topic, spoken


async def _body(request: Request, *required: str, lacks: str = "the request") -> dict:
    """The JSON object of the body ({} for another JSON value), with a text under each of the
    `required` keys; a Refusal when it is too large, not JSON, or lacks one."""
    try:
        body = await read_json(request)
    except BodyError as e:
        raise Refusal(e.status, str(e)) from None
    body = body if isinstance(body, dict) else {}
    if (key := missing_text(body, required)) is not None:
        raise Refusal(400, f"{lacks} lacks {key!r}")
    return body


EXTERNAL_ID_MAX = 200  # Prolific ids are 24 characters


def external_id_problem(external) -> str | None:
    """Why an `external_id` from the page cannot be stored (None when it can)."""
    return text_field_problem(external, "external_id", EXTERNAL_ID_MAX)


def _message_page(title: str, message: str) -> str:
    return (
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        "<link rel='stylesheet' href='/static/app.css'></head>"
        f"<body><main><h1>{html.escape(title)}</h1><p id='message'>{html.escape(message)}</p></main></body></html>"
    )
