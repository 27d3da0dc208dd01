"""The ICE servers of every call, both ends, from one setting: STUN and TURN for participants who
are not on the server's network (home NAT routers, firewalls that drop UDP, a server behind a
cloud's 1:1 NAT that only knows its private address).

The setting is a JSON list in `RTCIceServer`'s shape, or an object with that list and a transport
policy, given in $TURNTAKING_ICE_SERVERS or in a file named by $TURNTAKING_ICE_SERVERS_FILE
(`app.py --ice-servers FILE` sets the latter, so the processes of `--workers N` read the same):

    {"iceServers": [
        {"urls": "stun:turn.example.org:3478"},
        {"urls": ["turn:turn.example.org:3478?transport=udp", "turn:turn.example.org:3478?transport=tcp",
                  "turns:turn.example.org:5349"],
         "secret_env": "TURN_SECRET", "ttl_s": 600}],
     "iceTransportPolicy": "relay"}

A TURN entry carries either static credentials (`username` and `credential`) or a shared secret,
named, never written in (`secret_env`: an environment variable; `secret_file`: a file), from which
each call gets its own short-lived credentials by the TURN REST scheme coturn implements with
`use-auth-secret` / `static-auth-secret`: username = "EXPIRY:WHO" (EXPIRY in Unix seconds), credential
= base64(HMAC-SHA1(secret, username)). Minted credentials go to the page and to aiortc for one call
and are never stored, logged or exported. `iceTransportPolicy: "relay"` (or
$TURNTAKING_ICE_RELAY_ONLY=1) makes the participant's browser use the relay alone: a way to test a
deployment's TURN server.

With no setting, the list is empty: calls connect between addresses the two ends can reach
directly (the server's own machine, one network), and aiortc contacts no public STUN server.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

ICE_SERVERS_ENV = "TURNTAKING_ICE_SERVERS"
ICE_SERVERS_FILE_ENV = "TURNTAKING_ICE_SERVERS_FILE"
RELAY_ONLY_ENV = "TURNTAKING_ICE_RELAY_ONLY"
SCHEMES = ("stun:", "stuns:", "turn:", "turns:")
DEFAULT_TTL_S = 600  # a call's credentials outlive its 5 minutes and the connection check
MAX_TTL_S = 86400
POLICIES = ("all", "relay")
# The URLs both ends can use: aiortc (aioice) parses a host name or IPv4 address with an optional
# port, and for TURN an optional transport; an IPv6 literal or a STUN transport it refuses.
URL_SHAPE = re.compile(r"(stuns?:[^?:\[\]/@\s]+(:[0-9]{1,5})?)"
                       r"|(turns?:[^?:\[\]/@\s]+(:[0-9]{1,5})?(\?transport=(udp|tcp))?)")


class IceConfigError(ValueError):
    """An ICE server setting that cannot be used; the message names where it came from."""


@dataclass(frozen=True)
class IceServer:
    """One STUN or TURN server (its URLs share the credentials)."""

    urls: tuple[str, ...]
    username: str | None = None  # static TURN credentials
    credential: str | None = None
    secret: str | None = None  # TURN REST shared secret: credentials minted per call (never sent)
    ttl_s: int = DEFAULT_TTL_S

    @property
    def is_turn(self) -> bool:
        return any(url.startswith(("turn:", "turns:")) for url in self.urls)

    def for_peer(self, who: str, now: float | None = None) -> dict:
        """This server as the page's `RTCIceServer`, with minted credentials where it has a secret."""
        entry: dict = {"urls": list(self.urls)}
        if self.secret is not None:
            entry["username"], entry["credential"] = turn_rest_credential(self.secret, turn_name(who), self.ttl_s, now)
        elif self.username is not None:
            entry["username"], entry["credential"] = self.username, self.credential
        return entry


