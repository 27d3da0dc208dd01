"""Annotator area: trial assignments (K distinct judges per pair), practice pairs, token expiry,
Prolific ids, one artifact rating per clip.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

TIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    # Plain ADD COLUMN (not a batch table copy): SQLite with enforced foreign keys cannot drop
    # and recreate a table other tables refer to, and ADD COLUMN keeps the rows where they are.
    op.add_column("clip_pair", sa.Column("is_practice", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.add_column("annotator", sa.Column("expires_at", TIME, nullable=True))
    op.add_column("annotator", sa.Column("practice_done_at", TIME, nullable=True))
    op.add_column("annotator", sa.Column("prolific_study_id", sa.String(), nullable=True))
    op.add_column("annotator", sa.Column("prolific_session_id", sa.String(), nullable=True))
    op.add_column("judgment", sa.Column("artifact_rating_a", sa.Float(), nullable=True))
    op.add_column("judgment", sa.Column("artifact_rating_b", sa.Float(), nullable=True))
    op.create_table(
        "assignment",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("clip_pair_id", sa.Integer(), nullable=False),
        sa.Column("annotator_id", sa.Integer(), nullable=False),
        sa.Column("slot", sa.Integer(), nullable=True),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("natural_side", sa.String(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("claimed_at", TIME, nullable=False),
        sa.Column("expires_at", TIME, nullable=False),
        sa.Column("done_at", TIME, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_assignment"),
        sa.ForeignKeyConstraint(["clip_pair_id"], ["clip_pair.id"], name="fk_assignment_clip_pair_id_clip_pair"),
        sa.ForeignKeyConstraint(["annotator_id"], ["annotator.id"], name="fk_assignment_annotator_id_annotator"),
        sa.UniqueConstraint("clip_pair_id", "slot", name="uq_assignment_clip_pair_id_slot"),
        sa.UniqueConstraint("clip_pair_id", "annotator_id", name="uq_assignment_clip_pair_id_annotator_id"),
        sa.UniqueConstraint("annotator_id", "position", name="uq_assignment_annotator_id_position"),
        sa.CheckConstraint("status IN ('claimed', 'done')", name="ck_assignment_status"),
        sa.CheckConstraint("natural_side IN ('A', 'B')", name="ck_assignment_natural_side"),
    )
    op.create_index("ix_assignment_clip_pair_id", "assignment", ["clip_pair_id"])
    op.create_index("ix_assignment_annotator_id", "assignment", ["annotator_id"])


def downgrade() -> None:
    op.drop_index("ix_assignment_annotator_id", table_name="assignment")
    op.drop_index("ix_assignment_clip_pair_id", table_name="assignment")
    op.drop_table("assignment")
    # DROP COLUMN (SQLite >= 3.35 has it): again no table copies under foreign keys.
    for table, column in [
        ("judgment", "artifact_rating_b"), ("judgment", "artifact_rating_a"),
        ("annotator", "prolific_session_id"), ("annotator", "prolific_study_id"),
        ("annotator", "practice_done_at"), ("annotator", "expires_at"), ("clip_pair", "is_practice"),
    ]:
        op.drop_column(table, column)
