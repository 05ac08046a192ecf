"""An IDS (buildingSMART Information Delivery Specification) per session, checked after every automation.

Revision ID: 0006
"""
from __future__ import annotations

from alembic import op
from sqlalchemy import Column, Text
from sqlalchemy.engine import Connection

from cloud.migrations import has_columns

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def present(conn: Connection) -> bool:
    return has_columns(conn, "sessions", "ids")


def upgrade() -> None:
    op.add_column("sessions", Column("ids", Text, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("ids")
