"""The team library in the store: teams, skills, their immutable versions and their runs.

A team is a group of users an admin defines; a user no admin has placed is in the deployment's one team,
DEFAULT_TEAM, where everyone may edit. A version's script never changes: its sha256 is recorded when it
is saved and checked before every run, and editing a skill adds a version.
"""
from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import dataclass
from typing import Any

from cloud.store import USER_NAME, Store
from shared_contract.validate import content_hash

DEFAULT_TEAM = "everyone"
SKILL_NAME = re.compile(r"[A-Za-z][A-Za-z0-9 _-]{0,63}")
TEAM_NAME = USER_NAME
MAX_DESCRIPTION = 2000


class SkillError(ValueError):
    """A request the library refuses; the message says what was wrong."""


class Tampered(SkillError):
    pass


@dataclass(frozen=True)
class Membership:
    team: str
    can_edit: bool


@dataclass
class SkillVersion:
    skill_id: str
    team: str
    name: str
    description: str
    host_app: str
    portable: bool
    version: int
    code: str
    sha256: str
    parameters: list[dict[str, Any]]
    capability_version: str | None
    provenance: dict[str, Any]
    example: dict[str, Any]
    check: bool = False  # a check skill: runs read-only, prints FINDING lines (cloud/skills/checks.py)

    def verified_code(self) -> str:
        """The stored script, only if it still has the sha256 recorded when it was saved."""
        if content_hash(self.code) != self.sha256:
            raise Tampered(f"skill {self.name!r} version {self.version}: stored script does not match its sha256")
        return self.code

    def runs_on(self, host_app: str) -> bool:
        return self.portable or self.host_app == host_app


def failure_text(error: Any) -> str:
    """A failed run's reason as one line: the host reports a script's error as {type, message, line}."""
    if isinstance(error, dict):
        line = f" (line {error['line']})" if error.get("line") else ""
        return f"{error.get('type') or 'Error'}: {error.get('message') or ''}{line}"
    return str(error) if error else ""


