"""Researchers as people: accounts with roles and study memberships, and the audit trail, which
the database keeps append-only (triggers refuse UPDATE and DELETE on it).

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-06
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

APPEND_ONLY = "audit_event is append-only"


def upgrade() -> None:
    op.create_table(
        "researcher_account",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("role", sa.String(), nullable=False),
        sa.Column("study_ids", sa.JSON(), nullable=False),
        sa.Column("password_hash", sa.String(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("disabled_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_researcher_account"),
    )
    op.create_index("ix_researcher_account_name", "researcher_account", ["name"], unique=True)
    op.create_table(
        "audit_event",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor", sa.String(), nullable=False),
        sa.Column("address", sa.String(), nullable=True),
        sa.Column("action", sa.String(), nullable=False),
        sa.Column("object", sa.String(), nullable=True),
        sa.Column("detail", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_audit_event"),
    )
    for column in ("at", "actor", "action"):
        op.create_index(f"ix_audit_event_{column}", "audit_event", [column])
    if op.get_bind().dialect.name == "sqlite":
        for verb in ("UPDATE", "DELETE"):
            op.execute(f"CREATE TRIGGER audit_event_no_{verb.lower()} BEFORE {verb} ON audit_event "
                       f"BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY}'); END")
    else:
        op.execute("CREATE FUNCTION audit_event_append_only() RETURNS trigger LANGUAGE plpgsql AS "
                   f"$$ BEGIN RAISE EXCEPTION '{APPEND_ONLY}'; END $$")
        op.execute("CREATE TRIGGER audit_event_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON audit_event "
                   "FOR EACH STATEMENT EXECUTE FUNCTION audit_event_append_only()")


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for verb in ("update", "delete"):
            op.execute(f"DROP TRIGGER audit_event_no_{verb}")
    else:
        op.execute("DROP TRIGGER audit_event_append_only ON audit_event")
        op.execute("DROP FUNCTION audit_event_append_only()")
    for column in ("at", "actor", "action"):
        op.drop_index(f"ix_audit_event_{column}", table_name="audit_event")
    op.drop_table("audit_event")
    op.drop_index("ix_researcher_account_name", table_name="researcher_account")
    op.drop_table("researcher_account")
