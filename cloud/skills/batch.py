"""A skill applied to many files through the batch runner (`nexus batch --ifc GLOB --skill NAME[@VERSION]`).

Before any file is touched, the skill is looked up in the team library of `--user`, its stored script is
checked against the sha256 recorded when the version was saved, its host app against the IFC host's, and
the arguments are bound exactly as `nexus skill run` binds them. The batch records the version it pinned,
the skill's sha256, the arguments and the bound script; every file then checks them again against the store
before its host starts (a version tampered with mid-batch fails the remaining files, nothing reaches them),
runs the bound script as an automation (one transaction, change report, validation, audit), and counts one
run in the skill's statistics.
"""
from __future__ import annotations

import re
from typing import Any

from cloud.skills.library import SkillError, SkillLibrary, SkillVersion, Tampered
from cloud.skills.parameters import BindError, bind
from cloud.store import Store

REFERENCE = re.compile(r"(?P<name>.+?)(?:@v?(?P<version>[0-9]+))?")


def parse_reference(reference: str) -> tuple[str, int | None]:
    """`NAME` or `NAME@VERSION` (`NAME@v3` too)."""
    match = REFERENCE.fullmatch(reference.strip())
    if match is None or not match["name"].strip():
        raise SkillError(f"--skill {reference!r}: expected NAME or NAME@VERSION")
    return match["name"].strip(), int(match["version"]) if match["version"] else None


def _checked(store: Store, user: str, name: str, version: int | None, host_app: str) -> SkillVersion:
    skill = SkillLibrary(store).get(user, name, version)
    if skill is None:
        which = f"{name!r}" + (f" version {version}" if version is not None else "")
        raise SkillError(f"no skill named {which} in the library of {user}'s team (nexus skills list)")
    skill.verified_code()  # Tampered: refused
    if not skill.runs_on(host_app):
        raise SkillError(f"skill {skill.name!r} was made for {skill.host_app} and this host is {host_app}; "
                         "a person can mark it portable")
    return skill


def prepare(store: Store, user: str, reference: str, args: dict[str, Any], host_app: str) -> dict[str, Any]:
    """What the batch records for a skill: the pinned version, its sha256, the arguments, the bound script
    (the batch's task) and a name for the reports. SkillError (Tampered, BindError as SkillError) refuses."""
    name, version = parse_reference(reference)
    skill = _checked(store, user, name, version, host_app)
    try:
        script, values = bind(skill.code, skill.parameters, args)
    except BindError as exc:
        params = ", ".join(f"{p['name']} ({p['type']})" for p in skill.parameters) or "none"
        raise SkillError(f"skill {skill.name!r}: {exc}; its parameters: {params}") from exc
    return {"skill": {"name": skill.name, "version": skill.version, "sha256": skill.sha256, "user": user,
                      "args": dict(args), "values": values},
            "script": script, "script_name": f"skill {skill.name} v{skill.version}"}


def refusal(store: Store, recorded: dict[str, Any], script: str | None, host_app: str) -> str | None:
    """Why this file may not run the batch's skill (checked before its host starts), or None."""
    try:
        skill = _checked(store, recorded["user"], recorded["name"], recorded["version"], host_app)
        if skill.sha256 != recorded["sha256"]:
            raise Tampered(f"skill {skill.name!r} version {skill.version}: its sha256 is not the one this "
                           "batch was started with")
        bound, _ = bind(skill.code, skill.parameters, recorded["args"])
    except (SkillError, BindError, KeyError, TypeError) as exc:
        return f"skill refused: {exc}"
    if bound != script:
        return "skill refused: the batch's script is not the skill's script bound with the batch's arguments"
    return None


def verified_for_run(store: Store, recorded: dict[str, Any], host_app: str) -> tuple[SkillVersion, str]:
    """Again at the last moment before a file's run: the stored skill with the recorded sha256 and its script
    bound with the batch's arguments. A refusal raises (the file fails, nothing reaches its host)."""
    skill = _checked(store, recorded["user"], recorded["name"], recorded["version"], host_app)
    if skill.sha256 != recorded["sha256"]:
        raise Tampered(f"skill {skill.name!r}: its sha256 is not the one this batch was started with")
    code, _ = bind(skill.verified_code(), skill.parameters, recorded["args"])
    return skill, code
