"""The automatic examiner's examples per stored run: each one's score and timeline.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "examiner_example",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("examiner_run_id", sa.Integer(), nullable=False),
        sa.Column("task", sa.String(), nullable=False),
        sa.Column("example", sa.String(), nullable=False),
        sa.Column("tor", sa.Integer(), nullable=True),
        sa.Column("latency_s", sa.Float(), nullable=True),
        sa.Column("timeline", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["examiner_run_id"], ["examiner_run.id"],
                                name="fk_examiner_example_examiner_run_id_examiner_run"),
        sa.PrimaryKeyConstraint("id", name="pk_examiner_example"),
        sa.UniqueConstraint("examiner_run_id", "task", "example",
                            name="uq_examiner_example_examiner_run_id_task_example"),
    )
    op.create_index("ix_examiner_example_examiner_run_id", "examiner_example", ["examiner_run_id"])


def downgrade() -> None:
    op.drop_index("ix_examiner_example_examiner_run_id", table_name="examiner_example")
    op.drop_table("examiner_example")
