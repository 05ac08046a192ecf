"""Deliveries: the record that a pending tool call or decision was answered, one row per pending request.

The row's key is the gate that makes an answer apply exactly once across processes (insert-if-absent);
Redis only wakes the waiting process.

Revision ID: 0005
"""
from __future__ import annotations

from alembic import op
from sqlalchemy import Column, Double, Text

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("deliveries", Column("session_id", Text, primary_key=True),
                    Column("pending_id", Text, primary_key=True), Column("tool_call_id", Text, nullable=False),
                    Column("kind", Text, nullable=False), Column("result", Text, nullable=False),
                    Column("created", Double, nullable=False))
    op.create_index("deliveries_created", "deliveries", ["created"])


def downgrade() -> None:
    op.drop_table("deliveries")
