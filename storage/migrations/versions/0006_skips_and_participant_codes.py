"""Skipped trials (a clip that would not play is reported and passed over) and participants'
completion codes.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN and a new table, as in 0004 and 0005: no table copies under foreign keys.
    op.add_column("participant", sa.Column("completion_code", sa.String(), nullable=True))
    op.create_table(
        "skipped_trial",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("annotator_id", sa.Integer(), nullable=False),
        sa.Column("clip_pair_id", sa.Integer(), nullable=False),
        sa.Column("reason", sa.String(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_skipped_trial"),
        sa.ForeignKeyConstraint(["annotator_id"], ["annotator.id"], name="fk_skipped_trial_annotator_id_annotator"),
        sa.ForeignKeyConstraint(["clip_pair_id"], ["clip_pair.id"], name="fk_skipped_trial_clip_pair_id_clip_pair"),
        sa.UniqueConstraint("annotator_id", "clip_pair_id", name="uq_skipped_trial_annotator_id_clip_pair_id"),
    )
    op.create_index("ix_skipped_trial_annotator_id", "skipped_trial", ["annotator_id"])
    op.create_index("ix_skipped_trial_clip_pair_id", "skipped_trial", ["clip_pair_id"])


def downgrade() -> None:
    op.drop_index("ix_skipped_trial_clip_pair_id", table_name="skipped_trial")
    op.drop_index("ix_skipped_trial_annotator_id", table_name="skipped_trial")
    op.drop_table("skipped_trial")
    op.drop_column("participant", "completion_code")
