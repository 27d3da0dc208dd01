"""The check a browser runs before consent: whether it can take part at all. The page finds out
three things itself (a secure page, a microphone, a WebRTC connection to this server with the
study's ICE servers) and reports them once; the server's part is the other end of that short
connection, which sends the participant's audio straight back (nothing of it is stored) so that
the page can measure audio both ways.

    POST /participate/api/STUDY/check        {"external_id", "user_agent"} -> check id, token, RTCConfiguration
    POST /participate/api/check/ID/offer     {"token", "sdp", "type"}: the check's WebRTC offer
    POST /participate/api/check/ID/result    {"token", ...the page's findings}: stored once

Every check is a ConnectionCheck row (kept: the researcher's overview counts who could not
connect, and why); the token that lets the page act for its check is stored as its sha256 only
(studies.participant_secret).
A check creates no participant and no consent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from webguard.request_body import text_field_problem

OFFER_WITHIN_S = 600.0  # a check's offer comes seconds after its creation; later ones are refused
# The page calls a connection good enough for a call within these (the server refuses an "ok"
# outside them, so that both ends apply one rule).
MAX_RTT_MS = 1000.0
MAX_LOSS = 0.2
OUTCOMES = ("ok", "failed")
MICROPHONE_STATES = ("ok", "denied", "missing", "busy", "unsupported")
CANDIDATE_TYPES = ("host", "srflx", "prflx", "relay")
RELAY_PROTOCOLS = ("udp", "tcp", "tls")
# Why a check failed: a few fixed reasons, so the overview can count them.
REASONS = ("insecure page", "no microphone", "no connection", "no audio", "poor connection", "server error")
USER_AGENT_MAX = 400
FIELDS = ("token", "secure_context", "microphone", "candidate_type", "relay_protocol", "rtt_ms", "loss",
          "outcome", "reason")


class CheckError(ValueError):
    """A result the page sent that cannot be stored; the message says which field and why."""


@dataclass(frozen=True)
class CheckResult:
    """What the page found, validated."""

    outcome: str
    reason: str | None
    secure_context: bool
    microphone: str | None
    candidate_type: str | None
    relay_protocol: str | None
    rtt_ms: float | None
    loss: float | None


def limits() -> dict:
    """The page's thresholds for a connection good enough for a call."""
    return {"rtt_ms": MAX_RTT_MS, "loss": MAX_LOSS}


def parse_result(body: dict) -> CheckResult:
    """The page's findings from its JSON body; CheckError for a wrong type, range or value, or
    findings that contradict the outcome."""
    unknown = sorted(set(body) - set(FIELDS))
    if unknown:
        raise CheckError(f"unknown field(s) {', '.join(unknown)} (known: {', '.join(FIELDS[1:])})")
    outcome = _choice(body, "outcome", OUTCOMES, required=True)
    reason = _choice(body, "reason", REASONS)
    secure = body.get("secure_context")
    if not isinstance(secure, bool):
        raise CheckError("secure_context must be true or false")
    microphone = _choice(body, "microphone", MICROPHONE_STATES)
    candidate = _choice(body, "candidate_type", CANDIDATE_TYPES)
    protocol = _choice(body, "relay_protocol", RELAY_PROTOCOLS)
    if protocol is not None and candidate != "relay":
        raise CheckError("relay_protocol is only known for a relay candidate")
    rtt = _number(body, "rtt_ms", 0.0, 60_000.0)
    loss = _number(body, "loss", 0.0, 1.0)
    if outcome == "ok":
        if reason is not None:
            raise CheckError("a check that passed has no reason")
        if not secure or microphone != "ok" or candidate is None:
            raise CheckError("a check that passed needs a secure page, a microphone and a candidate type")
        if rtt is not None and rtt > MAX_RTT_MS or loss is not None and loss > MAX_LOSS:
            raise CheckError(f"a check that passed has a round trip within {MAX_RTT_MS:.0f} ms and loss within "
                             f"{MAX_LOSS:.0%}")
    else:
        if reason is None:
            raise CheckError(f"a failed check needs a reason (one of: {', '.join(REASONS)})")
        if (reason == "insecure page") == secure:
            raise CheckError("the reason 'insecure page' goes with secure_context false, and only with it")
    return CheckResult(outcome, reason, secure, microphone, candidate, protocol, rtt, loss)


def _choice(body: dict, key: str, known: tuple[str, ...], required: bool = False) -> str | None:
    value = body.get(key)
    if value is None and not required:
        return None
    if value not in known:
        raise CheckError(f"{key} must be one of {', '.join(known)}, got {str(value)[:40]!r}")
    return value


def _number(body: dict, key: str, low: float, high: float) -> float | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not low <= value <= high:
        raise CheckError(f"{key} must be a number from {low:g} to {high:g}, got {str(value)[:40]!r}")
    return float(value)


def user_agent_problem(value) -> str | None:
    """Why the page's user agent cannot be stored (None when it can, or when none was sent)."""
    return text_field_problem(value, "user_agent", USER_AGENT_MAX)


def could_not_take_part(settings) -> dict | None:
    """What the page shows one who cannot take part: the study's code and its return link (with
    the code in place of `{code}`); None when the study has neither."""
    code, url = settings.could_not_take_part_code, settings.could_not_take_part_url
    if code is None and url is None:
        return None
    shown = {"code": code}
    if url is not None:
        shown["url"] = url.replace("{code}", code or "")
    return shown
