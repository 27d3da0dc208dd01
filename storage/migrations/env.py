"""Alembic environment for storage: run by storage.db.upgrade (with a connection) or by the
alembic command line (with a URL in the config)."""

from alembic import context
from sqlmodel import SQLModel

import storage.models  # noqa: F401  (registers the tables on SQLModel.metadata)
from storage.db import make_engine

target_metadata = SQLModel.metadata
config = context.config


def run_migrations(connection) -> None:
    context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


connection = config.attributes.get("connection")
if connection is not None:
    run_migrations(connection)
else:
    url = config.get_main_option("sqlalchemy.url")
    engine = make_engine(url)
    try:
        with engine.begin() as connection:
            run_migrations(connection)
    finally:
        engine.dispose()
