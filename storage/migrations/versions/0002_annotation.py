"""Annotation tables: dialogue clips, clip pairs, annotators, judgments.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

TIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "dialogue_clip",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("recording_id", sa.Integer(), nullable=True),
        sa.Column("audio_path", sa.String(), nullable=True),
        sa.Column("audio_sha256", sa.String(), nullable=True),
        sa.Column("activity", sa.JSON(), nullable=True),
        sa.Column("start_s", sa.Float(), nullable=False),
        sa.Column("end_s", sa.Float(), nullable=False),
        sa.Column("duration_s", sa.Float(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_dialogue_clip"),
        sa.ForeignKeyConstraint(["study_id"], ["study.id"], name="fk_dialogue_clip_study_id_study"),
        sa.ForeignKeyConstraint(["recording_id"], ["recording.id"], name="fk_dialogue_clip_recording_id_recording"),
    )
    op.create_index("ix_dialogue_clip_study_id", "dialogue_clip", ["study_id"])
    op.create_index("ix_dialogue_clip_recording_id", "dialogue_clip", ["recording_id"])
    op.create_table(
        "clip_pair",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("pair_id", sa.String(), nullable=False),
        sa.Column("perturbation", sa.String(), nullable=False),
        sa.Column("natural_clip_id", sa.Integer(), nullable=False),
        sa.Column("perturbed_clip_id", sa.Integer(), nullable=False),
        sa.Column("edit", sa.JSON(), nullable=False),
        sa.Column("is_artifact_control", sa.Boolean(), nullable=False),
        sa.Column("is_attention_check", sa.Boolean(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_clip_pair"),
        sa.ForeignKeyConstraint(["study_id"], ["study.id"], name="fk_clip_pair_study_id_study"),
        sa.ForeignKeyConstraint(
            ["natural_clip_id"], ["dialogue_clip.id"], name="fk_clip_pair_natural_clip_id_dialogue_clip"
        ),
        sa.ForeignKeyConstraint(
            ["perturbed_clip_id"], ["dialogue_clip.id"], name="fk_clip_pair_perturbed_clip_id_dialogue_clip"
        ),
        sa.UniqueConstraint("study_id", "pair_id", name="uq_clip_pair_study_id_pair_id"),
    )
    op.create_index("ix_clip_pair_natural_clip_id", "clip_pair", ["natural_clip_id"])
    op.create_index("ix_clip_pair_perturbed_clip_id", "clip_pair", ["perturbed_clip_id"])
    op.create_table(
        "annotator",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("token_hash", sa.String(), nullable=False),
        sa.Column("external_id", sa.String(), nullable=True),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("completed_at", TIME, nullable=True),
        sa.Column("completion_code", sa.String(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_annotator"),
        sa.ForeignKeyConstraint(["study_id"], ["study.id"], name="fk_annotator_study_id_study"),
        sa.UniqueConstraint("token_hash", name="uq_annotator_token_hash"),
        sa.UniqueConstraint("study_id", "external_id", name="uq_annotator_study_id_external_id"),
    )
    op.create_table(
        "judgment",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("annotator_id", sa.Integer(), nullable=False),
        sa.Column("clip_pair_id", sa.Integer(), nullable=False),
        sa.Column("natural_side", sa.String(), nullable=False),
        sa.Column("choice", sa.String(), nullable=False),
        sa.Column("rating_a", sa.Float(), nullable=True),
        sa.Column("rating_b", sa.Float(), nullable=True),
        sa.Column("artifact_rating", sa.Float(), nullable=True),
        sa.Column("plays_a", sa.Integer(), nullable=False),
        sa.Column("plays_b", sa.Integer(), nullable=False),
        sa.Column("listened_s_a", sa.Float(), nullable=False),
        sa.Column("listened_s_b", sa.Float(), nullable=False),
        sa.Column("response_s", sa.Float(), nullable=True),
        sa.Column("presented_at", TIME, nullable=True),
        sa.Column("submitted_at", TIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_judgment"),
        sa.ForeignKeyConstraint(["annotator_id"], ["annotator.id"], name="fk_judgment_annotator_id_annotator"),
        sa.ForeignKeyConstraint(["clip_pair_id"], ["clip_pair.id"], name="fk_judgment_clip_pair_id_clip_pair"),
        sa.UniqueConstraint("annotator_id", "clip_pair_id", name="uq_judgment_annotator_id_clip_pair_id"),
        sa.CheckConstraint("natural_side IN ('A', 'B')", name="ck_judgment_natural_side"),
    )
    op.create_index("ix_judgment_clip_pair_id", "judgment", ["clip_pair_id"])


def downgrade() -> None:
    op.drop_index("ix_judgment_clip_pair_id", table_name="judgment")
    op.drop_table("judgment")
    op.drop_table("annotator")
    op.drop_index("ix_clip_pair_perturbed_clip_id", table_name="clip_pair")
    op.drop_index("ix_clip_pair_natural_clip_id", table_name="clip_pair")
    op.drop_table("clip_pair")
    op.drop_index("ix_dialogue_clip_recording_id", table_name="dialogue_clip")
    op.drop_index("ix_dialogue_clip_study_id", table_name="dialogue_clip")
    op.drop_table("dialogue_clip")
