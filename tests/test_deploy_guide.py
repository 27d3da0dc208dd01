"""docs/deploy.md, run: every ```sh block of the guide, in order, in one bash as root, then what a
remote participant's machine finds.

Where it runs: a network namespace of the server (its "public" address SERVER_ADDR on a veth pair
to a participant's namespace; no route anywhere else), with a mount namespace in which /etc, /var
and /opt are overlays on the host's (what the guide writes lands in this test's tmp dir) and
/opt/turntaking is this checkout. So the guide's sysctl and firewall change that namespace alone,
and its useradd, config files and unit files the overlays alone.

What is substituted, and why:
- `systemctl`: systemd does not run here. tests/fake_systemctl.py records the calls, refuses unit
  files that do not exist and starts a unit's service as systemd would (User, Group, Environment,
  AmbientCapabilities, PrivateTmp); the guide's unit file is also checked by `systemd-analyze verify`.
- `apt-get`: nothing is installed; the stand-in checks that every package named is a Debian
  package installed here (the suite's set-up installs them) and records them.
- PostgreSQL: the test session's server (tests/databases.py), its socket mounted at Debian's
  /run/postgresql/.s.PGSQL.5432, so the guide's createuser/createdb and the app's URL reach it as
  written (it trusts local connections instead of Debian's peer check).
- The certificate: the guide's self-signed trial certificate (certbot needs Let's Encrypt to reach
  the server); curl and the probes trust it as a browser trusts Let's Encrypt's.
- The app's service gets `--no-model-preload --no-background-analysis`: the test checks the
  network path, and loading the dialogue systems' models takes minutes of the CPUs.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlalchemy as sa

from storage.db import normalize_url
from studies.ice import turn_rest_credential
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "deploy.md"
# TEST-NET-1 (RFC 5737): the server's public address and a participant's, inside the namespaces.
SERVER_ADDR, PARTICIPANT_ADDR = "192.0.2.10", "192.0.2.20"
OVERLAID = ("etc", "var", "opt")
APP_UNIT = "turntaking.service"
BACKUP_UNIT, BACKUP_TIMER = "turntaking-backup.service", "turntaking-backup.timer"
TEST_ONLY_APP_ARGS = ["--no-model-preload", "--no-background-analysis"]
GUIDE_TIMEOUT_S = 240  # `make setup` finds everything installed; the app answers in well under a minute


@dataclass(frozen=True)
class ShBlock:
    line: int  # where it starts in docs/deploy.md
    text: str


def sh_blocks(markdown: str) -> list[ShBlock]:
    """The guide's ```sh blocks, in order."""
    return [ShBlock(markdown.count("\n", 0, m.start()) + 1, m.group(1))
            for m in re.finditer(r"^```sh\n(.*?)^```", markdown, flags=re.M | re.S)]


def guide_script(blocks: list[ShBlock]) -> str:
    """One bash script of the blocks, each announced, that stops at the first failing command
    and names its block."""
    parts = ["set -euo pipefail", "BLOCK=0",
             "trap 'echo \"guide block $BLOCK failed (line $LINENO of the script)\" >&2' ERR"]
    for k, block in enumerate(blocks, 1):
        parts += [f"BLOCK='{k} (docs/deploy.md line {block.line})'", f"echo '### block {k}'", block.text]
    return "\n".join(parts) + "\necho '### guide done'\n"


def run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True, **kwargs)


def in_namespace(holder: int, cmd: list[str], mount: bool = True) -> list[str]:
    return ["nsenter", "-t", str(holder), *(["-m"] if mount else []), "-n", "--", *cmd]