@dataclass(frozen=True)
class IceSettings:
    """The ICE servers of the app's calls and whether the browser must relay."""

    servers: tuple[IceServer, ...] = ()
    relay_only: bool = False

    def for_peer(self, who: str, now: float | None = None) -> dict:
        """`RTCConfiguration` for one peer connection of `who` (a participant's pseudonym or a
        connection check's id): the page's `new RTCPeerConnection(...)` argument."""
        return {"iceServers": [server.for_peer(who, now) for server in self.servers],
                "iceTransportPolicy": "relay" if self.relay_only else "all"}

    def aiortc_configuration(self, peer: dict):
        """aiortc's `RTCConfiguration` with the servers (and the credentials) of `peer`, the
        configuration the page got for the same call.

        aiortc 1.16 uses only the first `stun:` URL and the first TURN URL it can use (`turn:` over
        udp or tcp, `turns:` over tcp), ignores `stuns:`, and waits at most 5 s for its server
        candidates: list the server's most useful STUN and TURN URL first. The browser uses
        them all. The server's end gathers every kind of candidate (the relay-only policy is
        the browser's: the relay reaches the server's own addresses)."""
        from aiortc import RTCConfiguration, RTCIceServer

        return RTCConfiguration(iceServers=[
            RTCIceServer(urls=entry["urls"], username=entry.get("username"), credential=entry.get("credential"))
            for entry in peer["iceServers"]])

    def describe(self) -> str:
        """One line for the start-up log, without credentials."""
        if not self.servers:
            return "no ICE servers: participants must reach this server directly"
        urls = ", ".join(url.split("?")[0] for server in self.servers for url in server.urls)
        return f"ICE servers {urls}" + (" (browsers relay only)" if self.relay_only else "")


NO_ICE_SERVERS = IceSettings()


def turn_name(who: str) -> str:
    """How a TURN username names `who`: 16 hex digits of its sha256, not the pseudonym itself. The
    TURN server logs usernames outside the data root, where an erasure cannot reach them; this
    name links to nobody once the participant's row is gone.

    >>> turn_name("check-7")
    'f5e8ecbb238fd74f'
    """
    return hashlib.sha256(who.encode("utf-8")).hexdigest()[:16]


def turn_rest_credential(secret: str, who: str, ttl_s: int = DEFAULT_TTL_S, now: float | None = None) -> tuple[str, str]:
    """(username, credential) valid for `ttl_s` from `now`, by the TURN REST scheme (coturn's
    `use-auth-secret`): the TURN server recomputes the HMAC from its copy of the secret and refuses
    the username once its expiry has passed.

    >>> turn_rest_credential("s3cret", "p-1", ttl_s=600, now=1_700_000_000)
    ('1700000600:p-1', 'l+48sr4INoMJIDQCxMaM/aLo/8c=')
    """
    expiry = int(time.time() if now is None else now) + int(ttl_s)
    username = f"{expiry}:{who}"
    digest = hmac.new(secret.encode("utf-8"), username.encode("utf-8"), hashlib.sha1).digest()
    return username, base64.b64encode(digest).decode("ascii")


def parse_ice_settings(data, source: str, environ=None) -> IceSettings:
    """The settings from the JSON value `data` (a list of servers, or an object with `iceServers`
    and `iceTransportPolicy`); IceConfigError naming `source` and the entry."""
    environ = os.environ if environ is None else environ
    policy = "all"
    if isinstance(data, dict):
        unknown = sorted(set(data) - {"iceServers", "iceTransportPolicy"})
        if unknown:
            raise IceConfigError(f"{source}: unknown key(s) {', '.join(unknown)} (known: iceServers, iceTransportPolicy)")
        policy = data.get("iceTransportPolicy", "all")
        if policy not in POLICIES:
            raise IceConfigError(f"{source}: iceTransportPolicy must be 'all' or 'relay', got {policy!r}")
        data = data.get("iceServers", [])
    if not isinstance(data, list):
        raise IceConfigError(f"{source}: must be a JSON list of ICE servers (or an object with 'iceServers')")
    servers = tuple(_server(entry, f"{source}: ICE server #{k}", environ) for k, entry in enumerate(data, 1))
    relay_only = policy == "relay" or environ.get(RELAY_ONLY_ENV, "") not in ("", "0")
    if relay_only and not any(server.is_turn for server in servers):
        raise IceConfigError(f"{source}: relay only needs a TURN server (a 'turn:' or 'turns:' URL)")
    return IceSettings(servers, relay_only)


