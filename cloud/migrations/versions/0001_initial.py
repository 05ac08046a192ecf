"""The schema as it stood when the store gained versioned migrations, minus the columns added later.

Revision ID: 0001
"""
from __future__ import annotations

from typing import Any

from alembic import op
from sqlalchemy import Column, Double, Index, Integer, LargeBinary, MetaData, Table, Text

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _text(name: str, **kw: Any) -> Column:
    return Column(name, Text, **kw)


def _real(name: str, **kw: Any) -> Column:
    return Column(name, Double, **kw)


def schema() -> MetaData:
    """The tables of this revision (a database made before versioned migrations gets the missing ones)."""
    md = MetaData()
    Table("users", md, _text("name", primary_key=True),
          Column("is_admin", Integer, nullable=False, server_default="0"),
          _text("policy", nullable=False, server_default="auto"), _real("created", nullable=False))
    Table("tokens", md, _text("id", primary_key=True), _text("token_hash", unique=True, nullable=False),
          _text("user_name", nullable=False), _real("created", nullable=False), _real("revoked"))
    Table("web_sessions", md, _text("id_hash", primary_key=True), _text("token_id", nullable=False),
          _real("created", nullable=False), _real("expires", nullable=False), _real("revoked"))
    Table("signin_codes", md, _text("code_hash", primary_key=True), _text("token_id", nullable=False),
          _real("expires", nullable=False), _real("used"))
    Table("host_owners", md, _text("host_id", primary_key=True), _text("user_name", nullable=False),
          _real("first_seen", nullable=False), _real("last_seen", nullable=False))
    Table("sessions", md, _text("id", primary_key=True), _text("user_name", nullable=False), _text("host_id"),
          _text("model"), _real("created", nullable=False), _real("updated", nullable=False),
          _text("status", nullable=False, server_default="idle"),
          _text("policy", nullable=False, server_default="auto"), _text("state", nullable=False, server_default="{}"),
          Index("sessions_user", "user_name", "created"))
    Table("messages", md, _text("session_id", primary_key=True), Column("seq", Integer, primary_key=True),
          _text("entry", nullable=False))
    Table("audit", md, Column("id", Integer, primary_key=True, autoincrement=True), _real("ts", nullable=False),
          _text("session_id"), _text("tool_call_id"), _text("user_name"), _text("host_id"), _text("host_app"),
          _text("capability_version"), _text("kind", nullable=False), _text("sha256", nullable=False),
          Column("bytes", Integer, nullable=False), _text("code", nullable=False), Index("audit_sha", "sha256"),
          sqlite_autoincrement=True)
    Table("results", md, _text("session_id", primary_key=True), _text("tool_call_id", primary_key=True),
          _text("result", nullable=False))
    Table("images", md, _text("id", primary_key=True), _text("session_id", nullable=False),
          Column("png", LargeBinary, nullable=False), _real("created", nullable=False))
    Table("usage", md, Column("id", Integer, primary_key=True, autoincrement=True), _real("ts", nullable=False),
          _text("day", nullable=False), _text("session_id"), _text("user_name"), _text("model"),
          Column("uncached_input", Integer), Column("cache_read", Integer), Column("cache_write", Integer),
          Column("output", Integer), Column("reasoning", Integer), _real("cost"), sqlite_autoincrement=True)
    Table("run_leases", md, _text("session_id", primary_key=True), _text("owner", nullable=False),
          _real("expires", nullable=False))
    Table("team_members", md, _text("user_name", primary_key=True), _text("team", nullable=False),
          Column("can_edit", Integer, nullable=False, server_default="1"), _real("added", nullable=False))
    Table("skills", md, _text("id", primary_key=True), _text("team", nullable=False), _text("name", nullable=False),
          _text("description", nullable=False), _text("host_app", nullable=False),
          Column("portable", Integer, nullable=False, server_default="0"), _text("created_by", nullable=False),
          _real("created", nullable=False), Index("skills_team_name", "team", "name", unique=True))
    Table("skill_versions", md, _text("skill_id", primary_key=True), Column("version", Integer, primary_key=True),
          _text("code", nullable=False), _text("sha256", nullable=False), _text("parameters", nullable=False),
          _text("capability_version"), _text("provenance", nullable=False), _text("example", nullable=False),
          _text("created_by", nullable=False), _real("created", nullable=False))
    Table("skill_runs", md, Column("id", Integer, primary_key=True, autoincrement=True),
          _text("skill_id", nullable=False), Column("version", Integer, nullable=False), _real("ts", nullable=False),
          _text("user_name", nullable=False), _text("session_id"), Column("ok", Integer, nullable=False),
          _text("error"), Index("skill_runs_skill", "skill_id", "ts"), sqlite_autoincrement=True)
    return md


def upgrade() -> None:
    schema().create_all(op.get_bind(), checkfirst=False)


def downgrade() -> None:
    schema().drop_all(op.get_bind())
