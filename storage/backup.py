"""Backups that restore: a consistent copy of a study platform (database + data root) taken while
calls and annotators run, checked byte for byte, restored into an empty data root.

    python -m storage backup DIR [--url URL] [--data ROOT]     # DIR: new or empty
    python -m storage verify DIR
    python -m storage restore DIR --data ROOT [--url URL]      # ROOT: new or empty

A backup folder holds:
    database.sqlite3 | database.pgdump    SQLite's online backup (one step: a consistent snapshot
                                           while others write, WAL mode) or `pg_dump --format=custom`
    files/RELPATH                          every file of the data root but the database and the
                                           private cache (storage.files.CACHE_DIR: copies Gradio
                                           made, rebuilt on demand)
    manifest.json                          sha256 and size of each, written last: a folder without
                                           it is an unfinished backup

The database is copied first, then the files: every file a row of the copy names was there when
the row was (a call still running is copied as far as it was written; its row says "active" and
the app ends it as interrupted on start). An encrypted copy off the machine is the operator's:
docs/deploy.md has the recipe (a systemd timer, `age`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from storage.db import current_revision, make_engine
from storage.files import CACHE_DIR

MANIFEST = "manifest.json"
FILES = "files"
SQLITE_COPY = "database.sqlite3"
POSTGRES_COPY = "database.pgdump"
CHUNK = 1 << 20


class BackupError(RuntimeError):
    """A backup that cannot be taken, checked or restored; the message says why, in one line."""


@dataclass(frozen=True)
class BackupSummary:
    folder: Path
    files: int
    bytes: int
    database: str  # "sqlite" | "postgresql"


def _empty_or_new(folder: Path, what: str) -> None:
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise BackupError(f"{what} {folder} is not empty: give a new or empty folder")


def _copy_hashing(src: Path, dst: Path) -> tuple[str, int]:
    """Copy `src` to `dst` reading it once; (sha256, bytes) of what was copied."""
    digest, size = hashlib.sha256(), 0
    dst.parent.mkdir(parents=True, exist_ok=True)
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        while chunk := fin.read(CHUNK):
            digest.update(chunk)
            fout.write(chunk)
            size += len(chunk)
    shutil.copystat(src, dst)
    return digest.hexdigest(), size


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _pg_tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        candidates = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"), key=lambda p: int(p.parts[4]))
        found = str(candidates[-1]) if candidates else None
    if found is None:
        raise BackupError(f"{name} not found: apt-get install postgresql-client")
    return found


def _libpq(url: sa.URL) -> tuple[str, dict]:
    """A libpq URL without the password, and the environment that carries it (not on the command
    line, where `ps` shows it)."""
    env = dict(os.environ)
    if url.password:
        env["PGPASSWORD"] = str(url.password)
    return url.set(drivername="postgresql", password=None).render_as_string(hide_password=False), env


def _run(command: list[str], env: dict) -> None:
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        raise BackupError(f"{Path(command[0]).name} failed: {lines[0] if lines else done.returncode}")


def _database_files(engine: sa.Engine) -> set[Path]:
    if engine.url.get_backend_name() != "sqlite" or not engine.url.database:
        return set()
    path = Path(engine.url.database).resolve()
    return {path, Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}-journal")}


def _snapshot_database(engine: sa.Engine, folder: Path) -> dict:
    backend = engine.url.get_backend_name()
    if backend == "sqlite":
        target = folder / SQLITE_COPY
        source = sqlite3.connect(engine.url.database)
        copy = sqlite3.connect(target)
        try:
            source.backup(copy)  # every page in one step: a snapshot, whatever others write meanwhile
        finally:
            copy.close()
            source.close()
    elif backend == "postgresql":
        target = folder / POSTGRES_COPY
        url, env = _libpq(engine.url)
        _run([_pg_tool("pg_dump"), "--format=custom", "--no-owner", "--file", str(target), url], env)
    else:
        raise BackupError(f"no backup for {backend} databases")
    return {"backend": backend, "file": target.name, "sha256": _sha256(target), "bytes": target.stat().st_size,
            "revision": current_revision(engine)}


def backup(engine: sa.Engine, data_root: Path | str, folder: Path | str, progress=None) -> BackupSummary:
    """A consistent copy of the database and the data root into `folder` (new or empty).
    `progress(done, total)`: after each file."""
    folder, root = Path(folder), Path(data_root).resolve()
    _empty_or_new(folder, "backup folder")
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)  # people's voices
    database = _snapshot_database(engine, folder)
    skip = _database_files(engine)
    paths = sorted(p for p in root.rglob("*") if p.is_file() and p.resolve() not in skip
                   and p.relative_to(root).parts[0] != CACHE_DIR) if root.exists() else []
    files, total = {}, 0
    for done, path in enumerate(paths, 1):
        relpath = path.relative_to(root).as_posix()
        try:
            checksum, size = _copy_hashing(path, folder / FILES / relpath)
        except FileNotFoundError:  # erased or expired since it was listed: its rows went with it
            continue
        files[relpath] = {"sha256": checksum, "bytes": size}
        total += size
        if progress is not None:
            progress(done, len(paths))
    manifest = {"format": 1, "database": database, "files": files}
    partial = folder / f".{MANIFEST}.partial"
    partial.write_text(json.dumps(manifest, indent=1, sort_keys=True))
    partial.replace(folder / MANIFEST)  # last, and whole: its presence says the backup is complete
    return BackupSummary(folder, len(files), total, database["backend"])


def read_manifest(folder: Path | str) -> dict:
    path = Path(folder) / MANIFEST
    if not path.is_file():
        raise BackupError(f"{folder}: no {MANIFEST} (not a backup, or an unfinished one)")
    try:
        manifest = json.loads(path.read_text())
        manifest["database"]["file"], manifest["files"].items()
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise BackupError(f"{path}: not a backup manifest ({type(e).__name__})") from None
    return manifest


def verify(folder: Path | str, progress=None) -> dict:
    """The manifest, after checking every file of the backup against it (and an SQLite copy's
    integrity); BackupError names the first problem."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    database = manifest["database"]
    db_path = folder / database["file"]
    if not db_path.is_file() or _sha256(db_path) != database["sha256"]:
        raise BackupError(f"{db_path}: missing or changed since the backup (sha256 differs)")
    if database["backend"] == "sqlite":
        try:
            with sqlite3.connect(f"file:{db_path}?mode=ro", uri=True) as connection:
                answer = connection.execute("PRAGMA integrity_check").fetchone()[0]
        except sqlite3.DatabaseError as e:
            raise BackupError(f"{db_path}: not a readable database ({e})") from None
        if answer != "ok":
            raise BackupError(f"{db_path}: integrity check failed ({answer})")
    for done, (relpath, expected) in enumerate(sorted(manifest["files"].items()), 1):
        path = folder / FILES / relpath
        if not path.is_file() or _sha256(path) != expected["sha256"]:
            raise BackupError(f"{relpath}: missing or changed since the backup (sha256 differs)")
        if progress is not None:
            progress(done, len(manifest["files"]))
    return manifest


