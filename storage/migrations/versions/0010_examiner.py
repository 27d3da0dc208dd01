"""The automatic examiner's results per dialogue system: one row per system and task set.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "examiner_run",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("system", sa.String(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("task_set", sa.JSON(), nullable=False),
        sa.Column("task_set_hash", sa.String(), nullable=False),
        sa.Column("calls", sa.Integer(), nullable=False),
        sa.Column("summary", sa.JSON(), nullable=False),
        sa.Column("scores", sa.JSON(), nullable=False),
        sa.Column("run_dir", sa.String(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_examiner_run"),
        sa.UniqueConstraint("system", "task_set_hash", name="uq_examiner_run_system_task_set_hash"),
    )
    op.create_index("ix_examiner_run_system", "examiner_run", ["system"])


def downgrade() -> None:
    op.drop_index("ix_examiner_run_system", table_name="examiner_run")
    op.drop_table("examiner_run")
