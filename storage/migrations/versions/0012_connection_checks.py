"""Connection checks before consent (a browser's secure page, microphone and WebRTC connection
with the study's ICE servers), and each call's network figures.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "connection_check",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("external_id", sa.String(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("outcome", sa.String(), nullable=False),
        sa.Column("reason", sa.String(), nullable=True),
        sa.Column("secure_context", sa.Boolean(), nullable=True),
        sa.Column("microphone", sa.String(), nullable=True),
        sa.Column("candidate_type", sa.String(), nullable=True),
        sa.Column("relay_protocol", sa.String(), nullable=True),
        sa.Column("rtt_ms", sa.Float(), nullable=True),
        sa.Column("loss", sa.Float(), nullable=True),
        sa.Column("user_agent", sa.String(), nullable=True),
        sa.Column("token_sha256", sa.String(), nullable=True),
        sa.ForeignKeyConstraint(["study_id"], ["study.id"], name="fk_connection_check_study_id_study"),
        sa.PrimaryKeyConstraint("id", name="pk_connection_check"),
    )
    op.create_index("ix_connection_check_study_id", "connection_check", ["study_id"])
    # Plain ADD COLUMN: no table copy under enforced foreign keys.
    op.add_column("conversation_session", sa.Column("network", sa.JSON(), nullable=True))

def downgrade() -> None:
    op.drop_column("conversation_session", "network")
    op.drop_index("ix_connection_check_study_id", table_name="connection_check")
    op.drop_table("connection_check")
