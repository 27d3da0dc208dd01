"""Participant secrets and call heartbeats: a participant's actions after consent carry
a secret whose sha256 is stored here; a running call's owning process refreshes its heartbeat, so
that another process only closes calls whose heartbeat stopped.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN, as in 0004: no table copies under enforced foreign keys.
    op.add_column("participant", sa.Column("secret_sha256", sa.String(), nullable=True))
    op.add_column("conversation_session", sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    op.drop_column("conversation_session", "heartbeat_at")
    op.drop_column("participant", "secret_sha256")
