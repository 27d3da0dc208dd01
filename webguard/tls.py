"""HTTPS for the app: the certificate and key files checked at start-up, cookies marked Secure
over https, and the warning for a public address without TLS.

Browsers give a page the microphone only in a secure context: https, or a page of this computer
(localhost). A participant elsewhere therefore needs the app over https, served by the app itself
(`app.py --tls-cert --tls-key`) or by a TLS proxy in front of it.
"""

from __future__ import annotations

import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path

LOOPBACK_NAMES = ("localhost",)


class TlsError(ValueError):
    """Certificate and key files that cannot be served; the message names the file and why."""


@dataclass(frozen=True)
class TlsFiles:
    """A PEM certificate (its chain after it, as certbot's fullchain.pem) and its private key."""

    cert: Path
    key: Path


def _refuse_passphrase(*_):
    # Without a callback OpenSSL would ask for the passphrase on the terminal and wait.
    raise TlsError("the key is encrypted: give a key without a passphrase (openssl pkey -in KEY -out PLAIN)")


def check_tls_files(cert: str | None, key: str | None) -> TlsFiles | None:
    """The two files as given (None: plain HTTP), once Python's ssl module has loaded them as one
    certificate and its key; TlsError otherwise."""
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        given, missing = ("--tls-cert", "--tls-key") if key is None else ("--tls-key", "--tls-cert")
        raise TlsError(f"{given} needs {missing} too (the certificate and its private key)")
    files = TlsFiles(Path(cert), Path(key))
    for option, path in (("--tls-cert", files.cert), ("--tls-key", files.key)):
        try:
            path.read_bytes()
        except OSError as e:
            raise TlsError(f"cannot read {option} {path}: {e.strerror or e}") from None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(files.cert, files.key, password=_refuse_passphrase)
    except TlsError as e:
        raise TlsError(f"--tls-key {files.key}: {e}") from None
    except ssl.SSLError as e:
        if e.reason == "KEY_VALUES_MISMATCH":
            raise TlsError(f"--tls-key {files.key} is not the private key of the certificate in "
                           f"--tls-cert {files.cert}") from None
        detail = f" ({e.reason})" if e.reason else ""
        raise TlsError(f"--tls-cert {files.cert} and --tls-key {files.key} are not a PEM certificate and its "
                       f"private key{detail}") from None
    return files


def combined_pem(files: TlsFiles) -> bytes:
    """Certificate (with its chain) then key, in one PEM: what HAProxy's `crt` reads."""
    parts = [files.cert.read_bytes(), files.key.read_bytes()]
    return b"".join(part if part.endswith(b"\n") else part + b"\n" for part in parts)


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: reachable from elsewhere as far as we know
        return False


def plain_http_warning(host: str, port: int) -> str | None:
    """The start-up warning for a public address served without TLS (None on loopback)."""
    if is_loopback(host):
        return None
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return (f"warning: listening on {address} without TLS: participants' browsers will refuse the microphone "
            "(give --tls-cert and --tls-key, or put a TLS proxy in front; see docs/deploy.md)")


def with_secure(cookie: bytes) -> bytes:
    """A Set-Cookie value with the Secure attribute (unchanged if it has it)."""
    attributes = [part.strip().lower() for part in cookie.split(b";")[1:]]
    return cookie if b"secure" in attributes else cookie.rstrip() + b"; Secure"


class SecureCookies:
    """ASGI middleware: over https (the app's own TLS, or a trusted proxy's X-Forwarded-Proto that
    uvicorn applies) every cookie the app sets carries Secure, so a browser never sends it in
    clear. Gradio marks only one of its two login cookies Secure."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("scheme") != "https":
            await self.app(scope, receive, send)
            return

        async def send_secure(message):
            if message["type"] == "http.response.start":
                headers = [(name, with_secure(value) if name.lower() == b"set-cookie" else value)
                           for name, value in message.get("headers", [])]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_secure)
