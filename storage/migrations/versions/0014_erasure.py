"""Participants' rights: optional consent items per participant, and the record of each erasure.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-06
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("participant") as batch:
        batch.add_column(sa.Column("consents", sa.JSON(), nullable=False, server_default="{}"))
    op.create_table(
        "erasure_record",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("subject", sa.String(), nullable=False),
        sa.Column("row_id", sa.Integer(), nullable=False),
        sa.Column("salt", sa.String(), nullable=False),
        sa.Column("identifier_hashes", sa.JSON(), nullable=False),
        sa.Column("reason", sa.String(), nullable=False),
        sa.Column("erased_by", sa.String(), nullable=False),
        sa.Column("erased_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("counts", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["study_id"], ["study.id"], name="fk_erasure_record_study_id_study"),
        sa.PrimaryKeyConstraint("id", name="pk_erasure_record"),
    )
    op.create_index("ix_erasure_record_study_id", "erasure_record", ["study_id"])


def downgrade() -> None:
    op.drop_index("ix_erasure_record_study_id", table_name="erasure_record")
    op.drop_table("erasure_record")
    with op.batch_alter_table("participant") as batch:
        batch.drop_column("consents")
