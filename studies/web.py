"""The participant area of the web app (mounted by app.py at /participate).

    /participate/                      overview of the studies (Gradio)
    /participate/study/NAME[?pid=ID]   the study link: consent, topic, instructions, call, next system
    /participate/api/...               JSON used by that page; /api/offer starts a WebRTC call

The call page is plain HTML with a small JS WebRTC client (Gradio's own audio streaming has
seconds of start-up and no timestamps); the server side is studies/webrtc.py.
"""

from __future__ import annotations

import asyncio
import html
import json
import logging
import secrets
import threading
from pathlib import Path

import gradio as gr
import soundfile
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse
from sqlmodel import select

from storage.db import session_scope
from storage.models import (
    ConversationSession,
    DialogueSystem,
    Participant,
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
from studies.config import OWN_TOPIC, OWN_TOPIC_MAX, next_systems, study_settings
from studies.overview import overview_markdown, study_overviews
from studies.participant_secret import HEADER, new_secret, secret_matches
from studies.recorder import TwoChannelRecorder
from studies.sessions import (
    LEASE_S,
    call_relpath,
    finish_session,
    mark_open_sessions_incomplete,
    renew_lease,
    session_dir,
    timing_relpath,
)
from studies.preparation import READY, Preparation
from studies.systems import SystemError_, make_system, system_kind
from studies.systems.cascaded import LOAD_STEPS, CascadedSettings, load_components
from webguard.request_body import BodyError, read_capped, read_json

log = logging.getLogger(__name__)
PAGE = Path(__file__).resolve().parent / "call_page.html"


class CallManager:
    """The calls running in this server process, one per participant at most."""

    def __init__(self, engine, data_root: Path):
        self.engine = engine
        self.data_root = Path(data_root)
        self.calls: dict[int, object] = {}  # session id -> Call
        self._preparations: dict[str, Preparation] = {}
        self._lock = threading.Lock()

    def build_system(self, kind: str, config: dict):
        """A system for one call; the embedded systems' models are loaded once and shared by calls."""
        if system_kind(kind).embedded:
            return make_system(kind, config, components=self.cascade_components(config, kind=kind))
        return make_system(kind, config)

    @staticmethod
    def _models_key(kind: str, config: dict) -> tuple[str, CascadedSettings]:
        """(key, settings): systems whose configs name the same models share them."""
        settings = system_kind(kind).parse(config)  # an embedded kind's settings are the cascade's
        key = json.dumps([settings.asr_model, settings.llm, settings.llm_runtime, settings.llm_endpoint,
                          settings.llm_api_model, settings.tts_voice, settings.threads, settings.data_root])
        return key, settings

    def preparation(self, kind: str, config: dict) -> Preparation | None:
        """The loading of a system's models, started now if it has not been (None: a system
        whose models run elsewhere, nothing to load here). SystemError_ for a bad config."""
        if not system_kind(kind).embedded:
            return None
        key, settings = self._models_key(kind, config)
        with self._lock:
            prepared = self._preparations.get(key)
            if prepared is None or prepared.status == "failed":  # a failed loading is tried again
                prepared = Preparation(lambda on_step: load_components(settings, on_step), len(LOAD_STEPS)).start()
                self._preparations[key] = prepared
            return prepared

    def cascade_components(self, config: dict, loaded=None, kind: str = "cascaded"):
        """The models of an embedded system's config, loaded once (or `loaded`, given to share
        models loaded elsewhere); waits for a loading under way."""
        if loaded is not None:
            key, _ = self._models_key(kind, config)
            with self._lock:
                self._preparations[key] = Preparation.finished(loaded, len(LOAD_STEPS))
            return loaded
        try:
            return self.preparation(kind, config).wait()
        except RuntimeError as e:
            raise SystemError_(f"its models could not be loaded: {e}") from None

    def prepare_all(self) -> None:
        """Start loading the models of every study's systems (at start-up), in the background."""
        with session_scope(self.engine) as session:
            systems = [(s.name, s.kind, dict(s.config or {})) for s in session.exec(select(DialogueSystem))]
        for name, kind, config in systems:
            try:
                self.preparation(kind, config)
            except SystemError_ as e:
                log.warning("system %s cannot be prepared: %s", name, e)

    def active_call_of(self, participant: str):
        return next((c for c in self.calls.values() if c.participant == participant and c.status is None), None)

    def heartbeat(self, call) -> bool:
        return renew_lease(self.engine, call.session_id)

    def sweep(self) -> list[int]:
        """Close the calls of dead processes (expired leases), never one of this process."""
        return mark_open_sessions_incomplete(self.engine, self.data_root, keep=set(self.calls))

    def finished(self, call, status: str) -> None:
        finish_session(self.engine, call.session_id, status, self.data_root)
        self.calls.pop(call.session_id, None)


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _study(session, name: str) -> Study:
    study = study_by_name(session, name)
    if study is None:
        raise NotFound(f"there is no study called {name!r}: check the link you were given")
    return study


def _participant_state(session, study: Study, participant: Participant) -> dict:
    settings = study_settings(study)
    systems = session.exec(
        select(DialogueSystem).where(DialogueSystem.study_id == study.id).order_by(DialogueSystem.id)
    ).all()
    done = {
        s.name for s in systems
        if session.exec(
            select(ConversationSession).where(
                ConversationSession.participant_id == participant.id,
                ConversationSession.system_id == s.id,
                ConversationSession.status == "complete",
            )
        ).first()
    }
    index = len(session.exec(
        select(Participant.id).where(Participant.study_id == study.id, Participant.id < participant.id)
    ).all())
    names = [s.name for s in systems]
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
        "systems_done": sorted(done),
        "next_systems": next_systems(names, settings.assignment, index, done),
    }
    if names and len(done) == len(names):
        state["completion"] = _completion(session, participant, settings)
    return state


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


