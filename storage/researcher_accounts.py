"""The researcher area's people: named accounts, each with a role and the studies it is a member of.

Roles (storage.models.RESEARCHER_ROLES), each allowed what the ones before it are:
    viewer    aggregates, figures, the report without audio
    analyst   also sessions' audio, transcripts and the dataset export
    owner     also study files, payments, erasure, the audit trail, accounts; every study

Passwords are kept as Argon2id hashes (argon2-cffi, its default parameters: memory-hard), never
logged. The shared password of earlier versions (app.py, TURNTAKING_RESEARCHER_PASSWORD) keeps
working as the owner account `researcher` until an account of that name is added (which then has
its own password) or disabled (`disable researcher`): how a lab moves off it (docs/researcher-area.md).

    python -m storage researcher add NAME --role analyst --study demo    # the password from stdin or asked
    python -m storage researcher list | disable NAME | reset-password NAME
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlmodel import select

from storage.db import session_scope
from storage.models import RESEARCHER_ROLES, ResearcherAccount, Study, utc_now

MIN_PASSWORD_CHARS = 10
_hasher = PasswordHasher()


class AccountError(ValueError):
    """A request about accounts that cannot be done (unknown name, bad role, short password)."""


@dataclass(frozen=True)
class Researcher:
    """Who is logged in: name, role, and the studies they may open (None: every study)."""

    name: str
    role: str
    study_ids: tuple[int, ...] | None

    def allowed(self, role: str) -> bool:
        """Whether this researcher's role includes `role`'s rights."""
        return RESEARCHER_ROLES.index(self.role) >= RESEARCHER_ROLES.index(role)

    def may_open(self, study_id: int | None) -> bool:
        return self.study_ids is None or study_id in self.study_ids


def _check_role(role: str) -> None:
    if role not in RESEARCHER_ROLES:
        raise AccountError(f"unknown role {role!r}: one of {', '.join(RESEARCHER_ROLES)}")


def _check_password(password: str) -> None:
    if len(password) < MIN_PASSWORD_CHARS:
        raise AccountError(f"a password needs at least {MIN_PASSWORD_CHARS} characters")


def _study_ids(session, study_names: list[str]) -> list[int]:
    ids = []
    for name in study_names:
        study = session.exec(select(Study).where(Study.name == name)).first()
        if study is None:
            raise AccountError(f"no study named {name!r}")
        ids.append(study.id)
    return ids


def add_account(engine, name: str, role: str, password: str, studies: list[str] = ()) -> None:
    """A new account (or the shared one's name, `researcher`, given its own password)."""
    _check_role(role)
    _check_password(password)
    if not name or not name.isprintable() or name != name.strip() or ":" in name:
        raise AccountError("an account name is printable, without spaces around it or ':'")
    with session_scope(engine) as session:
        existing = session.exec(select(ResearcherAccount).where(ResearcherAccount.name == name)).first()
        if existing is not None and existing.password_hash is not None:
            raise AccountError(f"an account named {name!r} exists")
        account = existing or ResearcherAccount(name=name, role=role)
        account.role, account.study_ids = role, _study_ids(session, list(studies))
        account.password_hash, account.disabled_at = _hasher.hash(password), None
        session.add(account)


def disable_account(engine, name: str, shared_name: str | None = None) -> None:
    """The account can no longer log in. `shared_name`: the shared password's account, disabled by
    a row of its name without a password."""
    with session_scope(engine) as session:
        account = session.exec(select(ResearcherAccount).where(ResearcherAccount.name == name)).first()
        if account is None:
            if name != shared_name:
                raise AccountError(f"no account named {name!r}")
            account = ResearcherAccount(name=name, role="owner")
        account.disabled_at = utc_now()
        session.add(account)


def reset_password(engine, name: str, password: str) -> None:
    _check_password(password)
    with session_scope(engine) as session:
        account = session.exec(select(ResearcherAccount).where(ResearcherAccount.name == name)).first()
        if account is None or account.password_hash is None:
            raise AccountError(f"no account named {name!r} with a password")
        account.password_hash = _hasher.hash(password)
        session.add(account)


def accounts(engine) -> list[dict]:
    """Every account: name, role, studies (names), state; no hash."""
    with session_scope(engine) as session:
        names = {s.id: s.name for s in session.exec(select(Study))}
        return [{"name": a.name, "role": a.role,
                 "studies": "every study" if a.role == "owner" else ", ".join(names.get(i, f"#{i}") for i in a.study_ids),
                 "state": "disabled" if a.disabled_at is not None else "active",
                 "created": a.created_at.isoformat(timespec="seconds")}
                for a in session.exec(select(ResearcherAccount).order_by(ResearcherAccount.name))]


def researcher(engine, name: str, shared: tuple[str, str] | None = None) -> Researcher | None:
    """The active account `name` (None: unknown or disabled); `shared`: (name, password) of the
    shared password's owner account, which exists while no row of its name does."""
    with session_scope(engine) as session:
        account = session.exec(select(ResearcherAccount).where(ResearcherAccount.name == name)).first()
        if account is None:
            return Researcher(name, "owner", None) if shared is not None and name == shared[0] else None
        if account.disabled_at is not None:
            return None
        return Researcher(account.name, account.role, None if account.role == "owner" else tuple(account.study_ids))


def authenticate(engine, name: str, password: str, shared: tuple[str, str] | None = None) -> Researcher | None:
    """The researcher if `password` is theirs and their account is active, else None."""
    with session_scope(engine) as session:
        account = session.exec(select(ResearcherAccount).where(ResearcherAccount.name == name)).first()
        known = account is not None
        stored = account.password_hash if known and account.disabled_at is None else None
    if not known:
        if shared is not None and name == shared[0] and hmac.compare_digest(password.encode(), shared[1].encode()):
            return researcher(engine, name, shared)
        _hasher.hash(password)  # as slow as a known name: the answer's time tells no name
        return None
    if stored is None:  # disabled, or the shared account's name disabled
        return None
    try:
        _hasher.verify(stored, password)
    except (VerificationError, InvalidHashError):
        return None
    return researcher(engine, name, shared)