def restore(folder: Path | str, data_root: Path | str, database_url: str | None = None, progress=None) -> str:
    """The backup in `folder`, checked, into `data_root` (new or empty) and its database
    (`database_url`, an empty one; default: SQLite in the data root, as the app's default). The
    restored database's URL. Nothing is written before every check passed."""
    folder, root = Path(folder), Path(data_root)
    _empty_or_new(root, "data root")
    manifest = verify(folder)
    database = manifest["database"]
    url = sa.make_url(database_url or f"sqlite:///{(root / 'turntaking.db').resolve()}")
    backend = url.get_backend_name()
    if backend != database["backend"]:
        raise BackupError(f"the backup holds a {database['backend']} database; {backend} cannot take it")
    if backend == "sqlite":
        if not url.database or (Path(url.database).exists() and Path(url.database).stat().st_size):
            raise BackupError(f"{url.render_as_string()}: not a new SQLite file; restore into a new one")
    else:
        engine = make_engine(url)
        try:
            if sa.inspect(engine).get_table_names():
                raise BackupError(f"{url.render_as_string()}: not empty; restore into an empty database")
        finally:
            engine.dispose()
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o700)
    files = sorted(manifest["files"].items())
    for done, (relpath, expected) in enumerate(files, 1):
        checksum, _ = _copy_hashing(folder / FILES / relpath, root / relpath)
        if checksum != expected["sha256"]:
            raise BackupError(f"{relpath}: changed while restoring")
        if progress is not None:
            progress(done, len(files))
    if backend == "sqlite":
        Path(url.database).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(folder / database["file"], url.database)
    else:
        libpq, env = _libpq(url)
        _run([_pg_tool("pg_restore"), "--no-owner", "--exit-on-error", "--dbname", libpq,
              str(folder / database["file"])], env)
    return url.render_as_string(hide_password=False)
