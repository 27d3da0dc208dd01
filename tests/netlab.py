"""A small network of Linux network namespaces for tests of remote participants: a participant's
machine behind a firewall that drops UDP, a router that holds a TURN server (Debian's coturn), and
the study's server, joined by veth pairs.

    participant ns                 router ns                            server ns
    PARTICIPANT_ADDR  <-veth->  ROUTER_PARTICIPANT_ADDR
                                ROUTER_SERVER_ADDR       <-veth->  SERVER_ADDR

The router forwards TCP between the two sides (HTTP to the app works) and drops every forwarded UDP
datagram (iptables-legacy FORWARD), so a direct WebRTC path between participant and server fails
as behind a strict firewall. It also drops the UDP the participant sends to the router itself
(INPUT): the participant's only way out is TCP, TURN over TCP included, as on a network that lets
no UDP out; otherwise the participant could reach, over UDP, the relayed address that the server's
own TURN allocation opens on the router, which a firewall blocking UDP would not let through.
`Lab.udp_to_router(port)` opens one of the router's UDP ports to the participant for a while (a
participant on a network that passes UDP, to a relay in front of coturn). What the router itself
sends (TURN's relayed media to the server) passes. No namespace has a default route: the only addresses anything in the
lab can reach are the lab's own and loopback. The namespaces are named after the test process
(`tt<pid>-part`, `-turn`, `-srv`); a lab removes them at exit, and at its start those of runs whose
process is gone (killed mid-run), with what still runs in them.

    with Lab.for_this_process() as lab, coturn(lab, work_dir) as turn, \
            serve_in_namespace(app, lab.server, SERVER_ADDR, 8000):
        context = participant_browser(playwright, lab, work_dir, 8000, mic_file=...)
        context.pages[0].goto(f"http://{SITE_NAME}:8000/participate/...")

The app runs in this process (its loaded models are shared), its sockets in the server namespace;
coturn and Chromium are processes started there with `ip netns exec`; a helper that needs a socket
in a namespace runs on a thread that joined it (run_in_namespace).

Needs root (ip netns, veth, iptables-legacy) and Debian's coturn (`apt-get install coturn iptables`).
A thread joins a namespace with setns(2) through ctypes (Python 3.11 has no os.setns); the join
applies to that thread alone, and to the threads it starts.
"""

from __future__ import annotations

import ctypes
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


from tests.browser import CHROMIUM, CHROMIUM_ARGS, serve
from tests.waiting import poll

PREFIX = "tt"
ROLES = ("part", "turn", "srv")
NAME_PATTERN = re.compile(rf"^{PREFIX}(\d+)-({'|'.join(ROLES)})$")
PARTICIPANT_ADDR = "10.201.1.2"
ROUTER_PARTICIPANT_ADDR = "10.201.1.1"
ROUTER_SERVER_ADDR = "10.201.2.1"
SERVER_ADDR = "10.201.2.2"
PARTICIPANT_NET = "10.201.1.0/24"
SERVER_NET = "10.201.2.0/24"
CLONE_NEWNET = 0x40000000
TURN_PORT = 3478
TURN_REALM = "study.test"
# coturn's relayed ports: a small range, enough for a few calls (each allocation takes one).
RELAY_PORTS = (49160, 49260)
START_TIMEOUT_S = 15.0

_libc = ctypes.CDLL(None, use_errno=True)


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


def _namespaces() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], check=True, capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_namespace(name: str) -> None:
    """Delete namespace `name`, first ending the processes still in it (a killed run's coturn or
    relay: they would hold its interfaces and ports)."""
    pids = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True).stdout.split()
    for pid in pids:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass
    subprocess.run(["ip", "netns", "del", name], capture_output=True)


def remove_stray_namespaces() -> list[str]:
    """Delete the lab namespaces of runs that are gone (their creating process no longer exists);
    returns their names. A running test process's lab is left alone."""
    removed = []
    for name in _namespaces():
        match = NAME_PATTERN.match(name)
        if match and not _alive(int(match.group(1))):
            _remove_namespace(name)
            removed.append(name)
    return removed


def join_namespace(name: str) -> None:
    """Move the calling thread (only it) into network namespace `name`."""
    fd = os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"setns into {name}: {os.strerror(errno)}")
    finally:
        os.close(fd)


def run_in_namespace(name: str, function, *args, **kwargs):
    """`function(*args, **kwargs)` on a new thread in namespace `name`; its value, or its exception."""
    result: dict = {}

    def target():
        try:
            join_namespace(name)
            result["value"] = function(*args, **kwargs)
        except BaseException as e:  # handed to the caller
            result["error"] = e

    thread = threading.Thread(target=target, name=f"netns:{name}", daemon=True)
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]
    return result.get("value")


