"""A stand-in for `systemctl` where systemd does not run (the deployment guide's test runs the
guide's commands in namespaces of its own): it records every call, refuses units that have no unit
file, and starts a unit's service as systemd would start it: ExecStart as the unit's User and
Group, with its Environment and EnvironmentFile, WorkingDirectory, AmbientCapabilities,
NoNewPrivileges and PrivateTmp. Type=notify, restarts and dependencies are not emulated.

    FAKE_SYSTEMCTL_DIR       calls.jsonl (one JSON list of arguments per call), UNIT.pid, UNIT.log
    FAKE_SYSTEMCTL_PROVIDED  units that run already, outside (comma-separated; e.g. the test's PostgreSQL)
    FAKE_SYSTEMCTL_EXTRA     JSON {unit: [arguments appended to its ExecStart]}
"""

from __future__ import annotations

import json
import os
import pwd
import select
import shlex
import subprocess
import sys
from pathlib import Path

UNIT_DIRS = (Path("/etc/systemd/system"), Path("/lib/systemd/system"), Path("/usr/lib/systemd/system"))
SYSTEMD_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
STOP_TIMEOUT_S = 30  # systemd's TimeoutStopSec default is 90 s; a test waits less
INACTIVE = 3  # systemctl's exit status for a unit that is not active


def unit_file(unit: str) -> Path | None:
    return next((d / unit for d in UNIT_DIRS if (d / unit).is_file()), None)


def service_section(path: Path) -> dict[str, list[str]]:
    """The [Service] settings of a unit file, each key with its values in order (a line that ends
    in a backslash goes on on the next one)."""
    settings: dict[str, list[str]] = {}
    section, pending = None, ""
    for raw in path.read_text().splitlines():
        line = pending + raw.strip()
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        pending = ""
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line.strip("[]")
        elif section == "Service" and "=" in line:
            key, value = line.split("=", 1)
            settings.setdefault(key.strip(), []).append(value.strip())
    return settings


def environment_file(path: str) -> dict[str, str]:
    optional = path.startswith("-")
    path = path.lstrip("-")
    if optional and not Path(path).exists():
        return {}
    values = {}
    for line in Path(path).read_text().splitlines():
        line = line.strip()
        if line and not line.startswith(("#", ";")) and "=" in line:
            key, value = line.split("=", 1)
            values[key.strip()] = value.strip().strip('"')
    return values


def service_command(settings: dict[str, list[str]], extra: list[str]) -> tuple[list[str], dict, str]:
    """(argv, environment, working directory) of the unit's service."""
    user = settings.get("User", ["root"])[-1]
    group = settings.get("Group", [user])[-1]
    account = pwd.getpwnam(user)
    env = {"PATH": SYSTEMD_PATH, "LANG": "C.UTF-8", "HOME": account.pw_dir, "USER": user, "LOGNAME": user}
    for assignments in settings.get("Environment", []):
        env.update(dict(item.split("=", 1) for item in shlex.split(assignments)))
    for path in settings.get("EnvironmentFile", []):
        env.update(environment_file(path))
    exec_start = shlex.split(settings["ExecStart"][-1].lstrip("-@+!"))
    argv = ["setpriv", "--reuid", user, "--regid", group, "--init-groups"]
    if settings.get("NoNewPrivileges", ["no"])[-1] in ("yes", "true", "1"):
        argv.append("--no-new-privs")
    caps = [cap.lower().removeprefix("cap_")
            for line in settings.get("AmbientCapabilities", []) for cap in line.split()]
    if caps:
        listed = ",".join(f"+{cap}" for cap in caps)
        argv += ["--inh-caps", listed, "--ambient-caps", listed]
    argv += ["--", *exec_start, *extra]
    if settings.get("PrivateTmp", ["no"])[-1] in ("yes", "true", "1"):
        # A mount namespace of the service's own with an empty /tmp, as systemd gives it.
        argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                'mount -t tmpfs -o mode=1777 tmpfs /tmp && exec "$@"', "private-tmp", *argv]
    return argv, env, settings.get("WorkingDirectory", [account.pw_dir])[-1]


