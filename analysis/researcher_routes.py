"""Who may do what in the researcher area: the rule table of its routes, and the guard every route
goes through.

Every event of the area (analysis.dashboard) is registered under an api name of ROUTE_ROLES, with
the least role it needs (storage.researcher_accounts: viewer < analyst < owner):

    viewer    aggregates and figures, the report without sessions' words
    analyst   also a session's audio, transcript and events, the report with them, the dataset
    owner     also payments (Prolific IDs), erasure, the audit trail and the accounts

The guard finds the logged-in account (Gradio's login, its name in the request), answers a route
its role does not allow, or a study it is not a member of, with "403 Forbidden" (and records the
refusal in the audit trail), and records the routes that touch people's data (AUDITED). A route
registered without a rule fails the test that lists them (tests/analysis/test_researcher_roles.py).
"""

from __future__ import annotations

import contextvars
import fnmatch
import inspect
import json
import re
import urllib.parse

import anyio
import gradio as gr

from analysis.views import STUDY_VIEWS
from storage import audit_trail
from storage.researcher_accounts import Researcher, researcher

ROUTE_ROLES: dict[str, str] = {
    # the page and its polls
    "studies": "viewer",
    "analysis_status": "viewer",
    "examiner_progress": "viewer",
    "corpus_statistics": "viewer",  # an uploaded recording's statistics: nobody's data but the uploader's
    **{f"view_{key}": "viewer" for key in STUDY_VIEWS},
    **{f"refresh_{key}": "viewer" for key in STUDY_VIEWS},
    **{f"open_{key}": "viewer" for key in STUDY_VIEWS},
    "study_chosen": "viewer",  # the overview follows the chosen study
    "apply_exclusion": "viewer",
    "examiner_examples": "viewer",
    "examiner_example": "viewer",
    "report": "viewer",  # a viewer's holds the aggregates only
    # one session: its audio, words, events
    "sessions": "analyst",
    "session_loading": "analyst",
    "session": "analyst",
    "dataset": "analyst",
    "annotator_links": "analyst",
    # people's identities and their erasure; the trail itself
    "payments": "owner",
    "erasure_preview": "owner",
    "erase": "owner",
    "audit_trail": "owner",
    "audit_csv": "owner",
    "accounts": "owner",
}
# route -> the audit trail's action for it (its object: the study, and the session where there is
# one); an erasure records itself (storage.erasure), from whichever door it came
AUDITED = {
    "session": "opened_session",
    "report": "exported_report",
    "dataset": "exported_dataset",
    "payments": "exported_payments",
    "audit_csv": "exported_audit",
}

# The page's polls (every 2 s): refused without a record, or a page left open after its account
# was disabled would fill the trail.
UNRECORDED_REFUSALS = {"analysis_status", "examiner_progress"}

_caller: contextvars.ContextVar[Researcher | None] = contextvars.ContextVar("researcher_caller", default=None)


def current_caller() -> Researcher | None:
    """The account whose request is being answered (None outside a guarded route, e.g. in tests
    that call the handlers directly)."""
    return _caller.get()


def forbidden(message: str) -> gr.Error:
    return gr.Error(f"403 Forbidden: {message}", print_exception=False)


