"""Core tables: studies, dialogue systems, participants, conversation sessions, recordings.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

TIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "study",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("title", sa.String(), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("updated_at", TIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_study"),
        sa.UniqueConstraint("name", name="uq_study_name"),
    )
    op.create_table(
        "dialogue_system",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_dialogue_system"),
        sa.ForeignKeyConstraint(["study_id"], ["study.id"], name="fk_dialogue_system_study_id_study"),
        sa.UniqueConstraint("study_id", "name", name="uq_dialogue_system_study_id_name"),
    )
    op.create_table(
        "participant",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("pseudonym", sa.String(), nullable=False),
        sa.Column("external_id", sa.String(), nullable=True),
        sa.Column("consent_at", TIME, nullable=True),
        sa.Column("created_at", TIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_participant"),
        sa.ForeignKeyConstraint(["study_id"], ["study.id"], name="fk_participant_study_id_study"),
        sa.UniqueConstraint("pseudonym", name="uq_participant_pseudonym"),
        sa.UniqueConstraint("study_id", "external_id", name="uq_participant_study_id_external_id"),
    )
    op.create_table(
        "conversation_session",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("participant_id", sa.Integer(), nullable=False),
        sa.Column("system_id", sa.Integer(), nullable=False),
        sa.Column("topic", sa.String(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("started_at", TIME, nullable=False),
        sa.Column("ended_at", TIME, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_conversation_session"),
        sa.ForeignKeyConstraint(
            ["participant_id"], ["participant.id"], name="fk_conversation_session_participant_id_participant"
        ),
        sa.ForeignKeyConstraint(
            ["system_id"], ["dialogue_system.id"], name="fk_conversation_session_system_id_dialogue_system"
        ),
        sa.CheckConstraint(
            "status IN ('active', 'complete', 'incomplete', 'failed')", name="ck_conversation_session_status"
        ),
    )
    op.create_index("ix_conversation_session_participant_id", "conversation_session", ["participant_id"])
    op.create_index("ix_conversation_session_system_id", "conversation_session", ["system_id"])
    op.create_table(
        "recording",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.Integer(), nullable=True),
        sa.Column("path", sa.String(), nullable=False),
        sa.Column("sha256", sa.String(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("sample_rate", sa.Integer(), nullable=False),
        sa.Column("channels", sa.Integer(), nullable=False),
        sa.Column("system_channel", sa.Integer(), nullable=True),
        sa.Column("duration_s", sa.Float(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_recording"),
        sa.ForeignKeyConstraint(
            ["session_id"], ["conversation_session.id"], name="fk_recording_session_id_conversation_session"
        ),
        sa.UniqueConstraint("path", name="uq_recording_path"),
    )
    op.create_index("ix_recording_session_id", "recording", ["session_id"])


def downgrade() -> None:
    op.drop_index("ix_recording_session_id", table_name="recording")
    op.drop_table("recording")
    op.drop_index("ix_conversation_session_system_id", table_name="conversation_session")
    op.drop_index("ix_conversation_session_participant_id", table_name="conversation_session")
    op.drop_table("conversation_session")
    op.drop_table("participant")
    op.drop_table("dialogue_system")
    op.drop_table("study")
