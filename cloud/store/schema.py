"""The schema the newest migration makes (cloud/migrations/versions/), declared for the tests that hold the two
equal; the parts of the store (cloud/store/*.py) each name the tables they use in `TABLES`."""
from __future__ import annotations

from typing import Any

from sqlalchemy import Column, Double, Index, Integer, LargeBinary, MetaData, Table, Text

metadata = MetaData()


def _text(name: str, **kw: Any) -> Column:
    return Column(name, Text, **kw)


def _real(name: str, **kw: Any) -> Column:
    return Column(name, Double, **kw)


Table("users", metadata, _text("name", primary_key=True),
      Column("is_admin", Integer, nullable=False, server_default="0"),
      _text("policy", nullable=False, server_default="auto"), _real("created", nullable=False),
      _text("validation", nullable=False, server_default="warn"))
Table("tokens", metadata, _text("id", primary_key=True), _text("token_hash", unique=True, nullable=False),
      _text("user_name", nullable=False), _real("created", nullable=False), _real("revoked"),
      Column("is_admin", Integer, nullable=False, server_default="0"),
      _text("scope", nullable=False, server_default="user"))
Table("web_sessions", metadata, _text("id_hash", primary_key=True), _text("token_id", nullable=False),
      _real("created", nullable=False), _real("expires", nullable=False), _real("revoked"))
Table("signin_codes", metadata, _text("code_hash", primary_key=True), _text("token_id", nullable=False),
      _real("expires", nullable=False), _real("used"))
Table("host_owners", metadata, _text("host_id", primary_key=True), _text("user_name", nullable=False),
      _real("first_seen", nullable=False), _real("last_seen", nullable=False))
Table("sessions", metadata, _text("id", primary_key=True), _text("user_name", nullable=False), _text("host_id"),
      _text("model"), _real("created", nullable=False), _real("updated", nullable=False),
      _text("status", nullable=False, server_default="idle"), _text("policy", nullable=False, server_default="auto"),
      _text("state", nullable=False, server_default="{}"),
      _text("validation", nullable=False, server_default="warn"), _text("ids"), _text("refs"), _text("rules"),
      _text("bcf_in"),
      Index("sessions_user", "user_name", "created"))
Table("messages", metadata, _text("session_id", primary_key=True), Column("seq", Integer, primary_key=True),
      _text("entry", nullable=False))
Table("audit", metadata, Column("id", Integer, primary_key=True, autoincrement=True), _real("ts", nullable=False),
      _text("session_id"), _text("tool_call_id"), _text("user_name"), _text("host_id"), _text("host_app"),
      _text("capability_version"), _text("kind", nullable=False), _text("sha256", nullable=False),
      Column("bytes", Integer, nullable=False), _text("code", nullable=False), Index("audit_sha", "sha256"),
      sqlite_autoincrement=True)
Table("results", metadata, _text("session_id", primary_key=True), _text("tool_call_id", primary_key=True),
      _text("result", nullable=False))
Table("images", metadata, _text("id", primary_key=True), _text("session_id", nullable=False),
      Column("png", LargeBinary, nullable=False), _real("created", nullable=False))
Table("usage", metadata, Column("id", Integer, primary_key=True, autoincrement=True), _real("ts", nullable=False),
      _text("day", nullable=False), _text("session_id"), _text("user_name"), _text("model"),
      Column("uncached_input", Integer), Column("cache_read", Integer), Column("cache_write", Integer),
      Column("output", Integer), Column("reasoning", Integer), _real("cost"), sqlite_autoincrement=True)
Table("run_leases", metadata, _text("session_id", primary_key=True), _text("owner", nullable=False),
      _real("expires", nullable=False))
# The team library of skills (cloud/skills/): teams an admin defines, skills, immutable versions, runs.
Table("team_members", metadata, _text("user_name", primary_key=True), _text("team", nullable=False),
      Column("can_edit", Integer, nullable=False, server_default="1"), _real("added", nullable=False))
Table("skills", metadata, _text("id", primary_key=True), _text("team", nullable=False), _text("name", nullable=False),
      _text("description", nullable=False), _text("host_app", nullable=False),
      Column("portable", Integer, nullable=False, server_default="0"), _text("created_by", nullable=False),
      _real("created", nullable=False), Column("is_check", Integer, nullable=False, server_default="0"),
      Index("skills_team_name", "team", "name", unique=True))
Table("skill_versions", metadata, _text("skill_id", primary_key=True), Column("version", Integer, primary_key=True),
      _text("code", nullable=False), _text("sha256", nullable=False), _text("parameters", nullable=False),
      _text("capability_version"), _text("provenance", nullable=False), _text("example", nullable=False),
      _text("created_by", nullable=False), _real("created", nullable=False))
Table("skill_runs", metadata, Column("id", Integer, primary_key=True, autoincrement=True),
      _text("skill_id", nullable=False), Column("version", Integer, nullable=False), _real("ts", nullable=False),
      _text("user_name", nullable=False), _text("session_id"), Column("ok", Integer, nullable=False),
      _text("error"), Index("skill_runs_skill", "skill_id", "ts"), sqlite_autoincrement=True)

# Tool results and decisions answered, one row per pending request: the insert that wins is the answer
# (cloud/distributed/redis_rendezvous.py); a second delivery of the same request finds the row and is refused.
Table("deliveries", metadata, _text("session_id", primary_key=True), _text("pending_id", primary_key=True),
      _text("tool_call_id", nullable=False), _text("kind", nullable=False), _text("result", nullable=False),
      _real("created", nullable=False), Index("deliveries_created", "created"))
# Project folders under the batch root shared with teams (cloud/folders/access.py): one row per folder and team.
Table("folder_grants", metadata, _text("folder", primary_key=True), _text("team", primary_key=True),
      _text("access", nullable=False), _text("granted_by", nullable=False), _real("granted", nullable=False))
# Rule sets saved per team (ifc_host/rule_set.py documents, as JSON): checks with a severity each.
Table("rule_sets", metadata, _text("team", primary_key=True), _text("name", primary_key=True),
      _text("document", nullable=False), _text("saved_by", nullable=False), _real("saved", nullable=False))
# Findings per model per check run, counted by severity (cloud/store/finding_runs.py).
Table("finding_runs", metadata, Column("id", Integer, primary_key=True, autoincrement=True), _real("ts", nullable=False),
      _text("day", nullable=False), _text("model", nullable=False), _text("source", nullable=False),
      _text("check_name", nullable=False), _text("user_name"), _text("session_id"),
      Column("errors", Integer, nullable=False), Column("warnings", Integer, nullable=False),
      Column("infos", Integer, nullable=False), Index("finding_runs_day", "day"), sqlite_autoincrement=True)
