"""One row per check run per model (cloud/findings_history.py): its findings counted by severity, for the admin
console's chart of findings per model over time.

Revision ID: 0011
"""
from __future__ import annotations

from alembic import op
from sqlalchemy import Column, Double, Index, Integer, Text, inspect
from sqlalchemy.engine import Connection

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def present(conn: Connection) -> bool:
    return "finding_runs" in inspect(conn).get_table_names()


def upgrade() -> None:
    op.create_table("finding_runs", Column("id", Integer, primary_key=True, autoincrement=True),
                    Column("ts", Double, nullable=False), Column("day", Text, nullable=False),
                    Column("model", Text, nullable=False), Column("source", Text, nullable=False),
                    Column("check_name", Text, nullable=False), Column("user_name", Text),
                    Column("session_id", Text), Column("errors", Integer, nullable=False),
                    Column("warnings", Integer, nullable=False), Column("infos", Integer, nullable=False),
                    Index("finding_runs_day", "day"), sqlite_autoincrement=True)


def downgrade() -> None:
    op.drop_table("finding_runs")