@dataclass(frozen=True)
class Lab:
    """The three namespaces' names (unique to this process); a context manager that creates them,
    their links, routes and the router's firewall, and removes them all at exit."""

    participant: str
    router: str
    server: str

    @classmethod
    def for_this_process(cls) -> "Lab":
        pid = os.getpid()
        return cls(*(f"{PREFIX}{pid}-{role}" for role in ROLES))

    def __enter__(self) -> "Lab":
        remove_stray_namespaces()
        self.remove()  # a killed run of an earlier process with this one's id
        try:
            self._create()
        except BaseException:
            self.remove()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.remove()

    def _create(self) -> None:
        pid = os.getpid()
        for name in (self.participant, self.router, self.server):
            _ip("netns", "add", name)
            _ip("-n", name, "link", "set", "lo", "up")
        # veth ends are named in the host namespace before they move: unique per process there.
        links = [(self.participant, f"{PREFIX}{pid}pr", PARTICIPANT_ADDR, self.router, self.router_participant_side,
                  ROUTER_PARTICIPANT_ADDR),
                 (self.server, f"{PREFIX}{pid}sr", SERVER_ADDR, self.router, f"{PREFIX}{pid}rs", ROUTER_SERVER_ADDR)]
        for ns_a, if_a, addr_a, ns_b, if_b, addr_b in links:
            _ip("link", "add", if_a, "type", "veth", "peer", "name", if_b)
            for ns, interface, address in ((ns_a, if_a, addr_a), (ns_b, if_b, addr_b)):
                _ip("link", "set", interface, "netns", ns)
                _ip("-n", ns, "addr", "add", f"{address}/24", "dev", interface)
                _ip("-n", ns, "link", "set", interface, "up")
        # routes to the other side only (no default route: nothing else is reachable)
        _ip("-n", self.participant, "route", "add", SERVER_NET, "via", ROUTER_PARTICIPANT_ADDR)
        _ip("-n", self.server, "route", "add", PARTICIPANT_NET, "via", ROUTER_SERVER_ADDR)
        self.exec(self.router, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1")
        self.exec(self.router, "iptables-legacy", "-A", "FORWARD", "-p", "udp", "-j", "DROP")
        self.exec(self.router, "iptables-legacy", "-A", "INPUT", "-i", self.router_participant_side, "-p", "udp",
                  "-j", "DROP")

    @property
    def router_participant_side(self) -> str:
        """The router's interface to the participant's network."""
        return f"{PREFIX}{self.participant.removeprefix(PREFIX).split('-')[0]}rp"

    @contextmanager
    def udp_to_router(self, port: int):
        """While inside: the participant may send UDP to the router's `port` (one rule ahead of
        the drop, removed at exit)."""
        rule = ["INPUT", "-i", self.router_participant_side, "-p", "udp", "--dport", str(port), "-j", "ACCEPT"]
        self.exec(self.router, "iptables-legacy", "-I", *rule)
        try:
            yield
        finally:
            self.exec(self.router, "iptables-legacy", "-D", *rule)

    def remove(self) -> None:
        for name in (self.participant, self.router, self.server):
            if name in _namespaces():
                _remove_namespace(name)

    @staticmethod
    def exec(namespace: str, *command: str) -> str:
        """Run `command` in `namespace`; its standard output (an error names the command and its stderr)."""
        done = subprocess.run(["ip", "netns", "exec", namespace, *command], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} in {namespace} failed: {done.stderr.strip()}")
        return done.stdout

    def dropped_udp(self, chain: str = "FORWARD") -> int:
        """Datagrams the router's firewall has dropped in `chain`: FORWARD, the participant's to
        the server (a failed direct path shows here), or INPUT, the participant's to the router."""
        out = self.exec(self.router, "iptables-legacy", "-L", chain, "-v", "-x", "-n")
        return sum(int(line.split()[0]) for line in out.splitlines() if " DROP " in f" {line} ")


def listening(pid: int, protocol: str, address: str, port: int) -> bool:
    """Whether a socket of process `pid`'s network namespace is bound to address:port (TCP in
    LISTEN state, or UDP), read from /proc/PID/net (the namespace's own tables)."""
    wanted = f"{socket.htonl(int.from_bytes(socket.inet_aton(address), 'big')):08X}:{port:04X}"
    try:
        lines = Path(f"/proc/{pid}/net/{protocol}").read_text().splitlines()[1:]
    except OSError:
        return False
    for line in lines:
        fields = line.split()
        if fields[1] == wanted and (protocol == "udp" or fields[3] == "0A"):
            return True
    return False


@dataclass(frozen=True)
class TurnServer:
    """A running coturn: where it listens, the TURN REST secret it checks, its log (coturn may add
    a date to the log file's name)."""

    host: str  # on the participant's side
    port: int
    secret: str
    realm: str
    log: Path
    process: subprocess.Popen

    def log_text(self) -> str:
        """coturn's log (for failure messages: why an allocation was refused)."""
        return "".join(p.read_text(errors="replace") for p in sorted(self.log.parent.glob(f"{self.log.stem}*{self.log.suffix}")))


@contextmanager
def coturn(lab: Lab, work_dir: Path, secret: str | None = None, extra: tuple[str, ...] = ()):
    """Debian's `turnserver` in the router namespace, listening on both of the router's addresses
    and relaying from the server side, TURN REST credentials (use-auth-secret) with a random
    secret, no TLS; yields a TurnServer once it listens on TCP and UDP."""
    turnserver = shutil.which("turnserver")
    if turnserver is None:
        raise RuntimeError("turnserver not found: apt-get install -y coturn")
    work_dir.mkdir(parents=True, exist_ok=True)
    secret = secret or secrets.token_hex(16)
    log = work_dir / "turnserver.log"
    config = work_dir / "turnserver.conf"
    config.write_text("\n".join([
        f"listening-ip={ROUTER_PARTICIPANT_ADDR}",
        f"listening-ip={ROUTER_SERVER_ADDR}",
        f"listening-port={TURN_PORT}",
        # relayed addresses on the server's side: the server reaches them without the firewall
        # (the router's own traffic is not forwarded), and so does the participant's side.
        f"relay-ip={ROUTER_SERVER_ADDR}",
        f"min-port={RELAY_PORTS[0]}",
        f"max-port={RELAY_PORTS[1]}",
        f"userdb={work_dir / 'turndb'}",  # not the system's /var/lib/turn
        "use-auth-secret",
        f"static-auth-secret={secret}",
        f"realm={TURN_REALM}",
        "fingerprint",
        "no-tls",
        "no-dtls",
        "no-cli",
        "no-multicast-peers",
        "no-stdout-log",
        f"log-file={log}",
        "simple-log",
        f"pidfile={work_dir / 'turnserver.pid'}",
        *extra,
    ]) + "\n")
    errors = work_dir / "turnserver.stderr"
    with open(errors, "wb") as stderr:  # a file, not a pipe nobody reads
        process = subprocess.Popen(["ip", "netns", "exec", lab.router, turnserver, "-c", str(config)],
                                   stdout=subprocess.DEVNULL, stderr=stderr)
    server = TurnServer(ROUTER_PARTICIPANT_ADDR, TURN_PORT, secret, TURN_REALM, log, process)
    try:
        # `ip netns exec` execs turnserver in place: the process id is coturn's.
        def ready() -> bool:
            return (listening(process.pid, "tcp", ROUTER_PARTICIPANT_ADDR, TURN_PORT)
                    and listening(process.pid, "udp", ROUTER_PARTICIPANT_ADDR, TURN_PORT))

        if not poll(lambda: ready() or process.poll() is not None, START_TIMEOUT_S, poll_s=0.05) or not ready():
            raise RuntimeError(f"turnserver did not start (exit {process.poll()}): "
                               f"{errors.read_text(errors='replace')}\n{server.log_text()[-3000:]}")
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def serve_in_namespace(app, namespace: str, host: str, port: int = 8000):
    """tests.browser.serve, its uvicorn thread first joining `namespace`: the app's listening
    socket and every socket its event loop opens (aiortc's ICE candidates) live there, while the
    app's objects (the cascade's loaded models) stay shared with this process. Yields the base URL."""
    return serve(app, host, port, on_thread=lambda: join_namespace(namespace))


def chromium_in_namespace(namespace: str, work_dir: Path) -> Path:
    """An executable that runs Debian's Chromium in `namespace` with the arguments it is given
    (Playwright launches it as its browser; its pipes pass through `ip netns exec`)."""
    if not CHROMIUM.exists():
        raise RuntimeError(f"{CHROMIUM} not found: apt-get install -y chromium")
    wrapper = work_dir / f"chromium-in-{namespace}"
    wrapper.write_text(f'#!/bin/sh\nexec ip netns exec {namespace} {CHROMIUM} "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


SITE_NAME = "study.test"


def participant_browser(playwright, lab: Lab, work_dir: Path, server_port: int, mic_file: Path | None = None,
                        namespace: str | None = None):
    """A Playwright persistent context of Chromium in the participant's namespace (or `namespace`:
    the server's, for a browser on the server's own network), with a fake
    microphone playing `mic_file` (looped), autoplay, and SITE_NAME resolving to the server: pages
    open http://SITE_NAME:PORT/..., a name that is not localhost (so the origin is declared secure
    for the microphone, as HTTPS would be)."""
    work_dir.mkdir(parents=True, exist_ok=True)
    origin = f"http://{SITE_NAME}:{server_port}"
    args = list(CHROMIUM_ARGS) + ["--autoplay-policy=no-user-gesture-required",
                                  f"--host-resolver-rules=MAP {SITE_NAME} {SERVER_ADDR}",
                                  f"--unsafely-treat-insecure-origin-as-secure={origin}"]
    if mic_file is not None:
        args += ["--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
                 f"--use-file-for-fake-audio-capture={mic_file}"]
    context = playwright.chromium.launch_persistent_context(
        str(work_dir / "profile"), executable_path=str(chromium_in_namespace(namespace or lab.participant, work_dir)),
        headless=True, args=args)
    context.set_default_timeout(60_000)
    return context