def start_holder(setup: str) -> subprocess.Popen:
    """A process in new mount and network namespaces that runs `setup`, then holds them."""
    holder = subprocess.Popen(["unshare", "--mount", "--net", "--propagation", "private", "bash", "-c",
                               f"set -e\n{setup}\nip link set lo up\necho ready\nexec sleep infinity"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = holder.stdout.readline()
    if line.strip() != "ready":
        holder.kill()
        pytest.fail(f"namespace setup failed: {holder.stderr.read()}")
    return holder


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        wait_until(lambda: not _running(pid), timeout_s=30, what=f"process {pid} to stop")
    except AssertionError:
        os.killpg(pid, signal.SIGKILL)


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def postgres_socket(server_url: str) -> Path:
    engine = sa.create_engine(normalize_url(server_url))
    with engine.connect() as connection:
        directory = connection.exec_driver_sql("SHOW unix_socket_directories").scalar().split(",")[0].strip()
        port = connection.exec_driver_sql("SHOW port").scalar()
    engine.dispose()
    return Path(directory) / f".s.PGSQL.{port}"


def drop_guide_database(server_url: str) -> None:
    admin = sa.create_engine(normalize_url(server_url), isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        for database in ("turntaking", "turntaking_drill"):  # the drill's, when the guide stopped in it
            connection.exec_driver_sql(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        connection.exec_driver_sql('DROP ROLE IF EXISTS "turntaking"')
    admin.dispose()


def interpreter_for_everyone(spare: Path) -> str:
    """Shell lines that let the app's user run the virtual environment's Python: where its base
    interpreter lies below a directory other users cannot enter (pyenv under /root, on a machine
    set up as root), that directory is replaced, in the namespace, by one that holds the
    interpreter alone; on Debian the base is /usr, and nothing changes."""
    base = Path(sys.base_prefix).resolve()
    closed = next((d for d in reversed(base.parents) if d != Path("/") and not d.stat().st_mode & 0o001), None)
    if closed is None:
        return ""
    return (f"mkdir -p {spare} && mount --bind {base} {spare}\n"
            f"mount -t tmpfs -o mode=755 tmpfs {closed}\n"
            f"mkdir -p {base} && mount --bind {spare} {base}")


STUB_APT_GET = """#!/bin/bash
# apt-get stand-in: installs nothing; every package named must be installed here already.
echo "$*" >> "$FAKE_SYSTEMCTL_DIR/apt-get.calls"
[ "$1" = install ] || exit 0
for pkg in "${@:2}"; do
    case "$pkg" in -*) continue ;; esac
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" \
        || { echo "apt-get (test stand-in): $pkg is not installed here: apt-get install $pkg" >&2; exit 100; }
done
"""


@pytest.fixture
def deployed(tmp_path, postgres_server_url):
    """The guide run on a fresh 'server' namespace; yields what the checks need."""
    markdown = GUIDE.read_text()
    blocks = sh_blocks(markdown)
    domain = re.search(r"^DOMAIN=(\S+)", blocks[0].text, flags=re.M).group(1)
    socket_path = postgres_socket(postgres_server_url)
    for name in OVERLAID:
        (tmp_path / "upper" / name).mkdir(parents=True)
        (tmp_path / "work" / name).mkdir(parents=True)
    mounts = "\n".join(f"mount -t overlay overlay -o lowerdir=/{d},upperdir={tmp_path}/upper/{d},"
                       f"workdir={tmp_path}/work/{d} /{d}" for d in OVERLAID)
    server = start_holder(textwrap.dedent(f"""\
        {mounts}
        mkdir -p /opt/turntaking && mount --bind {ROOT} /opt/turntaking
        {interpreter_for_everyone(tmp_path / "interpreter")}
        mount -t tmpfs -o mode=755 tmpfs /run
        mkdir -m 2775 /run/postgresql && touch /run/postgresql/.s.PGSQL.5432
        mount --bind {socket_path} /run/postgresql/.s.PGSQL.5432
        echo "{SERVER_ADDR} {domain}" >> /etc/hosts"""))
    hosts = tmp_path / "participant-hosts"
    hosts.write_text(f"127.0.0.1 localhost\n{SERVER_ADDR} {domain}\n")
    participant = start_holder(f"mount --bind {hosts} /etc/hosts")
    state = tmp_path / "systemd"
    stubs = tmp_path / "stubs"
    state.mkdir()
    stubs.mkdir()
    try:
        run(["ip", "link", "add", "srv0", "netns", str(server.pid), "type", "veth",
             "peer", "name", "part0", "netns", str(participant.pid)])
        for holder, device, address in ((server, "srv0", SERVER_ADDR), (participant, "part0", PARTICIPANT_ADDR)):
            run(in_namespace(holder.pid, ["ip", "addr", "add", f"{address}/24", "dev", device], mount=False))
            run(in_namespace(holder.pid, ["ip", "link", "set", device, "up"], mount=False))
        fake_systemctl = ROOT / "tests" / "fake_systemctl.py"
        (stubs / "systemctl").write_text(f"#!/bin/sh\nexec {sys.executable} {fake_systemctl} \"$@\"\n")
        (stubs / "apt-get").write_text(STUB_APT_GET)
        for stub in stubs.iterdir():
            stub.chmod(0o755)
        script = tmp_path / "guide.sh"
        script.write_text(guide_script(blocks))
        env = {"PATH": f"{stubs}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
               "HOME": "/root", "LANG": "C.UTF-8", "TERM": "dumb",
               "FAKE_SYSTEMCTL_DIR": str(state), "FAKE_SYSTEMCTL_PROVIDED": "postgresql.service",
               "FAKE_SYSTEMCTL_EXTRA": json.dumps({APP_UNIT: TEST_ONLY_APP_ARGS}),
               # The trial certificate, trusted as a browser trusts Let's Encrypt's.
               "CURL_CA_BUNDLE": "/etc/turntaking/trial-cert/fullchain.pem"}
        guide = subprocess.run(in_namespace(server.pid, ["bash", str(script)]), env=env, capture_output=True,
                               text=True, timeout=GUIDE_TIMEOUT_S)
        yield {"guide": guide, "blocks": blocks, "domain": domain, "server": server, "participant": participant,
               "state": state, "etc": tmp_path / "upper" / "etc", "var": tmp_path / "upper" / "var",
               "server_url": postgres_server_url}
    finally:
        for pid_file in state.glob("*.pid"):
            kill_group(int(pid_file.read_text()))
        for holder in (participant, server):
            holder.kill()
            holder.wait()
        drop_guide_database(postgres_server_url)
        # Files the guide's users own (uids of the overlay's /etc/passwd) go with the tmp dir.
        shutil.rmtree(tmp_path / "upper", ignore_errors=True)
        shutil.rmtree(tmp_path / "work", ignore_errors=True)


def probe(participant: subprocess.Popen, probes: dict) -> dict:
    # entering the mount namespace sets the working directory to its root: the project is named for -m
    done = subprocess.run(in_namespace(participant.pid, [sys.executable, "-m", "tests.remote_participant_probe"]),
                          input=json.dumps(probes), capture_output=True, text=True, timeout=60, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def post(participant: subprocess.Popen, certificate: Path, url: str, body: dict) -> dict:
    """POST `body` as JSON from the participant's machine, over HTTPS with the guide's certificate."""
    done = run(in_namespace(participant.pid, [
        "curl", "-sS", "--fail-with-body", "--cacert", str(certificate), "-H", "Content-Type: application/json",
        "-d", json.dumps(body), url]))
    return json.loads(done.stdout)


def test_every_command_of_the_deployment_guide_runs_and_the_server_answers_a_remote_participant(deployed):
    guide, domain, etc = deployed["guide"], deployed["domain"], deployed["etc"]
    server, participant, state = deployed["server"], deployed["participant"], deployed["state"]
    app_log = state / f"{APP_UNIT}.log"
    assert guide.returncode == 0, (f"{guide.stderr[-3000:]}\n--- stdout ---\n{guide.stdout[-2000:]}\n"
                                   f"--- app ---\n{app_log.read_text()[-2000:] if app_log.exists() else ''}")
    assert guide.stdout.count("### block") == len(deployed["blocks"]) >= 10
    assert "### guide done" in guide.stdout
    assert "HTTPS answers: 200" in guide.stdout  # the guide's own check, against the started app

    # The units the guide enables exist, and its own unit is one systemd accepts.
    calls = [json.loads(line) for line in (state / "calls.jsonl").read_text().splitlines()]
    assert ["enable", "--now", APP_UNIT] in calls and ["restart", "coturn.service"] in calls
    assert (etc / "systemd" / "system" / APP_UNIT).is_file()
    for unit in (APP_UNIT, BACKUP_UNIT, BACKUP_TIMER):
        verify = subprocess.run(in_namespace(server.pid, ["systemd-analyze", "verify", f"/etc/systemd/system/{unit}"]),
                                capture_output=True, text=True, timeout=60)
        assert verify.returncode == 0, (unit, verify.stderr)
    installs = (state / "apt-get.calls").read_text()
    assert "coturn" in installs and "postgresql" in installs and "age" in installs

    # The backup the timer's service took: one encrypted copy, readable by nobody but its user,
    # and restored by the guide's drill (into a scratch database, dropped after it).
    assert ["enable", "--now", BACKUP_TIMER] in calls and ["start", BACKUP_UNIT] in calls
    copies = list((deployed["var"] / "backups" / "turntaking").glob("*.tar.age"))
    assert len(copies) == 1 and copies[0].read_bytes().startswith(b"age-encryption.org/v1")
    assert (deployed["var"] / "backups" / "turntaking").stat().st_mode & 0o777 == 0o700
    restored = re.search(r"^restore drill: (\d+) entries restored$", guide.stdout, flags=re.M)
    assert restored and int(restored.group(1)) >= 1, guide.stdout[-2000:]

    # The sysctl and the firewall hold in the server's namespace, and only there.
    narrowed = run(in_namespace(server.pid, ["cat", "/proc/sys/net/ipv4/ip_local_port_range"])).stdout.split()
    assert narrowed == ["40000", "49151"]
    assert Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split() != narrowed
    assert "policy drop" in run(in_namespace(server.pid, ["nft", "list", "ruleset"])).stdout

    # The guide's database: the app made its tables in it, as its user.
    engine = sa.create_engine(normalize_url(deployed["server_url"]).set(database="turntaking"))
    with engine.connect() as connection:
        assert connection.exec_driver_sql("SELECT tableowner FROM pg_tables WHERE tablename = 'study'").scalar() \
            == "turntaking"
    engine.dispose()

    # A participant's machine: the app over HTTPS with the guide's certificate (served by HAProxy
    # for the workers), and a connection check's ICE servers with credentials the app minted.
    certificate = etc / "turntaking" / "tls" / "fullchain.pem"
    page = run(in_namespace(participant.pid, ["curl", "-sS", "-D", "-", "-o", "/dev/null", "--cacert",
                                              str(certificate), f"https://{domain}/"]))
    assert page.stdout.startswith("HTTP/1.1 200") and "x-turntaking-worker" in page.stdout.lower()
    check = post(participant, certificate, f"https://{domain}/participate/api/pilot/check",
                 {"external_id": "deploy-check", "user_agent": "curl"})
    servers = check["rtc"]["iceServers"]
    turn = next(s for s in servers if "username" in s)
    assert f"turns:{domain}:5349?transport=tcp" in turn["urls"]

    secret = re.search(r"^TURN_SECRET=(\S+)", (etc / "turntaking" / "env").read_text(), flags=re.M).group(1)
    assert f"static-auth-secret={secret}\n" in (etc / "turnserver.conf").read_text()
    wrong = turn_rest_credential("not-the-secret", "deploy-check")
    targets = [("udp", 3478), ("tcp", 3478), ("tls", 5349)]
    found = probe(participant, {
        "turn": [{"host": domain, "port": port, "transport": transport, "username": turn["username"],
                  "credential": turn["credential"], "cafile": str(certificate)} for transport, port in targets]
        + [{"host": domain, "port": 3478, "transport": "udp", "username": wrong[0], "credential": wrong[1]}],
        # 80 is let through (nothing listens: refused); the workers' 444 and PostgreSQL's 5432 are dropped.
        "tcp": [{"host": SERVER_ADDR, "port": port} for port in (80, 444, 5432)]})
    for (transport, _), result in zip(targets, found["turn"]):
        assert result.get("echoed") is True, (transport, result)
        address, port = result["relayed"]
        assert address == SERVER_ADDR and 49152 <= port <= 65535, (transport, result)
    assert "401" in found["turn"][-1]["error"], found["turn"][-1]
    assert found["tcp"] == ["refused", "no answer", "no answer"]

    # One who cannot connect: the failed check's answer is what the page shows, the study file's code.
    failed = post(participant, certificate, f"https://{domain}/participate/api/check/{check['check_id']}/result",
                  {"token": check["token"], "secure_context": True, "microphone": "ok", "outcome": "failed",
                   "reason": "no connection"})
    assert failed["could_not_take_part"] == {
        "code": "NOCONN", "url": "https://app.prolific.com/submissions/complete?cc=NOCONN"}
