"""Several app processes behind one address: `python app.py --workers N` (used by app.py only).

N copies of the app listen on consecutive free ports of 127.0.0.1; HAProxy listens on the
public --host/--port and hands each browser to one of them. Routing must be sticky per
browser: Gradio keeps a browser's state in the process that served it (POST /queue/join and the
SSE stream of /queue/data must reach the same process), and a WebRTC call lives in the process
that answered its /offer (the later /end and /listener of that call must reach it). HAProxy
inserts a cookie naming the worker on the first answer (`cookie ... insert indirect nocache`)
and sends every later request carrying it to that worker; HTTP, server-sent events and
WebSockets all pass. Every answer says which worker gave it (header X-Turntaking-Worker).

With a certificate (`--tls-cert`, `--tls-key`) HAProxy terminates TLS on the front: it reads the
certificate and key from one PEM file, written with mode 0600 into the private temporary
directory and removed with it at exit; the workers stay plain HTTP on 127.0.0.1 and learn the
browser's scheme from X-Forwarded-Proto (their cookies then carry Secure, as does HAProxy's).

This process supervises: it starts the workers, waits until each answers, then runs haproxy in
the foreground; a worker that dies is started again on its port (haproxy's health checks send its
browsers elsewhere meanwhile, and back once it answers); Ctrl-C or SIGTERM stops everything.
The haproxy config and its stats socket (`echo "show stat" | socat - UNIX:.../haproxy.sock`)
live in a temporary directory, printed at start-up.

Stdlib only: this module knows nothing of the app but the command that starts one worker.
"""

from __future__ import annotations

import http.client
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

WORKER_ENV = "TURNTAKING_WORKER"  # set in each worker process: its name (e.g. "w2")
WORKER_HEADER = "X-Turntaking-Worker"
STICKY_COOKIE = "turntaking_worker"
MAX_WORKERS = 32  # each worker loads the dialogue systems' models: more is a typo, not a plan
START_TIMEOUT_S = 600.0  # a worker's first answer (it migrates nothing: the database is ready)
CHECK_EVERY_S = 1.0
RESTART_DELAY_S = (1.0, 30.0)  # first delay, longest delay (doubling while a worker keeps dying young)
STOP_GRACE_S = 10.0


class WorkersError(RuntimeError):
    """A setting or environment that keeps the workers from starting; the message says which."""


@dataclass(frozen=True)
class Worker:
    name: str
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def check_worker_count(n: int) -> None:
    if not 1 <= n <= MAX_WORKERS:
        raise WorkersError(f"--workers {n}: give 1 to {MAX_WORKERS} (each worker loads the dialogue systems' models)")


def find_haproxy() -> str:
    found = shutil.which("haproxy") or next((p for p in ("/usr/sbin/haproxy", "/usr/local/sbin/haproxy")
                                             if os.access(p, os.X_OK)), None)
    if found is None:
        raise WorkersError("--workers needs HAProxy, which is not installed: apt-get install haproxy (make setup does)")
    return found


