"""HTTP JSON routes of the annotator area; the browser page and the simulated annotators use them.

    GET  /api/annotate/next?token=T            what to do now: practice, trial, wait, complete
    POST /api/annotate/submit                  {"token", "trial", "choice", "rating_a", ...}
    POST /api/annotate/practice-done           {"token"}
    POST /api/annotate/skip                    {"token", "trial", "reason"}: a trial whose clip will not play
    POST /api/annotate/withdraw                {"token"}: erase the annotator (storage.erasure) -> the study's
                                               withdrawn code and link when it has them; the token is dead then
    POST /api/annotate/prolific                {"study", "PROLIFIC_PID", "STUDY_ID", "SESSION_ID"} -> token
    GET  /api/annotate/audio/{trial}/{side}?token=T      a clip of the annotator's own trial
    GET  /api/annotate/practice/{index}/{side}?token=T   a practice clip

Refusals answer {"error": "<one line>"} with 400 (bad submission), 403 (token, not your trial),
404 (unknown study, a clip whose audio cannot be served), 409 (a trial answered differently
before) or 410 (the annotator was erased while the request waited); nothing is stored then.
Each request is one transaction (storage.db.session_scope). On SQLite the transactions of this
process also queue on a lock: SQLite makes a writer that finds the file locked sleep and retry
(up to 100 ms a time), which under 50 annotators at once gave a long latency tail; waiting on a
Python lock wakes the next request at once. Other processes still queue on BEGIN IMMEDIATE.
"""

from __future__ import annotations

import logging
import threading
from contextlib import contextmanager, nullcontext
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, JSONResponse
from starlette.concurrency import run_in_threadpool

from annotation import trials
from webguard.request_body import BodyError, read_json
from storage.db import session_scope
from storage.erasure import ErasureError, annotator_pseudonym, erase, scrub_database
from storage.files import StorageFileError, resolve, verify
from storage.models import Study

PREFIX = "/api/annotate"
log = logging.getLogger(__name__)


def _error(exc: trials.TrialError) -> JSONResponse:
    return JSONResponse({"error": str(exc)}, status_code=exc.status)


async def _json_body(request: Request):
    """The parsed body, read with a cap (webguard.request_body): too large 413, not JSON 400."""
    try:
        return await read_json(request)
    except BodyError as exc:
        error = trials.TrialError(str(exc))
        error.status = exc.status
        raise error from None


