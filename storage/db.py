"""Database connection: URL choice, engine set-up (SQLite or PostgreSQL), schema upgrade, sessions.

    engine = make_engine()          # DATABASE_URL, else SQLite <data root>/turntaking.db
    init_db(engine)                 # create / upgrade the schema to the newest migration
    with session_scope(engine) as session:
        ...                         # committed on success, rolled back on error
"""

from __future__ import annotations

import os
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlmodel import Session

import storage.models  # noqa: F401  (registers the tables in SQLModel.metadata)
from storage.files import default_data_root

if TYPE_CHECKING:
    from alembic.config import Config

# alembic is imported where migrations are run or compared: most processes only open the database.

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
DATABASE_FILENAME = "turntaking.db"
# How long an SQLite writer waits for another one to finish before giving up.
SQLITE_BUSY_TIMEOUT_S = 30.0


class DatabaseError(RuntimeError):
    """The database URL or the database's schema state cannot be used."""


def default_database_url() -> str:
    """`DATABASE_URL` if set, else the SQLite file `turntaking.db` in the data root."""
    url = os.environ.get("DATABASE_URL")
    if url:
        return url
    return f"sqlite:///{(default_data_root() / DATABASE_FILENAME).resolve()}"


def normalize_url(url: str | sa.URL) -> sa.URL:
    """Parse `url`; PostgreSQL URLs always use the psycopg 3 driver."""
    try:
        parsed = make_url(url)
    except sa.exc.ArgumentError as e:
        raise DatabaseError(f"cannot parse database URL {str(url)!r}: {e}") from None
    backend = parsed.get_backend_name()
    if backend in ("postgresql", "postgres"):
        return parsed.set(drivername="postgresql+psycopg")
    if backend == "sqlite":
        return parsed
    raise DatabaseError(f"unsupported database {backend!r} in URL: use sqlite:///FILE or postgresql://...")


def _is_sqlite_file(url: sa.URL) -> bool:
    return url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:")


def make_engine(url: str | sa.URL | None = None, **kwargs) -> sa.Engine:
    """Engine for `url` (default: `default_database_url()`).

    SQLite: WAL journal, enforced foreign keys, a busy timeout, and every transaction starts
    with BEGIN IMMEDIATE so concurrent writers queue up instead of failing or losing updates.
    PostgreSQL: psycopg 3, connections checked before use.
    """
    url = normalize_url(url if url is not None else default_database_url())
    if url.get_backend_name() == "postgresql":
        return sa.create_engine(url, pool_pre_ping=True, **kwargs)

    if _is_sqlite_file(url):
        Path(url.database).parent.mkdir(parents=True, exist_ok=True)
    engine = sa.create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S}, **kwargs)
    wal = _is_sqlite_file(url)

    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record):
        # The driver must not open transactions itself; _on_begin does (SQLAlchemy's recipe).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {int(SQLITE_BUSY_TIMEOUT_S * 1000)}")
        cursor.execute("PRAGMA foreign_keys = ON")
        # Deleted rows are overwritten with zeros, not left in free pages: a participant's erasure
        # (storage.erasure) must leave no copy of their identifiers in the file.
        cursor.execute("PRAGMA secure_delete = ON")
        if wal:
            _use_wal(cursor)
            cursor.execute("PRAGMA synchronous = NORMAL")  # safe with WAL; durable at checkpoints
        cursor.close()

    @sa.event.listens_for(engine, "begin")
    def _on_begin(connection):
        # Take the write lock up front: a deferred transaction that reads, then writes after
        # another writer committed fails with "database is locked" regardless of busy_timeout.
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def _use_wal(cursor) -> None:
    """Switch the file to WAL (a setting stored in the file, so usually already done).

    The switch needs a moment of exclusive access and, unlike other statements, can fail at once
    with "database is locked" while other processes open the same new file: retry then.
    """
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_S
    while True:
        try:
            if cursor.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def alembic_config(url: str | sa.URL | None = None) -> Config:
    """Alembic configuration built in code: no alembic.ini needed."""
    from alembic.config import Config
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    if url is not None:
        text = normalize_url(url).render_as_string(hide_password=False)
        config.set_main_option("sqlalchemy.url", text.replace("%", "%%"))  # configparser escaping
    return config


def upgrade(engine: sa.Engine, revision: str = "head") -> None:
    """Bring the schema to `revision` in one transaction (creating it on an empty database).

    SQLite: foreign keys are off while it runs (SQLite's recipe for rebuilding a table that others
    refer to: dropping the old one would otherwise delete through its references) and checked
    before the transaction commits."""
    from alembic import command
    _refuse_unmanaged(engine)
    with engine.connect() as connection:
        sqlite = connection.dialect.name == "sqlite"
        if sqlite:  # on the driver's connection, outside a transaction: inside one it does nothing
            connection.connection.driver_connection.execute("PRAGMA foreign_keys = OFF")
        try:
            with connection.begin():
                config = alembic_config()
                config.attributes["connection"] = connection
                command.upgrade(config, revision)
                if sqlite and (broken := connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()):
                    raise DatabaseError(f"the upgrade to {revision} would break {len(broken)} reference(s), "
                                        f"e.g. {broken[0]}: nothing was changed")
        finally:
            if sqlite:
                connection.connection.driver_connection.execute("PRAGMA foreign_keys = ON")


def downgrade(engine: sa.Engine, revision: str) -> None:
    from alembic import command
    with engine.begin() as connection:
        config = alembic_config()
        config.attributes["connection"] = connection
        command.downgrade(config, revision)


def init_db(engine: sa.Engine) -> None:
    """Create or upgrade the schema to the newest migration. Safe to call at every start-up."""
    upgrade(engine, "head")


def current_revision(engine: sa.Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def head_revision() -> str:
    from alembic.script import ScriptDirectory
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def schema_differences(engine: sa.Engine) -> list:
    """Alembic's autogenerate comparison of the database with the models: [] when they match."""
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext
    from sqlmodel import SQLModel

    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        return compare_metadata(context, SQLModel.metadata)


def _refuse_unmanaged(engine: sa.Engine) -> None:
    """Tables without alembic's version table were not made by us: upgrading would clash."""
    names = set(sa.inspect(engine).get_table_names())
    if names and "alembic_version" not in names:
        raise DatabaseError(
            f"database {engine.url.render_as_string()} has tables ({', '.join(sorted(names)[:5])}) but no "
            "alembic_version: it was not created by storage.init_db; use an empty database"
        )


@contextmanager
def session_scope(engine: sa.Engine):
    """A Session that commits when the block ends normally and rolls back on an exception.

    Objects stay usable after the block (no expiry on commit).
    """
    session = Session(engine, expire_on_commit=False)
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()