def participate_blocks(engine, path: str = "/participate") -> gr.Blocks:
    def overview() -> str:
        studies = study_overviews(engine)
        links = "\n".join(f"- [{s.title}]({path}/study/{s.name})" for s in studies)
        return overview_markdown(studies) + (f"\n\n**Study links**\n\n{links}" if links else "")

    with gr.Blocks(title="Participate") as blocks:
        gr.Markdown(
            "# Participate\n\nYou will talk with spoken dialogue systems about a given topic, in your "
            "browser. Open the study link you were given (`/participate/study/NAME`)."
        )
        shown = gr.Markdown()
        blocks.load(overview, outputs=shown)
    return blocks


def mount(app: FastAPI, engine, data_root, path: str = "/participate", prepare_models: bool = False) -> None:
    """Serve the participant area (its pages, JSON API and WebRTC signalling) on `app` under `path`.
    `prepare_models`: start loading every study system's models in the background now."""
    calls = CallManager(engine, data_root)
    app.state.participant_calls = calls
    if prepare_models:
        calls.prepare_all()
    # Sessions left "active" by a server process killed mid-call are incomplete: those whose
    # lease expired now, and later ones by a sweep every LEASE_S while this server runs. Calls of
    # other live processes keep a fresh lease and are not touched.
    calls.sweep()

    async def sweep_periodically():
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(LEASE_S)
            try:
                await loop.run_in_executor(None, calls.sweep)
            except Exception:  # the database may be briefly unreachable: try again next time
                log.exception("sweeping calls of dead processes failed")

    sweeper: list[asyncio.Task] = []
    app.router.on_startup.append(lambda: sweeper.append(asyncio.ensure_future(sweep_periodically())))
    app.router.on_shutdown.append(lambda: [task.cancel() for task in sweeper])

    @app.get(path + "/study/{name}", response_class=HTMLResponse)
    def study_page(name: str):
        with session_scope(engine) as session:
            study = study_by_name(session, name)
            if study is None:
                return HTMLResponse(_message_page(
                    "Unknown study link", f"There is no study called “{name}” (no study called that exists). Check the link you were given."
                ), status_code=404)
            settings = study_settings(study)
            systems = len(session.exec(select(DialogueSystem.id).where(DialogueSystem.study_id == study.id)).all())
            # how many calls and how long: said before consent
            data = {"study": study.name, "title": study.title or study.name, "consent": settings.consent,
                    "api": path + "/api", "systems_total": systems, "session_seconds": settings.session_seconds}
        # JSON inside <script>: only "</" could end it early
        return PAGE.read_text(encoding="utf-8").replace("__STUDY__", json.dumps(data).replace("</", "<\\/"))

    @app.get(path + "/api/ready/{name}/{system}")
    def ready(name: str, system: str):
        """Whether the system's models are loaded; asking starts their loading. The call page
        waits on this (with what is loading) before it connects."""
        with session_scope(engine) as session:
            try:
                study = _study(session, name)
            except NotFound as e:
                return _error(404, str(e))
            row = session.exec(select(DialogueSystem).where(
                DialogueSystem.study_id == study.id, DialogueSystem.name == system)).first()
            if row is None:
                return _error(404, f"study {name!r} has no system called {system!r}")
            kind, config = row.kind, dict(row.config or {})
        try:
            prepared = calls.preparation(kind, config)
        except SystemError_ as e:
            return _error(503, f"the dialogue system cannot start: {e}")
        return READY if prepared is None else prepared.as_dict()

    @app.post(path + "/api/{name}/consent")
    async def consent(name: str, request: Request):
        try:
            body = await _json(request)
        except BodyError as e:
            return _error(e.status, str(e))
        external = body.get("external_id") or None
        problem = external_id_problem(external)
        if problem:
            return _error(400, problem)
        secret, secret_hash = new_secret()
        with session_scope(engine) as session:
            try:
                study = _study(session, name)
            except NotFound as e:
                return _error(404, str(e))
            participant = get_or_create_participant(session, study, external_id=external, consent_at=utc_now())
            # A new consent (this tab, or the study link opened again) gets a new secret; an older
            # one stops working, so whoever consented last acts for the participant.
            participant.secret_sha256 = secret_hash
            session.add(participant)
            return {**_participant_state(session, study, participant), "secret": secret}

    def owner_of(session, pseudonym: str, request: Request) -> Participant:
        """The participant `pseudonym` when the request carries their secret; NotFound otherwise
        (the same answer for an unknown pseudonym and a wrong secret)."""
        participant = get_participant(session, pseudonym)
        if not secret_matches(participant.secret_sha256, request.headers.get(HEADER)):
            raise NotFound("this action needs the secret given at consent: open the study link again")
        return participant

    def session_owned(session_id: int, request: Request) -> bool:
        if not 0 < session_id < 2**31:  # no such row, and PostgreSQL's integer stops there
            return False
        with session_scope(engine) as session:
            conversation = session.get(ConversationSession, session_id)
            if conversation is None:
                return False
            participant = session.get(Participant, conversation.participant_id)
            return secret_matches(participant.secret_sha256, request.headers.get(HEADER))

    @app.get(path + "/api/participant/{pseudonym}")
    def participant_state(pseudonym: str):
        with session_scope(engine) as session:
            try:
                participant = get_participant(session, pseudonym)
            except NotFound:
                return _error(404, "unknown participant: open the study link again")
            return _participant_state(session, session.get(Study, participant.study_id), participant)

    @app.post(path + "/api/offer")
    async def offer(request: Request):
        from studies.webrtc import Call

        try:
            body = await _json(request)
        except BodyError as e:
            return _error(e.status, str(e))
        for key in ("participant", "system", "topic", "sdp", "type"):
            if not isinstance(body.get(key), str) or not body[key] or "\0" in body[key]:
                return _error(400, f"the call request lacks {key!r}")
        with session_scope(engine) as session:
            try:
                participant = owner_of(session, body["participant"], request)
            except NotFound:
                return _error(403, "this call needs the secret given at consent: open the study link again")
        if calls.active_call_of(body["participant"]) is not None:
            return _error(409, "you already have a call running (in another window or tab): end it first")
        with session_scope(engine) as session:
            participant = get_participant(session, body["participant"])
            if participant.consent_at is None:
                return _error(403, "consent is needed before a call")
            study = session.get(Study, participant.study_id)
            state = _participant_state(session, study, participant)
            if body["system"] not in state["next_systems"]:
                return _error(409, f"system {body['system']!r} is not the next one for you ({state['next_systems']})")
            topic = spoken = body["topic"]
            if topic == state["own_topic"]:  # the participant typed their own
                problem = own_topic_problem(body.get("own_topic"))
                if problem:
                    return _error(400, problem)
                spoken = body["own_topic"].strip()
                topic = f"{OWN_TOPIC}: {spoken}"
            elif topic not in state["topics"]:
                return _error(400, f"unknown topic {body['topic']!r}")
            system_row = session.exec(
                select(DialogueSystem).where(DialogueSystem.study_id == study.id, DialogueSystem.name == body["system"])
            ).one()
            kind, config, seconds = system_row.kind, dict(system_row.config or {}), state["session_seconds"]
        loop = asyncio.get_running_loop()
        try:
            system = await loop.run_in_executor(None, calls.build_system, kind, config)
        except SystemError_ as e:
            return _error(503, f"the dialogue system cannot start: {e}")
        if calls.active_call_of(body["participant"]) is not None:  # a second request while loading
            return _error(409, "you already have a call running (in another window or tab): end it first")
        with session_scope(engine) as session:
            participant = get_participant(session, body["participant"])
            conversation = start_session(session, participant, session.get(DialogueSystem, system_row.id), topic)
            session_id = conversation.id
        root = Path(data_root)
        recorder = TwoChannelRecorder(root / call_relpath(session_id), root / timing_relpath(session_id))
        call = Call(session_id, body["participant"], system, recorder, seconds, calls.finished,
                    on_heartbeat=calls.heartbeat)
        system.on_event = lambda event: recorder.log(event.kind, **event.fields)
        calls.calls[session_id] = call  # registered first: a second offer meanwhile gets 409
        try:
            # A remote system connects here: off the event loop that paces every call's audio.
            await loop.run_in_executor(None, system.start, spoken)
        except SystemError_ as e:
            await call.finish("failed")
            return _error(503, f"the dialogue system cannot start: {e}")
        try:
            answer = await call.answer(body["sdp"], body["type"])
        except Exception as e:  # a malformed offer
            await call.finish("failed")
            return _error(400, f"the browser's call offer could not be used: {e}")
        return {"sdp": answer.sdp, "type": answer.type, "session_id": session_id, "seconds": seconds}

    @app.post(path + "/api/listener/{session_id}")
    async def listener(session_id: int, request: Request):
        """The page's recording of what the participant heard (mic + played system voice)."""
        from studies.listener import (
            MAX_UPLOAD_BYTES,
            ListenerError,
            decode_upload,
            playback_delay,
        )

        if not session_owned(session_id, request):
            return _error(403, "this upload needs the secret given at consent")
        root = Path(data_root)
        if (root / session_dir(session_id) / "listener.wav").exists():
            return _error(409, f"session {session_id} has its listener recording already")
        try:
            data = await read_capped(request, MAX_UPLOAD_BYTES)
        except BodyError as e:
            return _error(e.status, str(e))
        call = calls.calls.get(session_id)
        if call is not None:  # the upload may overtake the end of the call
            await call.finish("complete")
        wav = root / call_relpath(session_id)
        if not wav.is_file():
            return _error(404, f"no call recording for session {session_id}")
        loop = asyncio.get_running_loop()
        try:
            audio = await loop.run_in_executor(None, decode_upload, data)
            offsets = await loop.run_in_executor(None, playback_delay, audio, wav)
        except ListenerError as e:
            return _error(400, str(e))
        relpath = f"{session_dir(session_id)}/listener.wav"
        soundfile.write(str(root / relpath), audio, 16000, subtype="PCM_16")
        (root / session_dir(session_id) / "listener.json").write_text(json.dumps(offsets))
        with session_scope(engine) as session:
            add_recording(session, relpath, kind="listener", data_root=root,
                          conversation=session.get(ConversationSession, session_id), system_channel=1)
        return offsets

    @app.post(path + "/api/end/{session_id}")
    async def end(session_id: int, request: Request):
        if not session_owned(session_id, request):
            return _error(403, "ending a call needs the secret given at consent")
        call = calls.calls.get(session_id)
        if call is not None:
            await call.finish("complete")
        return {"ended": session_id}

    gr.mount_gradio_app(app, participate_blocks(engine, path), path=path)


async def _json(request: Request) -> dict:
    """The JSON object of the body ({} for another JSON value); BodyError when it is too large
    or not JSON."""
    body = await read_json(request)
    return body if isinstance(body, dict) else {}


EXTERNAL_ID_MAX = 200  # Prolific ids are 24 characters


def external_id_problem(external) -> str | None:
    """Why an `external_id` from the page cannot be stored (None when it can)."""
    if external is None:
        return None
    if not isinstance(external, str):
        return "external_id must be a string"
    if len(external) > EXTERNAL_ID_MAX:
        return f"external_id is longer than {EXTERNAL_ID_MAX} characters"
    if any(ord(c) < 32 or 0xD800 <= ord(c) <= 0xDFFF for c in external):  # PostgreSQL stores neither
        return "external_id contains control characters"
    return None


def _message_page(title: str, message: str) -> str:
    return (
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        "<link rel='stylesheet' href='/static/app.css'></head>"
        f"<body><main><h1>{html.escape(title)}</h1><p id='message'>{html.escape(message)}</p></main></body></html>"
    )