class AnnotatorRoutes:
    """The annotator routes, on `router` (annotation.web includes it). Each request runs in one
    transaction of `engine`; clips are served from under `data_root`."""

    def __init__(self, engine, data_root):
        self.engine = engine
        self.data_root = Path(data_root)
        self.serial = threading.Lock() if engine.dialect.name == "sqlite" else nullcontext()
        self.verified: set[tuple[str, str]] = set()  # files whose checksum was checked once in this process
        self.router = APIRouter(prefix=PREFIX)
        add = self.router.add_api_route
        add("/next", self.next_trial, methods=["GET"])
        add("/submit", self.submit, methods=["POST"])
        add("/practice-done", self.practice_done, methods=["POST"])
        add("/skip", self.skip, methods=["POST"])
        add("/prolific", self.prolific, methods=["POST"])
        add("/withdraw", self.withdraw, methods=["POST"])
        add("/audio/{trial}/{side}", self.audio, methods=["GET"])
        add("/practice/{index}/{side}", self.practice_audio, methods=["GET"])

    @contextmanager
    def transaction(self):
        with self.serial, session_scope(self.engine) as session:
            yield session

    def clip_file(self, clip) -> FileResponse:
        key = (clip.audio_path, clip.audio_sha256)
        if key in self.verified:
            path = resolve(clip.audio_path, self.data_root)
        else:
            path = verify(clip.audio_path, clip.audio_sha256, self.data_root)
            self.verified.add(key)
        # No caching: a URL names a trial side, whose clip is private to the annotator.
        return FileResponse(path, media_type="audio/wav", headers={"Cache-Control": "no-store"})

    def next_trial(self, token: str | None = None):
        try:
            with self.transaction() as session:
                annotator = trials.authenticate(session, token)
                return trials.current_state(session, annotator)
        except trials.TrialError as exc:
            return _error(exc)

    async def post_json(self, request: Request, work):
        """A POST route's answer: parse the JSON body, then run `work(session, payload)` in one
        transaction in the thread pool (off the event loop); a TrialError becomes the one-line refusal."""
        try:
            payload = await _json_body(request)
        except trials.TrialError as exc:
            return _error(exc)
        return await run_in_threadpool(self.run_work, work, payload)

    def run_work(self, work, payload):
        try:
            if not isinstance(payload, dict):
                raise trials.TrialError("the request body must be a JSON object")
            with self.transaction() as session:
                return work(session, payload)
        except trials.TrialError as exc:
            return _error(exc)

    async def submit(self, request: Request):
        return await self.post_json(request, self.record_judgment)

    async def practice_done(self, request: Request):
        return await self.post_json(request, self.record_practice_done)

    async def skip(self, request: Request):
        return await self.post_json(request, self.record_skip)

    async def prolific(self, request: Request):
        return await self.post_json(request, self.enter_from_prolific)

    async def withdraw(self, request: Request):
        try:
            payload = await _json_body(request)
        except trials.TrialError as exc:
            return _error(exc)
        return await run_in_threadpool(self.withdraw_annotator, payload)

    def withdraw_annotator(self, payload):
        """Erase the annotator whose token `payload` carries (storage.erasure, reason "withdrawn"),
        and answer what the page shows them (trials.withdrawal_answer). The token check and the
        erasure are two transactions: one erased in between (a second tab, a researcher) gets 410."""
        try:
            if not isinstance(payload, dict):
                raise trials.TrialError("the request body must be a JSON object")
            # Held to the end (SQLite): this process's requests queue here, not on the file lock,
            # while the erasure and its vacuum run.
            with self.serial:
                with session_scope(self.engine) as session:
                    annotator = trials.authenticate(session, payload.get("token"))
                    study = session.get(Study, annotator.study_id)
                    study_name, pseudonym = study.name, annotator_pseudonym(annotator.id)
                    answer = trials.withdrawal_answer(study)
                try:
                    outcome = erase(self.engine, study_name, "annotator", pseudonym, erased_by="annotator",
                                    reason="withdrawn", data_root=self.data_root, scrub=False)
                except ErasureError:  # AlreadyErased, or gone: erased since the token check
                    raise trials.Removed(trials.REMOVED) from None
                try:
                    scrub_database(self.engine, [*outcome.plan.counts(), "erasure_record"])
                except ErasureError as exc:  # the rows are gone already: the withdrawal stands
                    log.warning("annotator withdrawal in study %r: the database was not scrubbed: %s", study_name, exc)
        except trials.TrialError as exc:
            return _error(exc)
        log.info("an annotator withdrew from study %r (erasure record %d)", study_name, outcome.record_id)
        return answer

    @staticmethod
    def record_judgment(session, payload):
        annotator = trials.authenticate(session, payload.get("token"))
        judgment, created = trials.submit(session, annotator, payload)
        return {"stored": True, "created": created, "judgment": judgment.id}

    @staticmethod
    def record_practice_done(session, payload):
        trials.finish_practice(session, trials.authenticate(session, payload.get("token")))
        return {"ok": True}

    @staticmethod
    def record_skip(session, payload):
        annotator = trials.authenticate(session, payload.get("token"))
        trials.skip_trial(session, annotator, payload.get("trial"), payload.get("reason"))
        return {"skipped": True}

    @staticmethod
    def enter_from_prolific(session, payload):
        token = trials.prolific_entry(
            session, str(payload.get("study") or ""), payload.get("PROLIFIC_PID"),
            payload.get("STUDY_ID"), payload.get("SESSION_ID"),
        )
        return {"token": token}

    def serve_clip(self, find_clip, token, number, side):
        """The audio of `find_clip(session, annotator, number, side)`, for its own annotator only."""
        try:
            with self.transaction() as session:
                clip = find_clip(session, trials.authenticate(session, token), number, side)
            return self.clip_file(clip)
        except trials.TrialError as exc:
            return _error(exc)
        except StorageFileError as exc:
            log.warning("annotator clip not served: %s", exc)
            # The researcher's problem, not the annotator's: say what to do (the file's path stays
            # on the server; the page offers to skip the trial, which reports it).
            return JSONResponse({"error": f"clip {side} of this trial cannot be played: its audio file is "
                                          "missing on the server. Skip this trial; it will be reported."},
                                status_code=404)

    def audio(self, trial: int, side: str, token: str | None = None):
        return self.serve_clip(trials.audio_clip, token, trial, side)

    def practice_audio(self, index: int, side: str, token: str | None = None):
        return self.serve_clip(trials.practice_clip, token, index, side)


def api_router(engine, data_root) -> APIRouter:
    """The annotator routes (AnnotatorRoutes) on one router."""
    return AnnotatorRoutes(engine, data_root).router
