"""Rule sets saved per team (ifc_host/rules.py documents), the rule set a session runs after every automation, and
the BCF archive a session was given as its task (cloud/bcf/issues.py).

Revision ID: 0008
"""
from __future__ import annotations

from alembic import op
from sqlalchemy import Column, Double, Text, inspect
from sqlalchemy.engine import Connection

from cloud.migrations import has_columns

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def present(conn: Connection) -> bool:
    return "rule_sets" in inspect(conn).get_table_names() and has_columns(conn, "sessions", "rules", "bcf_in")


def upgrade() -> None:
    op.create_table("rule_sets", Column("team", Text, primary_key=True), Column("name", Text, primary_key=True),
                    Column("document", Text, nullable=False), Column("saved_by", Text, nullable=False),
                    Column("saved", Double, nullable=False))
    op.add_column("sessions", Column("rules", Text, nullable=True))
    op.add_column("sessions", Column("bcf_in", Text, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("rules")
        batch.drop_column("bcf_in")
    op.drop_table("rule_sets")
