"""A participant's withdrawal from a study, and of one optional consent, under /participate
(included by studies.participant_api):

    POST /participate/api/withdraw/PSEUDONYM       withdraw: a running call is ended, every row and
                                                   file of theirs erased (storage.erasure) -> the
                                                   study's withdrawn code and link
    GET  /participate/api/consents/PSEUDONYM       the study's optional consent items, as answered
    POST /participate/api/consent-item/PSEUDONYM   {"item"}: withdraw that consent alone (nothing
                                                   else is removed)
    GET  /participate/withdraw/STUDY               the page that withdraws later: the link the done
                                                   page gives, with the pseudonym and the secret in
                                                   its fragment (#PSEUDONYM.SECRET), which browsers
                                                   never send to a server

Every action needs the `X-Participant-Secret` given at consent: 403 without it (the same answer
for an unknown pseudonym). A second withdrawal is answered 410, "already withdrawn", as is any
request of one who withdrew (their row is gone; the erasure record knows the pseudonym's hash).

GDPR Art. 7(3): withdrawing must be as easy as consenting, so the call page offers it at every
step after consent and the done page gives the link for later.
"""

from __future__ import annotations

import asyncio
import html
import json
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse

from storage.db import session_scope
from storage.erasure import AlreadyErased, ErasureError, erase, erased_in_any_study
from storage.models import Study, utc_now
from storage.records import NotFound, get_participant, study_by_name
from studies.call_manager import CallManager
from studies.config import study_settings
from studies.participant_secret import HEADER, secret_matches
from webguard.request_body import BodyError, read_json

PAGE = Path(__file__).resolve().parent / "withdraw_page.html"
ALREADY = "you have already withdrawn from this study: your recordings and answers were deleted"
NO_SECRET = "withdrawing needs the secret given at consent: use the withdrawal link from the study's last page"


def withdrawn_answer(config: dict | None) -> dict:
    """What the page shows one who withdrew: the study's withdrawn code and link ({code} filled)."""
    settings = study_settings(Study(name="", config=config or {}))
    answer = {"withdrawn": True}
    if settings.withdrawn_code:
        answer["withdrawn_code"] = settings.withdrawn_code
    if settings.withdrawn_url:
        answer["withdrawn_url"] = settings.withdrawn_url.replace("{code}", settings.withdrawn_code or "")
    return answer


class WithdrawalRoutes:
    """The routes above on `router`; `calls`: this process's calls (a running call is ended first)."""

    def __init__(self, engine, data_root, calls: CallManager):
        self.engine, self.data_root, self.calls = engine, Path(data_root), calls
        self.router = APIRouter()
        route = self.router.add_api_route
        route("/withdraw/{name}", self.page, methods=["GET"], response_class=HTMLResponse)
        route("/api/withdraw/{pseudonym}", self.withdraw, methods=["POST"])
        route("/api/consents/{pseudonym}", self.consents, methods=["GET"])
        route("/api/consent-item/{pseudonym}", self.withdraw_item, methods=["POST"])

    def page(self, name: str):
        with session_scope(self.engine) as session:
            study = study_by_name(session, name)
            if study is None:
                return HTMLResponse("<!doctype html><title>Unknown study</title><p>There is no such study.</p>",
                                    status_code=404)
            title, has_code = study.title or study.name, bool(study_settings(study).withdrawn_code)
        data = json.dumps({"study": name, "title": title, "api": "/participate/api",
                           "has_withdrawn_code": has_code}).replace("</", "<\\/")
        return HTMLResponse(PAGE.read_text(encoding="utf-8").replace("__STUDY__", data).replace(
            "__TITLE__", html.escape(title)), headers={"Cache-Control": "no-store"})

    def _owner(self, session, pseudonym: str, request: Request):
        """(the participant, None) when the request carries their secret; (None, the refusal) else."""
        try:
            participant = get_participant(session, pseudonym)
        except NotFound:
            if erased_in_any_study(session, "participant", pseudonym) is not None:
                return None, _error(410, ALREADY)
            return None, _error(403, NO_SECRET)
        if not secret_matches(participant.secret_sha256, request.headers.get(HEADER)):
            return None, _error(403, NO_SECRET)
        return participant, None

    async def withdraw(self, pseudonym: str, request: Request):
        with session_scope(self.engine) as session:
            participant, refused = self._owner(session, pseudonym, request)
            if refused is not None:
                return refused
            study = session.get(Study, participant.study_id)
            study_name, answer = study.name, withdrawn_answer(study.config)
        self.calls.leave_lines(pseudonym)
        # A running call is ended, its recording closed and its session stored, before it is erased;
        # one ending already (the page closed its connection first) is waited for.
        for call in [c for c in list(self.calls.calls.values()) if c.participant == pseudonym]:
            await call.finish("incomplete")
        try:
            await asyncio.get_running_loop().run_in_executor(
                None, lambda: erase(self.engine, study_name, "participant", pseudonym, erased_by="participant",
                                    reason="withdrawn", data_root=self.data_root))
        except AlreadyErased:  # withdrawn meanwhile (another tab)
            return _error(410, ALREADY)
        except ErasureError as e:  # a call of theirs in another process still running
            return _error(409, f"your data could not be deleted yet: {e}; please try again in a minute")
        return answer

    def consents(self, pseudonym: str, request: Request):
        with session_scope(self.engine) as session:
            participant, refused = self._owner(session, pseudonym, request)
            if refused is not None:
                return refused
            items = study_settings(session.get(Study, participant.study_id)).consent_items
            given = participant.consents or {}
        return {"items": [{**item, "agreed": bool(given.get(item["id"], {}).get("agreed")),
                           "at": given.get(item["id"], {}).get("at")} for item in items]}

    async def withdraw_item(self, pseudonym: str, request: Request):
        try:
            body = await read_json(request)
        except BodyError as e:
            return _error(e.status, str(e))
        item = body.get("item") if isinstance(body, dict) else None
        with session_scope(self.engine) as session:
            participant, refused = self._owner(session, pseudonym, request)
            if refused is not None:
                return refused
            known = [i["id"] for i in study_settings(session.get(Study, participant.study_id)).consent_items]
            if item not in known:
                return _error(400, f"the study has no consent item {item!r} (its items: {', '.join(known) or 'none'})")
            participant.consents = {**(participant.consents or {}), item: {"agreed": False, "at": utc_now().isoformat()}}
            session.add(participant)
        return {"item": item, "agreed": False}


def consent_choices(items: list[dict], given) -> dict | str:
    """{item id: {"agreed", "at"}} for the consent request's `consents` ({item id: true/false});
    the refusal in one line for an unknown item or a value that is not true or false. An item not
    answered is not agreed to."""
    given = {} if given is None else given
    if not isinstance(given, dict):
        return "'consents' must map each consent item's id to true or false"
    known = {item["id"] for item in items}
    unknown = sorted(map(str, set(given) - known))
    if unknown:
        return f"unknown consent item(s) {', '.join(unknown)} (the study's: {', '.join(sorted(known)) or 'none'})"
    if any(not isinstance(v, bool) for v in given.values()):
        return "each consent item's answer must be true or false"
    now = utc_now().isoformat()
    return {item["id"]: {"agreed": bool(given.get(item["id"], False)), "at": now} for item in items}


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)
