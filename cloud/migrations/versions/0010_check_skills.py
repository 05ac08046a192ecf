"""A skill marked as a check (docs/skills.md): it prints findings, runs read-only, and can be a rule set's check.

Revision ID: 0010
"""
from __future__ import annotations

from alembic import op
from sqlalchemy import Column, Integer
from sqlalchemy.engine import Connection

from cloud.migrations import has_columns

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def present(conn: Connection) -> bool:
    return has_columns(conn, "skills", "is_check")


def upgrade() -> None:
    op.add_column("skills", Column("is_check", Integer, nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("skills") as batch:
        batch.drop_column("is_check")
