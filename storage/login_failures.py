"""Failed researcher logins, shared by every app process through the database, for the login
throttle (webguard.login_throttle): with N processes answering the login, counts kept in each
process would allow N times the guesses.

Rows older than the window the throttle asks about are deleted as new failures arrive.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlmodel import select

from storage.db import session_scope
from storage.models import LoginFailure


@dataclass(frozen=True)
class LoginFailureLog:
    """The throttle's store: `record` a failure, ask for the `recent` ones."""

    engine: sa.Engine

    def record(self, client: str, user: str, at: datetime, forget_before: datetime) -> None:
        with session_scope(self.engine) as session:
            session.execute(sa.delete(LoginFailure).where(LoginFailure.failed_at < forget_before))
            session.add(LoginFailure(client=client, user_name=user, failed_at=at))

    def recent(self, client: str, user: str, since: datetime) -> tuple[list[datetime], list[datetime]]:
        """(failure times from `client`, failure times for `user`) at or after `since`, oldest first."""
        with session_scope(self.engine) as session:
            def times(column, value):
                query = select(LoginFailure.failed_at).where(column == value, LoginFailure.failed_at >= since)
                return list(session.exec(query.order_by(LoginFailure.failed_at)))
            return times(LoginFailure.client, client), times(LoginFailure.user_name, user)
