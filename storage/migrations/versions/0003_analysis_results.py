"""Cached analysis results, unique per (kind, subject, parameter hash).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

TIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "analysis_result",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=True),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("subject", sa.String(), nullable=False),
        sa.Column("parameters", sa.JSON(), nullable=False),
        sa.Column("params_hash", sa.String(), nullable=False),
        sa.Column("result", sa.JSON(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("updated_at", TIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_analysis_result"),
        sa.ForeignKeyConstraint(["study_id"], ["study.id"], name="fk_analysis_result_study_id_study"),
        sa.UniqueConstraint("kind", "subject", "params_hash", name="uq_analysis_result_kind_subject_params_hash"),
    )
    op.create_index("ix_analysis_result_study_id", "analysis_result", ["study_id"])


def downgrade() -> None:
    op.drop_index("ix_analysis_result_study_id", table_name="analysis_result")
    op.drop_table("analysis_result")