class RouteGuard:
    """Wraps the area's handlers: `guard.route("session", handler)`."""

    def __init__(self, engine, shared: tuple[str, str] | None, study_ids: callable):
        self.engine = engine
        self.shared = shared  # (name, password) of the shared password's owner account
        self.study_ids = study_ids  # study name -> id (None: unknown)
        self.registered: set[str] = set()

    def route(self, name: str, handler):
        """`handler` behind its rule. Gradio passes the guard the request (a last argument
        `request: gr.Request`, added unless the handler has one, which then gets it too)."""
        if name not in ROUTE_ROLES:
            raise KeyError(f"route {name!r} has no rule in ROUTE_ROLES")
        self.registered.add(name)
        role = ROUTE_ROLES[name]
        parameters = list(inspect.signature(handler).parameters.values())
        names = [p.name for p in parameters]
        takes_request = "request" in names
        if not takes_request:
            parameters.append(inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None))
        signature = inspect.Signature(parameters)
        studied = bool(names) and names[0] == "study"

        def guarded(*args):
            arguments = signature.bind(*args).arguments
            request = arguments.get("request")
            caller = self._caller(request)
            address = getattr(getattr(request, "client", None), "host", None)
            study = arguments.get("study") if studied else None
            if caller is None or not caller.allowed(role) or (study and not caller.may_open(self.study_ids(study))):
                who = getattr(request, "username", None) or "anonymous"
                if name not in UNRECORDED_REFUSALS:
                    audit_trail.record(self.engine, who, "refused", object=name, address=address, study=study,
                                       needs=role)
                raise forbidden(f"your account may not use this ({name} needs the {role} role"
                                + (" and membership of the study)" if study else ")"))
            token = _caller.set(caller)
            try:
                result = handler(*(args if takes_request else args[:len(args) - ("request" in arguments)]))
            finally:
                _caller.reset(token)
            if name in AUDITED:
                session_id = arguments.get("session_id")
                if name != "session" or session_id is not None:
                    audit_trail.record(self.engine, caller.name, AUDITED[name], address=address,
                                       object=f"session {session_id}" if session_id is not None else study,
                                       study=study)
            return result

        # what Gradio reads: the parameters (a gr.Progress default included) and the request's type
        guarded.__signature__ = signature
        guarded.__annotations__ = {"request": gr.Request}
        guarded.__name__ = guarded.__qualname__ = name
        guarded.__doc__ = handler.__doc__
        return guarded

    def _caller(self, request) -> Researcher | None:
        name = getattr(request, "username", None)
        return None if not name else researcher(self.engine, name, self.shared)


def login_recorder(engine):
    """What the login throttle (webguard.login_throttle) calls for every login answered: the
    audit trail's "login" or "failed_login" (a throttled one says so)."""
    def recorded(client: str, user: str, status: int) -> None:
        action = "login" if status == 200 else "failed_login"
        detail = {"throttled": True} if status == 429 else {}
        audit_trail.record(engine, user or "anonymous", action, address=client, **detail)
    return recorded


# The files the area hands out (Gradio serves each behind the login at .../gradio_api/file=PATH,
# to any logged-in account that has the path): by name, the least role that may fetch it. A
# viewer's report has the aggregates only; anything else (a session's recording, the full report,
# the dataset) needs an analyst; people's Prolific IDs and the trail need an owner.
FILE_ROLES: tuple[tuple[str, str], ...] = (
    ("report-*-aggregates.zip", "viewer"),
    ("payments-*.csv", "owner"),
    ("audit-trail.csv", "owner"),
    ("*", "analyst"),
)
FILE_ROUTES = ("/gradio_api/file=", "/file=")


def file_role(path: str) -> str:
    """The least role that may fetch the file at `path`.

    >>> file_role("/data/.cache/gradio/ab12/report-demo-aggregates.zip"), file_role("/x/call.wav")
    ('viewer', 'analyst')
    """
    name = path.rstrip("/").rsplit("/", 1)[-1]
    return next(role for pattern, role in FILE_ROLES if fnmatch.fnmatchcase(name, pattern))


class FileGuard:
    """ASGI middleware in front of the researcher area's Gradio app: a file whose role (FILE_ROLES)
    the logged-in account lacks is answered 403 and the refusal recorded. Gradio's own check
    (logged in at all) comes after it. `who(scope)`: the account's name from the request's
    login cookie."""

    def __init__(self, app, area: str, engine, who, shared: tuple[str, str] | None):
        self.app = app
        self.routes = tuple(area.rstrip("/") + route for route in FILE_ROUTES)
        self.engine = engine
        self.who = who
        self.shared = shared

    async def __call__(self, scope, receive, send):
        path = re.sub("/+", "/", scope.get("path", "")) if scope["type"] == "http" else ""
        if not path.startswith(self.routes):
            await self.app(scope, receive, send)
            return
        role = file_role(urllib.parse.unquote(path))
        name = self.who(scope)
        caller = None if name is None else await anyio.to_thread.run_sync(researcher, self.engine, name, self.shared)
        if name is not None and (caller is None or not caller.allowed(role)):
            address = scope["client"][0] if scope.get("client") else None
            await anyio.to_thread.run_sync(lambda: audit_trail.record(
                self.engine, name, "refused", object=path.rsplit("/", 1)[-1], address=address, needs=role))
            body = json.dumps({"detail": f"403 Forbidden: this file needs the {role} role"}).encode()
            await send({"type": "http.response.start", "status": 403,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)  # not logged in: Gradio answers that itself
