"""Backup, verify and restore times (storage.backup) for the demo study and a 100-session study.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_backup.py [--sessions-per-system 34] [--seconds 300] [--workdir DIR]
                                                           [--database-url URL]

Seeds a study with simulated sessions (analysis.demo_study: three systems, each session a
two-channel FLAC of `--seconds`, voice activity, clip pairs and judgments), then times
`python -m storage backup`, `verify` and `restore` as their functions (the command lines' work
without their start-up), each once, and prints the sizes. Without `--database-url`: SQLite in the
work directory; with one (PostgreSQL), that database holds the study and the restore goes into a
new database beside it, which is dropped after.

"The demo": `--sessions-per-system 6 --seconds 90` (the demo's defaults); "a 100-session study":
`--sessions-per-system 34 --seconds 300` (102 five-minute sessions).

Measured 6 Dec 2026, the 2-core machine, SQLite, local disk (its page cache warm from the seeding):
- the demo (18 sessions, 56.1 MB of recordings): backup 0.07 s, verify 0.04 s, restore 0.11 s
- 102 five-minute sessions (1,062 MB of recordings, 102 files): backup 1.36 s, verify 0.89 s,
  restore 4.26 s
A cold cache or a network disk reads the recordings at its own speed: the work is one read (and
one write) of every byte.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import sqlalchemy as sa

from analysis.demo_study import seed_demo_analysis
from storage import db
from storage.backup import backup, restore, verify
from storage.db import normalize_url, session_scope


def _sizes(folder: Path) -> tuple[int, int]:
    files = [p for p in folder.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions-per-system", type=int, default=34)
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--database-url", help="PostgreSQL (default: SQLite in the work directory)")
    args = parser.parse_args(argv)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench-backup-"))
    root = work / "data"
    url = args.database_url or f"sqlite:///{root / 'turntaking.db'}"
    engine = db.make_engine(url)
    db.init_db(engine)
    t0 = time.perf_counter()
    with session_scope(engine) as session:
        seeded = seed_demo_analysis(session, root, sessions_per_system=args.sessions_per_system,
                                    seconds=args.seconds, annotators=10)
    print(f"seeded in {time.perf_counter() - t0:.1f} s: {seeded}")
    files, size = _sizes(root)
    print(f"data root: {files} files, {size / 1e6:.1f} MB (the SQLite database included)")

    folder = work / "backup"
    shutil.rmtree(folder, ignore_errors=True)
    t0 = time.perf_counter()
    summary = backup(engine, root, folder)
    backup_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    verify(folder)
    verify_s = time.perf_counter() - t0
    target_url, admin = None, None
    if engine.dialect.name == "postgresql":
        name = f"bench_restore_{uuid.uuid4().hex[:8]}"
        admin = sa.create_engine(normalize_url(url), isolation_level="AUTOCOMMIT")
        with admin.connect() as connection:
            connection.exec_driver_sql(f'CREATE DATABASE "{name}"')
        target_url = normalize_url(url).set(database=name).render_as_string(hide_password=False)
    restored = work / "restored"
    shutil.rmtree(restored, ignore_errors=True)
    t0 = time.perf_counter()
    restore(folder, restored, target_url)
    restore_s = time.perf_counter() - t0
    if admin is not None:
        with admin.connect() as connection:
            connection.exec_driver_sql(f'DROP DATABASE "{target_url.rsplit("/", 1)[-1]}" WITH (FORCE)')
        admin.dispose()
    engine.dispose()
    print(f"{engine.dialect.name}: backup {backup_s:.2f} s ({summary.files} files, {summary.bytes / 1e6:.1f} MB "
          f"of files), verify {verify_s:.2f} s, restore {restore_s:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
