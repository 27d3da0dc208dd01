"""Request bodies read with a cap: the declared Content-Length is checked before anything is
read, and the stream is cut off at the cap (a client may lie about, or omit, the length), so a
huge body is refused without being buffered. JSON that is too deeply nested for the parser is a
bad request, not a server error."""

from __future__ import annotations

import json

from fastapi import Request

JSON_MAX_BYTES = 64 * 1024  # every JSON request of the public areas is a few hundred bytes


class BodyError(ValueError):
    """A body that is refused; `status` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


async def read_capped(request: Request, max_bytes: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            length = int(declared)
        except ValueError:
            raise BodyError(400, "the Content-Length header is not a number") from None
        if length > max_bytes:
            raise BodyError(413, f"the request body is larger than {max_bytes} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise BodyError(413, f"the request body is larger than {max_bytes} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def read_json(request: Request, max_bytes: int = JSON_MAX_BYTES):
    """The parsed JSON body (any JSON value); BodyError when it is too large or not JSON."""
    data = await read_capped(request, max_bytes)
    try:
        return json.loads(data)
    except (ValueError, RecursionError):  # RecursionError: nesting deeper than the parser goes
        raise BodyError(400, "the request body is not JSON") from None


def text_field_problem(value, name: str, max_chars: int) -> str | None:
    """Why an optional text field of a JSON body cannot be stored (None when it can, or when it is
    absent): not a string, longer than `max_chars`, or holding control characters or lone
    surrogates (PostgreSQL stores neither).

    >>> text_field_problem("PROLIFIC-5f3a", "external_id", 200) is None
    True
    >>> text_field_problem("a\\nb", "external_id", 200)
    'external_id contains control characters'
    """
    if value is None:
        return None
    if not isinstance(value, str):
        return f"{name} must be a string"
    if len(value) > max_chars:
        return f"{name} is longer than {max_chars} characters"
    if any(ord(c) < 32 or 0xD800 <= ord(c) <= 0xDFFF for c in value):
        return f"{name} contains control characters"
    return None


def missing_text(body: dict, keys) -> str | None:
    """The first of `keys` that is not a non-empty string without NUL in `body` (None: all are).

    >>> missing_text({"sdp": "v=0", "type": ""}, ("sdp", "type"))
    'type'
    """
    return next((key for key in keys
                 if not isinstance(body.get(key), str) or not body[key] or "\0" in body[key]), None)
