"""Database URL choice, engine settings, and the command line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from storage.__main__ import main
from storage.db import DatabaseError, current_revision, default_database_url, head_revision, make_engine, normalize_url

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def test_default_url(monkeypatch, tmp_path):
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("TURNTAKING_DATA", raising=False)
    assert default_database_url() == f"sqlite:///{PROJECT_ROOT / 'data' / 'turntaking.db'}"
    monkeypatch.setenv("TURNTAKING_DATA", str(tmp_path))
    assert default_database_url() == f"sqlite:///{tmp_path / 'turntaking.db'}"
    monkeypatch.setenv("DATABASE_URL", "postgresql://u:p@db.example/tt")
    assert default_database_url() == "postgresql://u:p@db.example/tt"


@pytest.mark.parametrize("url", ["postgresql://u@h/db", "postgres://u@h/db", "postgresql+psycopg2://u@h/db"])
def test_postgres_urls_use_psycopg3(url):
    assert normalize_url(url).drivername == "postgresql+psycopg"


@pytest.mark.parametrize("url, message", [("mysql://u@h/db", "unsupported database 'mysql'"),
                                          ("not a url", "cannot parse database URL")])
def test_bad_urls(url, message):
    with pytest.raises(DatabaseError, match=message):
        make_engine(url)


def test_sqlite_file_settings(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'new' / 'dir' / 'x.db'}")  # parent dirs are created
    with engine.connect() as c:
        assert c.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert c.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert c.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30000
    engine.dispose()


def test_cli_init_current_seed(db_url, capsys):
    assert main(["--url", db_url, "current"]) == 0
    assert f"revision none (empty), needs upgrade to {head_revision()}" in capsys.readouterr().out
    assert main(["--url", db_url, "upgrade", "0001"]) == 0
    assert main(["--url", db_url, "current"]) == 0
    assert f"revision 0001, needs upgrade to {head_revision()}" in capsys.readouterr().out
    assert main(["--url", db_url, "init"]) == 0
    assert f"at revision {head_revision()} (head)" in capsys.readouterr().out
    for _ in range(2):
        assert main(["--url", db_url, "seed-demo"]) == 0
        out = capsys.readouterr().out
        assert "study 'demo' (id 1) with 6 topics; systems: " in out
        assert "cascaded (cascaded), cascade-backchannel (cascade-backchannel), predictive (predictive)" in out
    engine = make_engine(db_url)
    assert current_revision(engine) == head_revision()
    engine.dispose()


def test_cli_diff(sqlite_url, capsys):
    assert main(["--url", sqlite_url, "upgrade", "0002"]) == 0
    assert main(["--url", sqlite_url, "diff"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "add_table analysis_result" in out and "add_index ix_analysis_result_study_id" in out
    assert "add_table assignment" in out
    assert main(["--url", sqlite_url, "init"]) == 0
    assert main(["--url", sqlite_url, "diff"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "no differences"


def test_cli_errors_are_one_line(capsys, tmp_path):
    assert main(["--url", "mysql://u@h/db", "init"]) == 1
    err = capsys.readouterr().err
    assert err == "error: unsupported database 'mysql' in URL: use sqlite:///FILE or postgresql://...\n"
    assert main(["--url", f"sqlite:///{tmp_path / 'x.db'}", "upgrade", "9999"]) == 1
    assert capsys.readouterr().err == "error: Can't locate revision identified by '9999'\n"


def test_cli_as_a_module_uses_the_data_root(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"} | {"TURNTAKING_DATA": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "storage", "seed-demo"], cwd=PROJECT_ROOT, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "turntaking.db").is_file()