def _server(entry, where: str, environ) -> IceServer:
    if not isinstance(entry, dict):
        raise IceConfigError(f"{where} must be an object with 'urls'")
    unknown = sorted(set(entry) - {"urls", "username", "credential", "secret_env", "secret_file", "ttl_s"})
    if unknown:
        hint = " (a shared secret is named with secret_env or secret_file, never written in)" if "secret" in unknown else ""
        raise IceConfigError(f"{where}: unknown key(s) {', '.join(unknown)}{hint}")
    urls = entry.get("urls")
    urls = [urls] if isinstance(urls, str) else urls
    if not isinstance(urls, list) or not urls or not all(isinstance(u, str) and u for u in urls):
        raise IceConfigError(f"{where}: 'urls' must be a URL or a list of URLs")
    for url in urls:
        if not url.startswith(SCHEMES):
            raise IceConfigError(f"{where}: {url!r} is not a stun:, stuns:, turn: or turns: URL")
        if not URL_SHAPE.fullmatch(url):
            raise IceConfigError(f"{where}: {url!r} is not SCHEME:HOST[:PORT] (a TURN URL may end in "
                                 "?transport=udp or ?transport=tcp; no IPv6 literal)")
    server = IceServer(tuple(urls))
    turn = server.is_turn
    named = [key for key in ("secret_env", "secret_file") if key in entry]
    static = "username" in entry or "credential" in entry
    if len(named) > 1 or (named and static):
        raise IceConfigError(f"{where}: give static credentials (username, credential) or one shared secret "
                             "(secret_env or secret_file), not both")
    if turn and not named and not static:
        raise IceConfigError(f"{where}: a TURN server needs username and credential, or secret_env / secret_file")
    if static:
        if not all(isinstance(entry.get(key), str) and entry[key] for key in ("username", "credential")):
            raise IceConfigError(f"{where}: static credentials need both 'username' and 'credential'")
        return IceServer(server.urls, username=entry["username"], credential=entry["credential"])
    if not named:
        return server
    ttl = entry.get("ttl_s", DEFAULT_TTL_S)
    if isinstance(ttl, bool) or not isinstance(ttl, int) or not 60 <= ttl <= MAX_TTL_S:
        raise IceConfigError(f"{where}: 'ttl_s' must be whole seconds from 60 to {MAX_TTL_S}, got {ttl!r}")
    return IceServer(server.urls, secret=_secret(entry, where, environ), ttl_s=ttl)


def _secret(entry: dict, where: str, environ) -> str:
    if "secret_env" in entry:
        name = entry["secret_env"]
        value = environ.get(name) if isinstance(name, str) else None
        if not value:
            raise IceConfigError(f"{where}: the environment variable {name!r} named by secret_env is not set")
        return value
    try:
        value = Path(entry["secret_file"]).read_text(encoding="utf-8").strip()
    except (OSError, TypeError, UnicodeDecodeError) as e:
        raise IceConfigError(f"{where}: cannot read secret_file {entry['secret_file']!r}: {e}") from None
    if not value:
        raise IceConfigError(f"{where}: secret_file {entry['secret_file']!r} is empty")
    return value


def ice_settings(environ=None) -> IceSettings:
    """The app's settings: from $TURNTAKING_ICE_SERVERS_FILE's file, else $TURNTAKING_ICE_SERVERS,
    else none; IceConfigError (one line) for a bad file or value."""
    environ = os.environ if environ is None else environ
    path = environ.get(ICE_SERVERS_FILE_ENV)
    if path:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise IceConfigError(f"cannot read the ICE server file {path}: {getattr(e, 'strerror', None) or e}") from None
        source = f"ICE server file {path}"
    elif environ.get(ICE_SERVERS_ENV):
        text, source = environ[ICE_SERVERS_ENV], f"${ICE_SERVERS_ENV}"
    else:
        if environ.get(RELAY_ONLY_ENV, "") not in ("", "0"):
            raise IceConfigError(f"${RELAY_ONLY_ENV} is set but no TURN server is configured")
        return NO_ICE_SERVERS
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise IceConfigError(f"{source} is not valid JSON: {e.msg} (line {e.lineno})") from None
    return parse_ice_settings(data, source, environ)
