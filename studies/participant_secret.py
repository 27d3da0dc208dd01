"""The secret a participant gets at consent: every later action of theirs (starting a call,
ending it, uploading what they heard) carries it, so that knowing a pseudonym or a (sequential)
session id is not enough to act for someone.

Only its sha256 is stored; comparison is in constant time. The page keeps the secret in the
tab's sessionStorage and sends it in the `X-Participant-Secret` header.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

HEADER = "X-Participant-Secret"


def new_secret() -> tuple[str, str]:
    """(secret for the participant, its sha256 to store)."""
    secret = secrets.token_urlsafe(32)
    return secret, secret_sha256(secret)


def secret_sha256(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def secret_matches(stored_sha256: str | None, given: str | None) -> bool:
    """True when `given` is the secret whose hash was stored (never when none was stored)."""
    if not stored_sha256 or not given or len(given) > 200:
        return False
    return hmac.compare_digest(stored_sha256, secret_sha256(given))