def is_running(pid: int) -> bool:
    """Whether the process runs (a zombie whose parent has not yet collected it does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


class Units:
    def __init__(self, state: Path, provided: set[str], extra: dict[str, list[str]]):
        self.state, self.provided, self.extra = state, provided, extra

    def pid(self, unit: str) -> int | None:
        path = self.state / f"{unit}.pid"
        if not path.exists():
            return None
        pid = int(path.read_text())
        return pid if is_running(pid) else None

    def is_active(self, unit: str) -> bool:
        return unit in self.provided or self.pid(unit) is not None

    def start(self, unit: str) -> int:
        """0, or a oneshot service's failing exit status. A timer only says it is there (its service
        is started by the time, which does not come in a test); a oneshot service runs to its end,
        as `systemctl start` waits for it."""
        if unit.endswith(".timer") or self.is_active(unit):
            return 0
        settings = service_section(unit_file(unit))
        argv, env, cwd = service_command(settings, self.extra.get(unit, []))
        with open(self.state / f"{unit}.log", "ab") as log:
            process = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=log,
                                       stderr=subprocess.STDOUT, start_new_session=True)
            if settings.get("Type", ["simple"])[-1] == "oneshot":
                return process.wait()
        (self.state / f"{unit}.pid").write_text(str(process.pid))
        return 0

    def stop(self, unit: str) -> None:
        pid = self.pid(unit)
        if pid is not None:
            os.killpg(pid, 15)
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:  # started by an earlier call: its pidfd turns readable when it exits
                try:
                    exited = os.pidfd_open(pid)
                except ProcessLookupError:
                    exited = None  # gone already
                if exited is not None:
                    gone, _, _ = select.select([exited], [], [], STOP_TIMEOUT_S)
                    os.close(exited)
                    if not gone:
                        os.killpg(pid, 9)
        (self.state / f"{unit}.pid").unlink(missing_ok=True)


def main(args: list[str]) -> int:
    state = Path(os.environ["FAKE_SYSTEMCTL_DIR"])
    with open(state / "calls.jsonl", "a") as calls:
        calls.write(json.dumps(args) + "\n")
    options = [a for a in args if a.startswith("-")]
    words = [a for a in args if not a.startswith("-")]
    if not words:
        print("systemctl: no command", file=sys.stderr)
        return 1
    command, units = words[0], [u if "." in u else f"{u}.service" for u in words[1:]]
    provided = {u for u in os.environ.get("FAKE_SYSTEMCTL_PROVIDED", "").split(",") if u}
    known = Units(state, provided, json.loads(os.environ.get("FAKE_SYSTEMCTL_EXTRA", "{}")))
    if command == "daemon-reload":
        return 0
    for unit in units:
        if unit_file(unit) is None and unit not in provided:
            print(f"Unit {unit} not found.", file=sys.stderr)
            return 5
    if command in ("is-active", "status"):
        active = [known.is_active(u) for u in units]
        if "--quiet" not in options and "-q" not in options:
            for unit, on in zip(units, active):
                print(f"{unit}: {'active (running)' if on else 'inactive (dead)'}")
        return 0 if all(active) else INACTIVE
    for unit in units:
        if command == "start" or (command == "enable" and "--now" in options):
            if known.start(unit) != 0:
                print(f"Job for {unit} failed (see {state / (unit + '.log')})", file=sys.stderr)
                return 1
        elif command == "restart" or (command == "try-restart" and known.is_active(unit)):
            if unit not in provided:
                known.stop(unit)
                known.start(unit)
        elif command == "stop" or (command == "disable" and "--now" in options):
            known.stop(unit)
        elif command not in ("enable", "disable", "try-restart"):
            print(f"systemctl (test stand-in): unknown command {command}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
