"""Folder grants: project folders under the batch root shared with a team, read or read-write.

Revision ID: 0007
"""
from __future__ import annotations

from alembic import op
from sqlalchemy import Column, Double, Text, inspect
from sqlalchemy.engine import Connection

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def present(conn: Connection) -> bool:
    return "folder_grants" in inspect(conn).get_table_names()


def upgrade() -> None:
    op.create_table("folder_grants", Column("folder", Text, primary_key=True), Column("team", Text, primary_key=True),
                    Column("access", Text, nullable=False), Column("granted_by", Text, nullable=False),
                    Column("granted", Double, nullable=False))


def downgrade() -> None:
    op.drop_table("folder_grants")
