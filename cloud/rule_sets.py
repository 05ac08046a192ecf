"""Rule sets saved per team: save (members who may edit their team's library), list, read, delete, and the rule
set a session runs after every automation. A saved rule set always holds its IDS documents and check scripts
itself; a `script` check naming a check skill of the team (`"skill": NAME`, a skill marked as a check) is given that
skill's code when it is saved.
The team is the skill library's (cloud/skills/library.py): a user only ever sees their own team's rule sets."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from cloud.skills.library import SkillLibrary
from cloud.store import Store
from ifc_host.rule_set import RuleSet, RuleSetProblem, parse_rule_set, read_rule_set_file


class RuleSetError(ValueError):
    """Refused: the message says what (a bad document, an unknown name, no right to edit)."""


class RuleSets:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.skills = SkillLibrary(store)

    def team(self, user_name: str) -> str:
        return self.skills.membership(user_name).team

    def save(self, user_name: str, document: Any) -> RuleSet:
        member = self.skills.membership(user_name)
        if not member.can_edit:
            raise RuleSetError(f"{user_name} may not edit rule sets of team {member.team}")
        try:
            rules = parse_rule_set(document)
        except RuleSetProblem as exc:
            raise RuleSetError(str(exc)) from None
        rules = self._with_skill_code(user_name, rules)
        self.store.rule_sets.save_rule_set(member.team, rules.name, json.dumps(rules.as_json()), user_name)
        return rules

    def _with_skill_code(self, user_name: str, rules: RuleSet) -> RuleSet:
        checks = []
        for number, check in enumerate(rules.checks, 1):
            if check.kind == "script" and check.code is None and check.skill:
                skill = self.skills.get(user_name, check.skill)
                if skill is None:
                    raise RuleSetError(f"check {number} (script): the team has no skill {check.skill!r}")
                if not skill.check:
                    raise RuleSetError(f"check {number} (script): the skill {check.skill!r} is not marked as a check "
                                       f"(PUT /api/skills/{check.skill} {{\"check\": true}})")
                if not skill.runs_on("ifc"):
                    raise RuleSetError(f"check {number} (script): the skill {check.skill!r} is not for IFC models")
                check = replace(check, code=skill.verified_code(), name=check.name or check.skill)
            checks.append(check)
        return replace(rules, checks=tuple(checks))

    def listing(self, user_name: str) -> list[dict[str, Any]]:
        out = []
        for row in self.store.rule_sets.list_rule_sets(self.team(user_name)):
            document = json.loads(row["document"])
            out.append({"name": row["name"], "saved_by": row["saved_by"], "saved": row["saved"],
                        "checks": [{k: c[k] for k in ("check", "severity", "name") if k in c}
                                   for c in document["checks"]]})
        return out

    def get(self, user_name: str, name: str) -> RuleSet | None:
        row = self.store.rule_sets.rule_set(self.team(user_name), name)
        return parse_rule_set(json.loads(row["document"])) if row else None

    def delete(self, user_name: str, name: str) -> bool:
        member = self.skills.membership(user_name)
        if not member.can_edit:
            raise RuleSetError(f"{user_name} may not edit rule sets of team {member.team}")
        return self.store.rule_sets.delete_rule_set(member.team, name)


def resolve(store: Store | None, user_name: str, name_or_file: str) -> RuleSet:
    """A rule set file (a path that exists, or ends in .json) or the name of one saved for the user's team."""
    path = Path(name_or_file)
    if path.suffix.lower() == ".json" or path.is_file():
        try:
            return read_rule_set_file(path)
        except RuleSetProblem as exc:
            raise RuleSetError(str(exc)) from None
    if store is None:
        raise RuleSetError(f"no rule set file {name_or_file}")
    found = RuleSets(store).get(user_name, name_or_file)
    if found is None:
        raise RuleSetError(f"no rule set {name_or_file!r}: neither a file nor one saved for team "
                           f"{RuleSets(store).team(user_name)}")
    return found


def session_rules(store: Store, session_id: str) -> dict[str, Any] | None:
    """The rule set the session runs after every automation (the document attached to it), or None."""
    session = store.sessions.get_session(session_id)
    text = session.get("rules") if session else None
    return json.loads(text) if text else None
