"""Persistence for the platform: SQLModel schema, Alembic migrations, audio files under a data root.

    from storage import make_engine, init_db, session_scope, seed_demo_study
    engine = make_engine()               # DATABASE_URL or SQLite in the data root
    init_db(engine)                      # schema at the newest migration
    with session_scope(engine) as session:
        study = seed_demo_study(session)
"""

from storage.db import DatabaseError, default_database_url, init_db, make_engine, session_scope
from storage.demo import seed_demo_study

__all__ = ["DatabaseError", "default_database_url", "init_db", "make_engine", "seed_demo_study", "session_scope"]
