"""Admin rights belong to a token: a token of a user who was an admin before keeps the rights it had.

Revision ID: 0002
"""
from __future__ import annotations

from alembic import op
from sqlalchemy import Column, Integer
from sqlalchemy.engine import Connection

from cloud.migrations import has_columns

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def present(conn: Connection) -> bool:
    """Whether a database made before versioned migrations already has this change."""
    return has_columns(conn, "tokens", "is_admin")


def upgrade() -> None:
    op.add_column("tokens", Column("is_admin", Integer, nullable=False, server_default="0"))
    op.execute("UPDATE tokens SET is_admin = 1 WHERE user_name IN (SELECT name FROM users WHERE is_admin = 1)")


def downgrade() -> None:
    with op.batch_alter_table("tokens") as batch:
        batch.drop_column("is_admin")
