"""The team library over HTTP: save a kept automation as a skill, list and search the team's skills (with
versions, who may edit, run counts, success rate, last failure), read a version's script, mark a skill
portable; admins define teams. A user only ever sees their own team's library."""
from __future__ import annotations

from typing import Any

from flask import Blueprint, g, jsonify, request

from cloud.skills.library import SkillError, SkillLibrary
from cloud.skills.pyrevit import library_payload
from cloud.skills.saving import proposal, save_skill
from cloud.web.auth import api_error, current_user, require_user
from cloud.web.state import nexus

skills_api = Blueprint("skills_api", __name__)


@skills_api.errorhandler(SkillError)
def _refused(exc: SkillError):
    return api_error(400, str(exc))


def _body() -> dict[str, Any]:
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        raise SkillError("expected a JSON object body")
    return body


def _library() -> SkillLibrary:
    return SkillLibrary(nexus().store)


@skills_api.get("/api/skills")
@require_user()
def list_skills():
    query = request.args.get("q", "").strip()
    if len(query) > 200:
        raise SkillError("q: at most 200 characters")
    member = _library().membership(g.user.name)
    return jsonify({"team": member.team, "can_edit": member.can_edit,
                    "skills": _library().listing(g.user.name, query or None)})


@skills_api.get("/api/skills/pyrevit")
def pyrevit_bundles():
    """The Revit skills of the token's team as pushbutton bundles, for the extension's "Team skills" panel.
    A host token may read this one route (the Revit host is what runs these scripts); nothing else."""
    user = current_user(cookie=False)
    if user is None:
        return api_error(401, "missing or invalid bearer token")
    nexus().request_rate.admit(user.name)
    return jsonify({"team": _library().membership(user.name).team,
                    "bundles": library_payload(nexus().store, user.name)})


@skills_api.post("/api/skills/proposal")
@require_user()
def propose():
    """The candidate parameters (the script's top-level literals) of a kept automation, to confirm."""
    body = _body()
    for key in ("session_id", "tool_call_id"):
        if not isinstance(body.get(key), str):
            raise SkillError(f"{key}: required text")
    return jsonify(proposal(nexus().store, g.user.name, body["session_id"], body["tool_call_id"]))


@skills_api.post("/api/skills")
@require_user()
def save():
    skill = save_skill(nexus().store, g.user.name, _body())
    return jsonify({"name": skill.name, "version": skill.version, "sha256": skill.sha256, "team": skill.team,
                    "host_app": skill.host_app, "parameters": skill.parameters, "check": skill.check,
                    "provenance": skill.provenance}), 201


@skills_api.get("/api/skills/<name>")
@require_user()
def detail(name: str):
    raw = request.args.get("version")
    if raw is not None and not raw.isdigit():
        raise SkillError("version: expected a positive integer")
    skill = _library().get(g.user.name, name, int(raw) if raw else None)
    if skill is None:
        return api_error(404, f"no skill {name!r} in your team's library")
    return jsonify({"name": skill.name, "description": skill.description, "version": skill.version,
                    "host_app": skill.host_app, "portable": skill.portable, "check": skill.check, "code": skill.code,
                    "sha256": skill.sha256, "parameters": skill.parameters,
                    "capability_version": skill.capability_version, "provenance": skill.provenance,
                    "example": skill.example})


@skills_api.put("/api/skills/<name>")
@require_user()
def update(name: str):
    """{"portable": true|false} and/or {"check": true|false} (a check skill: read-only, prints FINDING lines)."""
    body = _body()
    if not body or set(body) - {"portable", "check"} or not all(isinstance(v, bool) for v in body.values()):
        raise SkillError("expected {\"portable\": true|false} and/or {\"check\": true|false}")
    library = _library()
    if library.get(g.user.name, name) is None:
        return api_error(404, f"no skill {name!r} in your team's library")
    if "portable" in body:
        library.set_portable(g.user.name, name, body["portable"])
    if "check" in body:
        library.set_check(g.user.name, name, body["check"])
    return jsonify({"name": name, **body})


@skills_api.get("/api/admin/teams")
@require_user(admin=True)
def teams():
    return jsonify({"teams": _library().teams()})


@skills_api.put("/api/admin/teams/<team>/members/<user_name>")
@require_user(admin=True)
def add_member(team: str, user_name: str):
    body = request.get_json(silent=True) or {}
    can_edit = body.get("can_edit", True) if isinstance(body, dict) else True
    if not isinstance(can_edit, bool):
        raise SkillError("can_edit: true or false")
    _library().set_member(team, user_name, can_edit)
    return jsonify({"team": team, "user": user_name, "can_edit": can_edit})


@skills_api.delete("/api/admin/teams/<team>/members/<user_name>")
@require_user(admin=True)
def remove_member(team: str, user_name: str):
    if _library().membership(user_name).team != team or not _library().remove_member(user_name):
        return api_error(404, f"{user_name} is not a member of {team}")
    return jsonify({"removed": user_name})