def port_is_free(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def consecutive_free_ports(n: int, start: int, host: str = "127.0.0.1") -> list[int]:
    """The first run of `n` free ports at or after `start`."""
    port = start
    while port + n <= 65536:
        run = [p for p in range(port, port + n) if port_is_free(host, p)]
        if len(run) == n:
            return run
        port += 1
    raise WorkersError(f"no {n} consecutive free ports after {start} on {host}")


def plan_workers(n: int, front_port: int) -> list[Worker]:
    ports = consecutive_free_ports(n, front_port + 1 if front_port < 65000 else 20000)
    return [Worker(f"w{i + 1}", port) for i, port in enumerate(ports)]


def haproxy_config(host: str, port: int, workers: list[Worker], stats_socket: Path,
                   certificate: Path | None = None) -> str:
    """`certificate`: the combined PEM (certificate, chain, key); HAProxy then speaks only https."""
    servers = "\n".join(f"    server {w.name} 127.0.0.1:{w.port} cookie {w.name} check" for w in workers)
    tls = f" ssl crt {certificate}" if certificate is not None else ""
    # Over https the workers must know it (their cookies get Secure); set, never appended.
    scheme = "\n    http-request set-header X-Forwarded-Proto https" if certificate is not None else ""
    secure = " secure" if certificate is not None else ""
    return f"""# Written by app_workers.py for `python app.py --workers {len(workers)}`; rewritten at each start.
global
    maxconn 4096
    stats socket {stats_socket} mode 600 level user

defaults
    mode http
    timeout connect 5s
    # Slow senders of a request head are cut off; answers may take long (a researcher's first
    # view computes), server-sent events and WebSockets stay open for as long as they talk.
    timeout http-request 30s
    timeout client 10m
    timeout server 10m
    timeout tunnel 1h
    timeout queue 30s
    # A busy worker (a researcher's view computing, a loaded machine) may take seconds to answer
    # its health check; the default (the check interval, 1 s) took such a live worker out of service.
    timeout check 5s
    # A request whose worker does not answer (it died) goes to another one.
    option redispatch
    retries 2

frontend app
    bind {host}:{port}{tls}
    # The workers trust this header from 127.0.0.1 (uvicorn's proxy headers): the login throttle
    # counts the browser's address, not haproxy's. Set, never appended: a client cannot forge it.
    http-request set-header X-Forwarded-For %[src]{scheme}
    default_backend workers

backend workers
    balance leastconn
    # Sticky per browser: Gradio's queue and a WebRTC call live in one worker process.
    cookie {STICKY_COOKIE} insert indirect nocache httponly{secure}
    option httpchk GET /
    http-check expect status 200
    default-server inter {CHECK_EVERY_S:g}s fall 2 rise 1
    http-response set-header {WORKER_HEADER} %s
{servers}
"""


def _answers(url: str, context: ssl.SSLContext | None = None) -> bool:
    """Whether `url` answers GET / with 200; False, not an exception, for anything else.

    Polling a port nobody listens on yet can connect the poll to itself (TCP simultaneous open,
    when the kernel picks that same port as the source; worker ports may be ephemeral ones). The
    poll then reads its own request back: not an HTTP status line (http.client.BadStatusLine)."""
    try:
        with urllib.request.urlopen(url + "/", timeout=2, context=context) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError, http.client.HTTPException):
        return False