class SkillLibrary:
    def __init__(self, store: Store) -> None:
        self.store = store

    # teams
    def membership(self, user_name: str) -> Membership:
        rows = self.store._read("SELECT team, can_edit FROM team_members WHERE user_name = ?", (user_name,))
        return Membership(rows[0]["team"], bool(rows[0]["can_edit"])) if rows else Membership(DEFAULT_TEAM, True)

    def set_member(self, team: str, user_name: str, can_edit: bool = True) -> None:
        if not TEAM_NAME.fullmatch(team):
            raise SkillError("team: 1-64 letters, digits or . _ @ + - (starting with a letter or digit)")
        if not USER_NAME.fullmatch(user_name):
            raise SkillError("user: not a valid user name")
        with self.store._write() as db:
            db.execute("INSERT INTO team_members (user_name, team, can_edit, added) VALUES (?, ?, ?, ?) "
                       "ON CONFLICT (user_name) DO UPDATE SET team = excluded.team, can_edit = excluded.can_edit",
                       (user_name, team, int(can_edit), time.time()))

    def remove_member(self, user_name: str) -> bool:
        with self.store._write() as db:
            return db.execute("DELETE FROM team_members WHERE user_name = ?", (user_name,)).rowcount > 0

    def teams(self) -> list[dict[str, Any]]:
        rows = self.store._read("SELECT team, user_name, can_edit FROM team_members ORDER BY team, user_name")
        out: dict[str, list[dict[str, Any]]] = {}
        for r in rows:
            out.setdefault(r["team"], []).append({"user": r["user_name"], "can_edit": bool(r["can_edit"])})
        return [{"team": team, "members": members} for team, members in out.items()]

    # skills
    def save(self, *, user_name: str, name: str, description: str, host_app: str, code: str,
             parameters: list[dict[str, Any]], capability_version: str | None, provenance: dict[str, Any],
             example: dict[str, Any], portable: bool = False, check: bool = False) -> SkillVersion:
        """A new skill in the user's team, or a new version of the team's skill of that name."""
        member = self.membership(user_name)
        if not member.can_edit:
            raise SkillError(f"{user_name} may not edit skills of team {member.team}")
        if not SKILL_NAME.fullmatch(name or ""):
            raise SkillError("name: 1-64 letters, digits, spaces, _ or - (starting with a letter)")
        if not isinstance(description, str) or not description.strip() or len(description) > MAX_DESCRIPTION:
            raise SkillError(f"description: a sentence or two (1-{MAX_DESCRIPTION} characters)")
        now = time.time()
        with self.store._write() as db:
            db.lock(f"skill:{member.team}:{name}")
            rows = db.execute("SELECT id, host_app FROM skills WHERE team = ? AND name = ?",
                              (member.team, name)).mappings().all()
            if rows:
                skill_id = rows[0]["id"]
                if rows[0]["host_app"] != host_app and not portable:
                    raise SkillError(f"skill {name!r} is for {rows[0]['host_app']}, not {host_app}")
                db.execute("UPDATE skills SET description = ?, portable = ?, is_check = ? WHERE id = ?",
                           (description, int(portable), int(check), skill_id))
                version = db.execute("SELECT MAX(version) FROM skill_versions WHERE skill_id = ?",
                                     (skill_id,)).scalar_one() + 1
            else:
                skill_id, version = uuid.uuid4().hex[:16], 1
                db.execute("INSERT INTO skills (id, team, name, description, host_app, portable, created_by, "
                           "created, is_check) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                           (skill_id, member.team, name, description, host_app, int(portable), user_name, now,
                            int(check)))
            db.execute("INSERT INTO skill_versions (skill_id, version, code, sha256, parameters, capability_version, "
                       "provenance, example, created_by, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (skill_id, version, code, content_hash(code), json.dumps(parameters), capability_version,
                        json.dumps(provenance), json.dumps(example), user_name, now))
        found = self.get(user_name, name)
        assert found is not None
        return found

    def set_portable(self, user_name: str, name: str, portable: bool) -> bool:
        member = self.membership(user_name)
        if not member.can_edit:
            raise SkillError(f"{user_name} may not edit skills of team {member.team}")
        with self.store._write() as db:
            return db.execute("UPDATE skills SET portable = ? WHERE team = ? AND name = ?",
                              (int(portable), member.team, name)).rowcount > 0

    def set_check(self, user_name: str, name: str, check: bool) -> bool:
        """Mark the team's skill as a check (or not): a check runs read-only and its FINDING lines are findings."""
        member = self.membership(user_name)
        if not member.can_edit:
            raise SkillError(f"{user_name} may not edit skills of team {member.team}")
        with self.store._write() as db:
            return db.execute("UPDATE skills SET is_check = ? WHERE team = ? AND name = ?",
                              (int(check), member.team, name)).rowcount > 0

    def get(self, user_name: str, name: str, version: int | None = None) -> SkillVersion | None:
        """The skill of that name in the user's team (its latest version unless `version`)."""
        team = self.membership(user_name).team
        sql = ("SELECT s.id, s.team, s.name, s.description, s.host_app, s.portable, s.is_check, v.version, v.code, "
               "v.sha256, "
               "v.parameters, v.capability_version, v.provenance, v.example FROM skills s "
               "JOIN skill_versions v ON v.skill_id = s.id WHERE s.team = ? AND lower(s.name) = ?")
        args: list[Any] = [team, name.lower()]
        if version is not None:
            sql += " AND v.version = ?"
            args.append(version)
        rows = self.store._read(sql + " ORDER BY v.version DESC LIMIT 1", args)
        if not rows:
            return None
        r = rows[0]
        return SkillVersion(r["id"], r["team"], r["name"], r["description"], r["host_app"], bool(r["portable"]),
                            r["version"], r["code"], r["sha256"], json.loads(r["parameters"]),
                            r["capability_version"], json.loads(r["provenance"]), json.loads(r["example"]),
                            bool(r["is_check"]))

    def listing(self, user_name: str, query: str | None = None) -> list[dict[str, Any]]:
        """The user's team's skills (latest version, stats, versions), matching every word of `query`."""
        member = self.membership(user_name)
        sql = ("SELECT s.id, s.name, s.description, s.host_app, s.portable, s.is_check, s.created_by, s.created "
               "FROM skills s WHERE s.team = ?")
        args: list[Any] = [member.team]
        for word in (query or "").lower().split()[:8]:
            sql += f" AND ({self.store._contains('s.name')} OR {self.store._contains('s.description')})"
            args += [word, word]
        out = []
        for s in self.store._read(sql + " ORDER BY s.name", args):
            versions = self.store._read("SELECT version, sha256, parameters, capability_version, provenance, "
                                        "created_by, created FROM skill_versions WHERE skill_id = ? "
                                        "ORDER BY version DESC", (s["id"],))
            latest = versions[0]
            out.append({
                "name": s["name"], "description": s["description"], "host_app": s["host_app"],
                "portable": bool(s["portable"]), "check": bool(s["is_check"]), "team": member.team,
                "created_by": s["created_by"],
                "created": s["created"], "version": latest["version"], "sha256": latest["sha256"],
                "capability_version": latest["capability_version"],
                "parameters": json.loads(latest["parameters"]), "can_edit": member.can_edit,
                "versions": [{"version": v["version"], "sha256": v["sha256"], "created_by": v["created_by"],
                              "created": v["created"], "provenance": json.loads(v["provenance"])}
                             for v in versions],
                **self.stats(s["id"])})
        return out

    # runs
    def record_run(self, skill: SkillVersion, user_name: str, session_id: str | None, ok: bool,
                   error: Any) -> None:
        """One run; `error` is text or the host's structured script error ({type, message, line})."""
        with self.store._write() as db:
            db.execute("INSERT INTO skill_runs (skill_id, version, ts, user_name, session_id, ok, error) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?)",
                       (skill.skill_id, skill.version, time.time(), user_name, session_id, int(ok),
                        failure_text(error)[:2000] or None))

    def stats(self, skill_id: str) -> dict[str, Any]:
        row = self.store._read("SELECT COUNT(*) AS runs, COALESCE(SUM(ok), 0) AS ok FROM skill_runs "
                               "WHERE skill_id = ?", (skill_id,))[0]
        failure = self.store._read("SELECT ts, version, user_name, error FROM skill_runs WHERE skill_id = ? "
                                   "AND ok = 0 ORDER BY ts DESC LIMIT 1", (skill_id,))
        runs = int(row["runs"])
        return {"run_count": runs, "success_rate": round(int(row["ok"]) / runs, 3) if runs else None,
                "last_failure": dict(failure[0]) if failure else None}
