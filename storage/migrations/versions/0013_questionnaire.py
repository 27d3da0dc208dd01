"""Participants' answers to the questionnaire after each call and after the last.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "questionnaire_response",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("participant_id", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.Integer(), nullable=True),
        sa.Column("part", sa.String(), nullable=False),
        sa.Column("answers", sa.JSON(), nullable=False),
        sa.Column("systems", sa.JSON(), nullable=False),
        sa.Column("submitted_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["participant_id"], ["participant.id"],
                                name="fk_questionnaire_response_participant_id_participant"),
        sa.ForeignKeyConstraint(["session_id"], ["conversation_session.id"],
                                name="fk_questionnaire_response_session_id_conversation_session"),
        sa.PrimaryKeyConstraint("id", name="pk_questionnaire_response"),
        sa.UniqueConstraint("participant_id", "part", name="uq_questionnaire_response_participant_id_part"),
    )
    op.create_index("ix_questionnaire_response_participant_id", "questionnaire_response", ["participant_id"])
    op.create_index("ix_questionnaire_response_session_id", "questionnaire_response", ["session_id"])


def downgrade() -> None:
    op.drop_index("ix_questionnaire_response_session_id", table_name="questionnaire_response")
    op.drop_index("ix_questionnaire_response_participant_id", table_name="questionnaire_response")
    op.drop_table("questionnaire_response")
