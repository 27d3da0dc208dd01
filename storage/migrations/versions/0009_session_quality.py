"""Call quality: whether a session can be analysed as a conversation, and why not (no
speech from the participant, no answer from the system, a call shorter than the study's minimum).
Rows stored before this revision stay NULL (not checked): the background analysis decides them from
their voice activity.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN, as in 0004: no table copies under enforced foreign keys.
    op.add_column("conversation_session", sa.Column("analysable", sa.Boolean(), nullable=True))
    op.add_column("conversation_session", sa.Column("quality_reason", sa.String(), nullable=True))


def downgrade() -> None:
    op.drop_column("conversation_session", "quality_reason")
    op.drop_column("conversation_session", "analysable")
