"""The API keys between the app and realtime servers (`python -m studies serve-realtime`).

A study names a realtime system's key by reference, never by value: study configs are stored in
the database and go out with its exports, so `api_key: "..."` in a system's config is refused.

    config: {url: "wss://box:8443/v1/realtime", api_key_env: STUDY_REALTIME_KEY}    # read from the environment
    config: {url: "wss://box:8443/v1/realtime", api_key_file: /etc/turntaking/box.key}

The client reads the key when it connects. The server takes its key from `--api-key-file FILE` or
the environment variable REALTIME_KEY_ENV (not a plain argument: other users of the machine can
read the process list), and compares what a client sends in constant time.
"""

from __future__ import annotations

import hmac
import ipaddress
from pathlib import Path

REALTIME_KEY_ENV = "TURNTAKING_REALTIME_API_KEY"
KEY_REFERENCES = ("api_key_env", "api_key_file")
MIN_SERVER_KEY_CHARS = 16  # a server's key must resist guessing; a client sends whatever it is given
KEY_HINT = "e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))'"


class ApiKeyError(ValueError):
    """A key that cannot be had or used; the message says which and what to do."""


def key_reference_problem(config: dict) -> str | None:
    """What is wrong with how a system's `config` names its API key (None: nothing, or no key)."""
    if config.get("api_key") not in (None, ""):
        return ("holds a literal api_key, which would be stored in the database and exported: name the key "
                "instead with api_key_env: VARIABLE (an environment variable) or api_key_file: PATH")
    given = [name for name in KEY_REFERENCES if name in config]
    if len(given) > 1:
        return "names its key twice (api_key_env and api_key_file): give one"
    for name in given:
        if not isinstance(config[name], str) or not config[name].strip():
            what = "an environment variable's name" if name == "api_key_env" else "a file's path"
            return f"{name} must be {what}, got {config[name]!r}"
    return None


def _usable(key: str, where: str) -> str:
    """`key` without surrounding whitespace, refused when empty or not sendable in an HTTP header."""
    key = key.strip()
    if not key:
        raise ApiKeyError(f"{where} is empty")
    if not all("!" <= c <= "~" for c in key):
        raise ApiKeyError(f"{where} holds spaces or characters other than printable ASCII: it cannot go "
                          "in an Authorization header")
    return key


def _read_key_file(path: str, where: str) -> str:
    try:
        text = Path(path).expanduser().read_text(encoding="utf-8")
    except OSError as e:
        raise ApiKeyError(f"cannot read {where} {path}: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise ApiKeyError(f"{where} {path} is not text") from None
    return _usable(text, f"{where} {path}")


def client_key(config: dict, environ) -> str | None:
    """The key a realtime system's config names, read now from `environ` or its file (None: it
    names none). ApiKeyError when it cannot be had."""
    problem = key_reference_problem(config)
    if problem:
        raise ApiKeyError(f"the config {problem}")
    if "api_key_env" in config:
        name = config["api_key_env"].strip()
        if not environ.get(name):
            raise ApiKeyError(f"the environment variable {name} (api_key_env) is not set in the app's environment")
        return _usable(environ[name], f"the environment variable {name} (api_key_env)")
    if "api_key_file" in config:
        return _read_key_file(config["api_key_file"].strip(), "the key file (api_key_file)")
    return None


def server_key(key_file: str | None, environ) -> str | None:
    """The key a realtime server requires: from `key_file`, else the environment variable
    REALTIME_KEY_ENV; None when neither is given. ApiKeyError for both, or an unusable key."""
    from_env = environ.get(REALTIME_KEY_ENV)
    if key_file is not None and from_env:
        raise ApiKeyError(f"both --api-key-file and {REALTIME_KEY_ENV} are set: give the key one way")
    if key_file is not None:
        key = _read_key_file(key_file, "the key file")
    elif from_env:
        key = _usable(from_env, f"the environment variable {REALTIME_KEY_ENV}")
    else:
        return None
    if len(key) < MIN_SERVER_KEY_CHARS:
        raise ApiKeyError(f"the server's key has {len(key)} characters; it needs at least {MIN_SERVER_KEY_CHARS} "
                          f"to resist guessing ({KEY_HINT})")
    return key


def is_loopback(host: str) -> bool:
    """Whether listening on `host` keeps a server to this machine ("" and 0.0.0.0 are every
    address; a name other than localhost may resolve anywhere)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bearer_matches(authorization: list[str], key: str) -> bool:
    """Whether the request's Authorization header values are exactly one `Bearer <key>`
    (compared in constant time: the answer's timing tells nothing of the key)."""
    if len(authorization) != 1:
        return False
    scheme, _, given = authorization[0].strip().partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(given.strip().encode("utf-8", "surrogateescape"), key.encode("utf-8"))


def bearer_header(config: dict, environ) -> dict:
    """`{"Authorization": "Bearer KEY"}` for the key `config` names ({} when it names none);
    ApiKeyError when it cannot be had."""
    key = client_key(config, environ)
    return {"Authorization": f"Bearer {key}"} if key else {}
