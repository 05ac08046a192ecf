"""Token scope: a `host` token connects a host runtime and nothing else; every existing token is a user's.

Revision ID: 0003
"""
from __future__ import annotations

from alembic import op
from sqlalchemy import Column, Text
from sqlalchemy.engine import Connection

from cloud.migrations import has_columns

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def present(conn: Connection) -> bool:
    return has_columns(conn, "tokens", "scope")


def upgrade() -> None:
    op.add_column("tokens", Column("scope", Text, nullable=False, server_default="user"))


def downgrade() -> None:
    with op.batch_alter_table("tokens") as batch:
        batch.drop_column("scope")
