"""The participant's questionnaire after each call and after the last (studies/questionnaire.py),
under /participate (mounted by studies.participant_api.participant_router):

    GET  /participate/api/questionnaire/PSEUDONYM   {"due": the part to answer now, or null}
    POST /participate/api/questionnaire/PSEUDONYM   {"part": "call:SESSION_ID" | "after_last", "answers": {...}}

Every call that counts (its recording at least the study's minimum; the first such call of each
system) has its part "call:SESSION_ID"; once every system is met and those are answered, the part
"after_last" (when the study's questionnaire has items for it). The participant's state
(`questionnaire_due`) names the first part not answered, and the completion code waits until none
is left.

A part is stored once: the unique (participant, part) makes a resubmission, or the same answers
from a second tab, answer 200 with {"stored": false, "already": true} and change nothing. POST
needs the `X-Participant-Secret` given at consent (403 without it); answers the questionnaire
refuses are a 400, a part that is not due (another's call, a call that did not count, the last
part before the calls' parts) a 409, each with {"error": "<one line>"}.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from sqlmodel import select

from storage.analysis_queue import request_analysis
from storage.db import session_scope
from storage.models import Participant, QuestionnaireResponse, Study, utc_now
from storage.records import NotFound, get_participant
from studies.questionnaire import Questionnaire, QuestionnaireItem, answer_problem
from webguard.request_body import BodyError, read_json

AFTER_LAST = "after_last"
CALL_PART = "call:"


def call_part(session_id: int) -> str:
    return f"{CALL_PART}{session_id}"


@dataclass(frozen=True)
class QuestionnaireProgress:
    """Where a participant stands with the questionnaire. The systems go by their neutral labels
    (`system-1`, ...); the participant reads them as "System 1", "System 2" in the order met."""

    questionnaire: Questionnaire
    calls: tuple[tuple[int, str], ...]  # (session id, label) of every complete call, oldest first
    counted: tuple[tuple[int, str], ...]  # (session id, label) of the call that counts, per system, in order
    met: tuple[str, ...]  # labels of the systems met, in the order met
    all_met: bool  # every system of the study met: the last call is behind
    answered: frozenset[str]  # the parts stored
    names: dict  # label -> the system's name (for the stored row, never for the page)
    minimum_s: float

    @staticmethod
    def answered_parts(session, participant_id: int) -> frozenset[str]:
        return frozenset(session.exec(select(QuestionnaireResponse.part)
                                      .where(QuestionnaireResponse.participant_id == participant_id)).all())

    def shown_as(self, label: str) -> str:
        return f"System {self.met.index(label) + 1}"

    def open_parts(self) -> list[str]:
        """The parts that may be answered now: the calls' first, then the one after the last."""
        parts = [call_part(session_id) for session_id, _ in self.counted if self.questionnaire.after_call
                 and call_part(session_id) not in self.answered]
        if not parts and self.all_met and self.questionnaire.after_last and AFTER_LAST not in self.answered:
            parts.append(AFTER_LAST)
        return parts

    def due(self) -> dict | None:
        """The first part to answer, as the page shows it; None when nothing is left."""
        parts = self.open_parts()
        return self.describe(parts[0]) if parts else None

    def describe(self, part: str) -> dict:
        if part == AFTER_LAST:
            return {"part": part, "session_id": None, "items": [i.as_dict() for i in self.questionnaire.after_last],
                    "systems": [{"label": label, "shown_as": self.shown_as(label)} for label in self.met]}
        session_id = int(part.removeprefix(CALL_PART))
        label = dict(self.counted)[session_id]
        return {"part": part, "session_id": session_id, "system": label, "shown_as": self.shown_as(label),
                "call": [s for s, _ in self.counted].index(session_id) + 1,
                "items": [i.as_dict() for i in self.questionnaire.after_call]}

    def items(self, part: str) -> tuple[QuestionnaireItem, ...]:
        return self.questionnaire.after_last if part == AFTER_LAST else self.questionnaire.after_call

    def systems_of(self, part: str) -> dict:
        """{label: system name} of the systems the part's answers are about."""
        if part == AFTER_LAST:
            return {label: self.names[label] for label in self.met}
        label = dict(self.counted)[int(part.removeprefix(CALL_PART))]
        return {label: self.names[label]}

    def refusal(self, part: str) -> str | None:
        """Why `part` cannot be answered now, in one line; None when it can."""
        if part in self.open_parts():
            return None
        if part == AFTER_LAST:
            if not self.questionnaire.after_last:
                return "this study has no questions after the last call"
            if not self.all_met:
                return "the questions after the last call come once you have talked to every system"
            return "answer the questions after each call first"
        session_id = int(part.removeprefix(CALL_PART))
        if session_id not in {s for s, _ in self.calls}:
            return f"call {session_id} is not a finished call of yours"
        if not self.questionnaire.after_call:
            return "this study has no questions after each call"
        return (f"call {session_id} was shorter than the study's minimum of {self.minimum_s:g} seconds "
                "and did not count: it has no questions")


