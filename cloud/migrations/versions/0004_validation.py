"""Validation after automations, per session and per user (`warn` for everything that exists).

Revision ID: 0004
"""
from __future__ import annotations

from alembic import op
from sqlalchemy import Column, Text
from sqlalchemy.engine import Connection

from cloud.migrations import has_columns

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def present(conn: Connection) -> bool:
    return has_columns(conn, "sessions", "validation") and has_columns(conn, "users", "validation")


def upgrade() -> None:
    op.add_column("sessions", Column("validation", Text, nullable=False, server_default="warn"))
    op.add_column("users", Column("validation", Text, nullable=False, server_default="warn"))


def downgrade() -> None:
    for table in ("sessions", "users"):
        with op.batch_alter_table(table) as batch:
            batch.drop_column("validation")
