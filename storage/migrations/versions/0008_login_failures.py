"""Failed researcher logins in the database: several app processes answer the login,
and the throttle must count the failures of all of them.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "login_failure",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("client", sa.String(), nullable=False),
        sa.Column("user_name", sa.String(), nullable=False),
        sa.Column("failed_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_login_failure"),
    )
    op.create_index("ix_login_failure_client", "login_failure", ["client"])
    op.create_index("ix_login_failure_user_name", "login_failure", ["user_name"])
    op.create_index("ix_login_failure_failed_at", "login_failure", ["failed_at"])


def downgrade() -> None:
    op.drop_index("ix_login_failure_failed_at", table_name="login_failure")
    op.drop_index("ix_login_failure_user_name", table_name="login_failure")
    op.drop_index("ix_login_failure_client", table_name="login_failure")
    op.drop_table("login_failure")