def part_problem(part) -> str | None:
    """Why `part` is not a part's name (None when it is)."""
    if part == AFTER_LAST:
        return None
    number = part.removeprefix(CALL_PART) if isinstance(part, str) and part.startswith(CALL_PART) else ""
    if number.isascii() and number.isdigit() and 0 < int(number) < 2**31:
        return None
    return "'part' must be \"call:SESSION_ID\" or \"after_last\""


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


class QuestionnaireRoutes:
    """The two routes, on `router` (studies.participant_api.ParticipantRoutes includes it under its prefix).

    `owner_of(session, pseudonym, request)`: the participant when the request carries their secret
    (NotFound otherwise); `progress_of(session, study, participant)`: (their state, their
    QuestionnaireProgress), as studies.participant_api computes them.
    """

    def __init__(self, engine, owner_of, progress_of):
        self.engine, self.owner_of, self.progress_of = engine, owner_of, progress_of
        self.router = APIRouter()
        self.router.add_api_route("/api/questionnaire/{pseudonym}", self.due, methods=["GET"])
        self.router.add_api_route("/api/questionnaire/{pseudonym}", self.submit, methods=["POST"])

    def due(self, pseudonym: str):
        """The part to answer now (its items, the call and system it is about), or null."""
        with session_scope(self.engine) as session:
            try:
                participant = get_participant(session, pseudonym)
            except NotFound:
                return _error(404, "unknown participant: open the study link again")
            state, progress = self.progress_of(session, session.get(Study, participant.study_id), participant)
            return {"participant": pseudonym, "due": progress.due()}

    async def submit(self, pseudonym: str, request: Request):
        try:
            body = await read_json(request)
        except BodyError as e:
            return _error(e.status, str(e))
        if not isinstance(body, dict):
            return _error(400, "the body must be a JSON object with 'part' and 'answers'")
        part = body.get("part")
        problem = part_problem(part)
        if problem:
            return _error(400, problem)
        with session_scope(self.engine) as session:
            try:
                participant = self.owner_of(session, pseudonym, request)
            except NotFound:
                return _error(403, "answering needs the secret given at consent: open the study link again")
            study = session.get(Study, participant.study_id)
            state, progress = self.progress_of(session, study, participant)
            participant_id = participant.id
        if part in progress.answered:
            return {"stored": False, "already": True, "state": state}
        refused = progress.refusal(part)
        if refused:
            return _error(409, refused)
        problem = answer_problem(progress.items(part), body.get("answers"), list(progress.met))
        if problem:
            return _error(400, problem)
        stored = self.store(participant_id, part, body["answers"], progress.systems_of(part))
        with session_scope(self.engine) as session:
            participant = session.get(Participant, participant_id)
            state, _ = self.progress_of(session, session.get(Study, participant.study_id), participant)
        return {"stored": stored, "already": not stored, "state": state}

    def store(self, participant_id: int, part: str, answers: dict, systems: dict) -> bool:
        """Whether this request stored the part (False: another request stored it first)."""
        session_id = None if part == AFTER_LAST else int(part.removeprefix(CALL_PART))
        try:
            with session_scope(self.engine) as session:
                session.add(QuestionnaireResponse(participant_id=participant_id, session_id=session_id, part=part,
                                                  answers=answers, systems=systems, submitted_at=utc_now()))
                # the study's questionnaire statistics are out of date: the background worker
                # computes them now, not when a researcher first opens the tab
                request_analysis(session, session.get(Participant, participant_id).study_id)
        except sa.exc.IntegrityError:  # the unique (participant, part): a second tab was first
            return False
        return True
