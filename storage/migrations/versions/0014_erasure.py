"""Participants' rights: optional consent items per participant, the record of each erasure, and
(SQLite) ids never given twice in the tables an erasure deletes from: SQLite gives a new row the
largest id + 1, so the next participant after an erased last one would get their id (and their
`annotator-N` name, their session folder); AUTOINCREMENT never reuses one. PostgreSQL's sequences
never do.

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


NEVER_REUSED = ("participant", "annotator", "conversation_session", "recording", "dialogue_clip", "clip_pair")


def upgrade() -> None:
    with op.batch_alter_table("participant") as batch:
        batch.add_column(sa.Column("consents", sa.JSON(), nullable=False, server_default="{}"))
    if op.get_bind().dialect.name == "sqlite":  # rebuilt with AUTOINCREMENT (storage.db.upgrade: references off)
        for table in NEVER_REUSED:
            with op.batch_alter_table(table, recreate="always", table_kwargs={"sqlite_autoincrement": True}):
                pass
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