def write_private_file(path: Path, content: bytes) -> Path:
    """`content` in a new file that only this user can read (mode 0600 from its creation on)."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as f:
        f.write(content)
    return path


def _stop(signum, frame):
    raise KeyboardInterrupt


class Supervisor:
    """Starts the workers and haproxy, restarts workers that die, stops everything at the end."""

    def __init__(self, workers: list[Worker], worker_command, env: dict, haproxy: str, host: str, port: int,
                 tls_pem: bytes | None = None):
        """`tls_pem`: certificate, chain and key in one PEM: the front speaks https with it."""
        self.workers, self.worker_command, self.env = workers, worker_command, env
        self.tls_pem = tls_pem
        self.haproxy, self.host, self.port = haproxy, host, port
        self.processes: dict[str, subprocess.Popen] = {}
        self.started_at: dict[str, float] = {}
        self.restart_at: dict[str, float] = {}
        self.delay: dict[str, float] = {w.name: RESTART_DELAY_S[0] for w in workers}
        self.front: subprocess.Popen | None = None
        self.state_dir = Path(tempfile.mkdtemp(prefix="turntaking-front-"))

    def start_worker(self, worker: Worker) -> None:
        process = subprocess.Popen(self.worker_command(worker), env={**self.env, WORKER_ENV: worker.name})
        self.processes[worker.name], self.started_at[worker.name] = process, time.monotonic()
        print(f"worker {worker.name}: pid {process.pid} on 127.0.0.1:{worker.port}", flush=True)

    def wait_until_answering(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        waiting = list(self.workers)
        while waiting:
            for worker in list(waiting):
                code = self.processes[worker.name].poll()
                if code is not None:
                    raise WorkersError(f"worker {worker.name} exited with code {code} while starting (its output is above)")
                if _answers(worker.url):
                    waiting.remove(worker)
            if waiting and time.monotonic() > deadline:
                raise WorkersError(f"workers {', '.join(w.name for w in waiting)} did not answer within {START_TIMEOUT_S:g} s")
            time.sleep(0.3)

    def start_front(self) -> None:
        config = self.state_dir / "haproxy.cfg"
        certificate = None
        if self.tls_pem is not None:
            certificate = write_private_file(self.state_dir / "front.pem", self.tls_pem)
        config.write_text(haproxy_config(self.host, self.port, self.workers, self.state_dir / "haproxy.sock",
                                         certificate))
        checked = subprocess.run([self.haproxy, "-c", "-q", "-f", str(config)], capture_output=True, text=True)
        if checked.returncode != 0:
            reason = (checked.stderr or checked.stdout).strip().splitlines()
            raise WorkersError(f"haproxy refused its config {config}: {reason[-1] if reason else checked.returncode}")
        # -db: stay in the foreground, as this process's child.
        self.front = subprocess.Popen([self.haproxy, "-db", "-f", str(config)])
        local = {"0.0.0.0": "127.0.0.1", "::": "[::1]"}.get(self.host, f"[{self.host}]" if ":" in self.host else self.host)
        scheme, context = "http", None
        if certificate is not None:
            # Our own front, reached by address: its certificate names the public host, not this one.
            scheme, context = "https", ssl.create_default_context()
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        deadline = time.monotonic() + 30
        while not _answers(f"{scheme}://{local}:{self.port}", context):
            if self.front.poll() is not None or time.monotonic() > deadline:
                raise WorkersError(f"haproxy did not start on {self.host}:{self.port} (its output is above)")
            time.sleep(0.2)
        print(f"front: haproxy pid {self.front.pid} on {self.host}:{self.port} "
              f"(config and stats socket in {self.state_dir})", flush=True)

    def watch_once(self) -> None:
        """One round of supervision: restart dead workers (after a delay), notice a dead front."""
        if self.front is not None and self.front.poll() is not None:
            raise WorkersError(f"haproxy stopped (exit code {self.front.returncode}); stopping the workers")
        now = time.monotonic()
        for worker in self.workers:
            name = worker.name
            if name in self.restart_at:
                if now >= self.restart_at[name]:
                    del self.restart_at[name]
                    self.start_worker(worker)
                continue
            code = self.processes[name].poll()
            if code is None:
                continue
            # One that dies young again waits longer each time, so a broken worker does not spin.
            lived = now - self.started_at[name]
            self.delay[name] = RESTART_DELAY_S[0] if lived > 60 else min(self.delay[name] * 2, RESTART_DELAY_S[1])
            print(f"worker {name} exited with code {code} after {lived:.0f} s: starting it again in "
                  f"{self.delay[name]:g} s", file=sys.stderr, flush=True)
            self.restart_at[name] = now + self.delay[name]

    def stop(self) -> None:
        children = [p for p in [self.front, *self.processes.values()] if p is not None and p.poll() is None]
        for process in children:
            process.terminate()
        deadline = time.monotonic() + STOP_GRACE_S
        for process in children:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        shutil.rmtree(self.state_dir, ignore_errors=True)

    def run(self, started=lambda: None) -> int:
        """Until Ctrl-C / SIGTERM (0) or a failure (1, said in one line on stderr). `started` is
        called once the front answers (the caller prints its links then)."""
        previous = signal.signal(signal.SIGTERM, _stop)
        try:
            for worker in self.workers:
                self.start_worker(worker)
            self.wait_until_answering()
            self.start_front()
            started()
            while True:
                self.watch_once()
                time.sleep(0.5)
        except KeyboardInterrupt:
            return 0
        except WorkersError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        finally:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # stopping is not interrupted by a second one
            self.stop()
            signal.signal(signal.SIGTERM, previous)
