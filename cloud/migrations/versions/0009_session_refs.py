"""The reference models of a federated session (JSON: [{"name", "path"}]), sent with every script.

Revision ID: 0009
"""
from __future__ import annotations

from alembic import op
from sqlalchemy import Column, Text
from sqlalchemy.engine import Connection

from cloud.migrations import has_columns

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def present(conn: Connection) -> bool:
    return has_columns(conn, "sessions", "refs")


def upgrade() -> None:
    op.add_column("sessions", Column("refs", Text, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("refs")
