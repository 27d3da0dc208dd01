"""Real databases for every test folder (a plugin of tests/conftest.py): an SQLite file in a tmp dir
and a PostgreSQL server.

PostgreSQL: `TEST_POSTGRES_URL` (a role allowed to CREATE DATABASE) if set; otherwise a
throwaway server is started for the test session from the PostgreSQL server binaries
(Debian package `postgresql`): initdb into a tmp dir, listen on a free localhost port with its
unix socket in that dir, stopped at the end. As root it runs as the `postgres` system user.
Every test gets a fresh, empty database on it.

`db_url` (an empty database) and `engine` (a database at the newest migration) are parametrized
over both backends. The server and the migrated templates are session fixtures of the plugin: a
test module imports only the function-scoped fixtures it wants (an imported session fixture would
be a second instance of it, a second server).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

from storage.db import init_db, make_engine, normalize_url

INSTALL_HINT = "PostgreSQL server binaries (initdb, pg_ctl) not found: apt-get install postgresql"


def _postgres_bin_dir() -> Path | None:
    on_path = shutil.which("pg_ctl")
    if on_path and shutil.which("initdb"):
        return Path(on_path).parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(p.split("/")[4]))
    return Path(candidates[-1]).parent if candidates else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(cmd: list[str], as_user: str | None) -> None:
    if as_user:
        cmd = ["runuser", "-u", as_user, "--", *cmd]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip() or done.stdout.strip()}")


@pytest.fixture(scope="session")
def postgres_server_url():
    """URL of a PostgreSQL server (its `postgres` database) for the whole test session."""
    if os.environ.get("TEST_POSTGRES_URL"):
        yield os.environ["TEST_POSTGRES_URL"]
        return
    bin_dir = _postgres_bin_dir()
    if bin_dir is None:
        pytest.fail(INSTALL_HINT)
    as_user = None
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            pytest.fail("running as root but there is no `postgres` system user: apt-get install postgresql")
        as_user = "postgres"
    # Not pytest's tmp_path: its parents are private to root, and the server runs as postgres.
    base = Path(tempfile.mkdtemp(prefix="turntaking-pg-"))
    if as_user:
        shutil.chown(base, user=as_user)
    data, log = base / "data", base / "server.log"
    port = _free_port()
    initdb = [str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"]
    _run(initdb, as_user)
    options = f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off"
    try:
        _run([str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options, "-w", "-t", "60", "start"],
             as_user)
    except RuntimeError as e:
        server_log = log.read_text() if log.exists() else ""
        shutil.rmtree(base, ignore_errors=True)
        pytest.fail(f"{e}\n{server_log}")
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        _run([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"], as_user)
        shutil.rmtree(base, ignore_errors=True)


def _create_database(server_url: str, template: str | None = None) -> str:
    name = f"storage_test_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(normalize_url(server_url), isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.exec_driver_sql(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
    admin.dispose()
    return name


def _drop_database(server_url: str, name: str) -> None:
    admin = sa.create_engine(normalize_url(server_url), isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    admin.dispose()


def _database_url(server_url: str, name: str) -> str:
    return normalize_url(server_url).set(database=name).render_as_string(hide_password=False)


@pytest.fixture
def postgres_url(postgres_server_url):
    """A fresh, empty database on the test server, dropped after the test."""
    name = _create_database(postgres_server_url)
    yield _database_url(postgres_server_url, name)
    _drop_database(postgres_server_url, name)


@pytest.fixture
def sqlite_url(tmp_path):
    return f"sqlite:///{tmp_path / 'turntaking.db'}"


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request):
    """An empty database: a real SQLite file, then a real PostgreSQL database."""
    return request.getfixturevalue(f"{request.param}_url")


# Migrating every test's database costs seconds on a loaded machine: migrate one database per
# backend once, and give each test a copy of it.


@pytest.fixture(scope="session")
def postgres_head_template(postgres_server_url):
    name = _create_database(postgres_server_url)
    engine = make_engine(_database_url(postgres_server_url, name))
    init_db(engine)
    engine.dispose()  # CREATE DATABASE ... TEMPLATE needs it unused
    yield name
    _drop_database(postgres_server_url, name)


@pytest.fixture(scope="session")
def sqlite_head_template(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sqlite-head") / "turntaking.db"
    engine = make_engine(f"sqlite:///{path}")
    init_db(engine)
    engine.dispose()  # the last connection closing folds the WAL back into the file
    return path


@pytest.fixture(params=["sqlite", "postgres"])
def engine(request, tmp_path):
    """A database (SQLite file, then PostgreSQL) with the schema at the newest migration."""
    if request.param == "sqlite":
        path = tmp_path / "turntaking.db"
        shutil.copyfile(request.getfixturevalue("sqlite_head_template"), path)
        url, cleanup = f"sqlite:///{path}", lambda: None
    else:
        server = request.getfixturevalue("postgres_server_url")
        name = _create_database(server, template=request.getfixturevalue("postgres_head_template"))
        url, cleanup = _database_url(server, name), lambda: _drop_database(server, name)
    engine = make_engine(url)
    init_db(engine)  # already at head: checks that, changes nothing
    yield engine
    engine.dispose()
    cleanup()


@pytest.fixture(scope="session")
def speech_files(tmp_path_factory) -> dict[str, Path]:
    """Real speech: a 16 kHz mono espeak-ng utterance and a two-channel file (speech on the
    left, another utterance on the right), made with espeak-ng and sox."""
    out = tmp_path_factory.mktemp("speech")
    for name, text in (("user", "where can I eat in Manhattan tonight"), ("system", "try a noodle bar downtown")):
        raw = out / f"{name}_raw.wav"
        subprocess.run(["espeak-ng", "-v", "en-us", "-w", str(raw), text], check=True, capture_output=True)
        subprocess.run(["sox", str(raw), "-r", "16000", "-c", "1", str(out / f"{name}.wav")], check=True)
    stereo = out / "two_channel.wav"
    subprocess.run(["sox", "-M", str(out / "user.wav"), str(out / "system.wav"), str(stereo)], check=True)
    return {"mono": out / "user.wav", "stereo": stereo}


def sox_samples(path: Path) -> int:
    """Sample frames per channel, as sox counts them (independent of soundfile)."""
    return int(subprocess.run(["sox", "--i", "-s", str(path)], check=True, capture_output=True, text=True).stdout)


def database_bytes(engine) -> bytes:
    """Everything the database holds, as bytes to search: SQLite's file with its log and shared
    memory (free pages and old log frames included), or a full `pg_dump` of the PostgreSQL database."""
    url = engine.url
    if url.get_backend_name() == "sqlite":
        return b"".join(Path(url.database + suffix).read_bytes() for suffix in ("", "-wal", "-shm")
                        if Path(url.database + suffix).exists())
    bin_dir = _postgres_bin_dir()
    dump = shutil.which("pg_dump") or (str(bin_dir / "pg_dump") if bin_dir else None)
    if dump is None:
        pytest.fail(INSTALL_HINT)
    plain = url.set(drivername="postgresql").render_as_string(hide_password=False)
    return subprocess.run([dump, "--no-owner", plain], check=True, capture_output=True).stdout
