"""Admin API (admin tokens only): sessions with transcripts and images, audit log, hosts, providers, usage, findings
per model over time,
tokens, project folders shared with teams. Admin is a property of a token: creating an admin token never changes what a user's other tokens
may do, and a token is demoted (PUT) or revoked (DELETE, which also closes hosts connected with it).
"""
from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from flask import Blueprint, Response, g, jsonify, request

from cloud.contract import ContractError
from cloud.folders.access import (
    ACCESS_LEVELS,
    FOLDER_MODE,
    PROJECT_NAME,
    PROJECTS,
    FolderError,
    check_project_name,
    project_folder,
)
from cloud.folders.roots import ROOT_ENV
from cloud.hostlink import WebSocketHostLink
from cloud.hosts.registry import known_providers
from cloud.policy import POLICY_STRICTNESS
from cloud.prompts import person_message
from cloud.skills.library import TEAM_NAME
from cloud.store import USER_NAME, Results
from cloud.validation_setting import VALIDATION_STRICTNESS
from cloud.web.auth import api_error, require_user
from cloud.web.state import nexus

admin_api = Blueprint("admin_api", __name__, url_prefix="/api/admin")


@admin_api.errorhandler(ContractError)
def _bad_request(exc: ContractError):
    return api_error(400, str(exc))


def _limit() -> int:
    raw = request.args.get("limit", "200")
    if not raw.isdigit() or not 1 <= int(raw) <= 5000:
        raise ContractError("limit: expected an integer between 1 and 5000")
    return int(raw)


def _filter(name: str, max_chars: int = 200) -> str | None:
    value = request.args.get(name, "").strip()
    if len(value) > max_chars:
        raise ContractError(f"{name}: at most {max_chars} characters")
    return value or None


@admin_api.get("/sessions")
@require_user(admin=True)
def sessions():
    """Filters: user, status, q (part of the session id, user, model or host id)."""
    return jsonify({"sessions": nexus().store.sessions.list_sessions(
        _filter("user"), limit=_limit(), status=_filter("status"), text=_filter("q"))})


@admin_api.get("/sessions/<session_id>")
@require_user(admin=True)
def session_detail(session_id: str):
    store = nexus().store
    row = store.sessions.get_session(session_id)
    if row is None:
        return api_error(404, f"no session {session_id}")
    transcript = store.sessions.transcript(session_id)
    return jsonify({**row, "transcript": transcript, "usage": store.ledger.session_usage(session_id),
                    "audit": store.ledger.audit(session_id=session_id), "images": store.results.list_images(session_id),
                    "outcomes": tool_outcomes(store.results, session_id, transcript)})


def tool_outcomes(results: Results, session_id: str, transcript: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """Each tool call's real outcome, from the person's stored copy of its result ({key, label}: committed,
    kept, rolled_back, discarded, cancelled, not_run, inspected, failed, timed_out, unknown), so the
    transcript never shows a discarded or refused automation as done."""
    out = {}
    for entry in transcript:
        for part in entry.get("content", []) if entry.get("role") == "tool" else []:
            if part.get("type") == "tool_result":
                key = outcome_key(results.get_result(session_id, part["tool_call_id"]), bool(part.get("is_error")))
                out[part["tool_call_id"]] = {"key": key, "label": person_message("outcome_" + key)
                                             if key != "done" else "done"}
    return out


def outcome_key(result: dict[str, Any] | None, is_error: bool) -> str:
    if result is None:
        return "failed" if is_error else "done"
    person = result.get("person") or {}
    if person.get("status"):
        return {"not run": "not_run", "cancelled": "cancelled", "unknown": "unknown"}.get(person["status"], "failed")
    decision = result.get("decision") or {}
    if result.get("cancelled") or decision.get("by") == "cancel":
        return "cancelled"
    if result.get("timed_out"):
        return "timed_out"
    if result.get("mode") == "automate":
        if decision.get("decision") == "discard":
            return "discarded"
        if result.get("committed"):
            return "kept" if decision.get("decision") == "keep" and decision.get("by") not in (None, "policy") \
                else "committed"
        return "rolled_back"
    if result.get("mode") == "collect":
        return "collected" if result.get("ok") else "failed"
    return "done" if result.get("ok", not is_error) else "failed"


@admin_api.get("/sessions/<session_id>/images/<image_id>")
@require_user(admin=True)
def session_image(session_id: str, image_id: str):
    """Any user's rendered view, for an admin reviewing their session."""
    png = nexus().store.results.get_image(session_id, image_id)
    if png is None:
        return api_error(404, f"no image {image_id} in session {session_id}")
    return Response(png, mimetype="image/png", headers={"Cache-Control": "private, max-age=86400"})


@admin_api.get("/audit")
@require_user(admin=True)
def audit():
    sha = request.args.get("sha256", "").strip().lower()
    if sha and not all(c in "0123456789abcdef" for c in sha):
        raise ContractError("sha256: expected hexadecimal digits (a prefix is enough)")
    return jsonify({"audit": nexus().store.ledger.audit(sha256_prefix=sha or None, session_id=_filter("session_id"),
                                                  limit=_limit(), user_name=_filter("user"), kind=_filter("kind"),
                                                  text=_filter("q"))})


@admin_api.get("/hosts")
@require_user(admin=True)
def hosts():
    return jsonify({"hosts": [nexus().hosts.describe(h) for h in nexus().hosts.all()],
                    "providers": [{"host_app": p.host_app, "capability_version": p.capability_version}
                                  for p in known_providers()]})


DOCTOR_TIMEOUT_S = 120.0  # the host's own pickup timeout and its checks (an image export) fit well within


@admin_api.post("/hosts/<host_id>/doctor")
@require_user(admin=True)
def host_doctor(host_id: str):
    """Run NexusAI Doctor on a connected host; its pass/fail table is returned and kept with the host."""
    state = nexus()
    connection = state.hosts.get(host_id)
    if connection is None:
        return api_error(404, f"host {host_id} is not connected")
    if "doctor" not in (connection.hello.get("capabilities") or []):
        return api_error(409, f"host {host_id} ({connection.host_app}) does not offer NexusAI Doctor")
    about = "doctor-" + uuid.uuid4().hex[:12]
    link = WebSocketHostLink(state.hosts, state.channel, host_id, connection.user_name, "admin-" + about)
    reply = link.ask({"type": "doctor"}, DOCTOR_TIMEOUT_S, threading.Event(), about=about)
    if reply.message is None:
        return api_error(504, f"host {host_id} did not answer the doctor ({reply.missing}) {reply.detail}".strip())
    if reply.message.get("type") != "doctor_result":
        return api_error(409, f"host {host_id} could not run the doctor: {reply.message.get('message')}")
    return jsonify({"host_id": host_id, "doctor": reply.message})


@admin_api.get("/findings")
@require_user(admin=True)
def findings_over_time():
    """Findings per model over time (cloud/findings_history.py): per day and model, and the latest check runs."""
    from cloud.findings_history import by_day

    store = nexus().store
    return jsonify({"by_day": by_day(store.finding_runs), "runs": store.finding_runs.latest_finding_runs(_limit())})


@admin_api.get("/usage")
@require_user(admin=True)
def usage():
    return jsonify({"usage": nexus().store.ledger.usage_summary()})


@admin_api.get("/evaluations")
@require_user(admin=True)
def evaluations():
    """Reports of `nexus eval` found under the folder the server is configured with (NEXUS_EVAL_RESULTS)."""
    from cloud.evaluation.results import ENV, list_evaluations, results_folder

    folder = results_folder()
    if folder is None or not folder.is_dir():
        return jsonify({"configured": False, "setting": ENV, "evaluations": []})
    return jsonify({"configured": True, "setting": ENV, "evaluations": list_evaluations(folder)})


@admin_api.get("/tokens")
@require_user(admin=True)
def tokens():
    return jsonify({"tokens": nexus().store.auth.list_tokens()})


def _flag(body: dict[str, Any], name: str) -> bool:
    value = body.get(name, False)
    if not isinstance(value, bool):
        raise ContractError(f"{name}: expected true or false")
    return value


@admin_api.post("/tokens")
@require_user(admin=True)
def create_token():
    """{user, admin?, host?}: a new token; admin applies to this token only, host makes a host-only token."""
    body = request.get_json(silent=True)
    if not isinstance(body, dict) or not isinstance(body.get("user"), str) or not body["user"].strip():
        raise ContractError("user: expected a non-empty user name")
    unknown = set(body) - {"user", "admin", "host"}
    if unknown:
        raise ContractError(f"unknown field(s): {', '.join(sorted(unknown))}")
    admin, host = _flag(body, "admin"), _flag(body, "host")
    if admin and host:
        raise ContractError("a token is either an admin token or a host token, not both")
    user = body["user"].strip()
    if not USER_NAME.fullmatch(user):
        raise ContractError("user: 1-64 letters, digits or . _ @ + - (starting with a letter or digit)")
    token = nexus().store.auth.create_token(user, admin=admin, scope="host" if host else "user")
    return jsonify({"user": user, "token": token, "admin": admin, "scope": "host" if host else "user"}), 201


@admin_api.put("/tokens/<token_id>")
@require_user(admin=True)
def change_token(token_id: str):
    """{admin: bool}: promote or demote one active user token."""
    body = request.get_json(silent=True)
    if not isinstance(body, dict) or set(body) != {"admin"}:
        raise ContractError("expected {\"admin\": true | false}")
    admin = _flag(body, "admin")
    if not nexus().store.auth.set_token_admin(token_id, admin):
        return api_error(404, f"no active user token {token_id}")
    return jsonify({"id": token_id, "admin": admin})


@admin_api.delete("/tokens/<token_id>")
@require_user(admin=True)
def revoke_token(token_id: str):
    state = nexus()
    if not state.store.auth.revoke_token(token_id):
        return api_error(404, f"no active token {token_id}")
    closed = state.sockets.close_token(token_id)
    return jsonify({"revoked": token_id, "hosts_disconnected": closed})


@admin_api.get("/users")
@require_user(admin=True)
def users():
    """Every user that holds or held a token, with their policy and whether they hold an active admin token."""
    store = nexus().store
    names = sorted({t["user_name"] for t in store.auth.list_tokens()})
    found = [store.auth.get_user(name) for name in names]
    return jsonify({"users": [{"name": u.name, "is_admin": u.is_admin, "policy": u.policy} for u in found if u]})


@admin_api.put("/users/<user_name>/policy")
@require_user(admin=True)
def user_policy(user_name: str):
    return _put_user_choice(user_name, "policy", POLICY_STRICTNESS, nexus().store.user_settings.set_user_policy)


@admin_api.put("/users/<user_name>/validation")
@require_user(admin=True)
def user_validation(user_name: str):
    return _put_user_choice(user_name, "validation", VALIDATION_STRICTNESS, nexus().store.user_settings.set_user_validation)


def _put_user_choice(user_name: str, name: str, allowed: Iterable[str], setter: Callable[[str, str], bool]):
    """Set the user's `name` to the body's value, one of `allowed`, with `setter` (False: no such user)."""
    body = request.get_json(silent=True)
    value = body.get(name) if isinstance(body, dict) else None
    if not isinstance(value, str) or value not in allowed:
        raise ContractError(f"{name}: expected one of {', '.join(allowed)}")
    if not setter(user_name, value):
        return api_error(404, f"no user {user_name}")
    return jsonify({"user": user_name, name: value})


# project folders under the batch root, shared with teams (cloud/folders/access.py enforces them)
@admin_api.errorhandler(FolderError)
def _bad_folder(exc: FolderError):
    return api_error(exc.status, str(exc))


def _batch_root() -> str | None:
    from cloud.folders.roots import NotConfigured, Roots

    try:
        return Roots.from_env().root
    except NotConfigured:
        return None


@admin_api.get("/folders")
@require_user(admin=True)
def folders():
    """Every project folder (on disk under <root>/projects/, or granted), with its grants."""
    root = _batch_root()
    grants: dict[str, list[dict[str, Any]]] = {}
    for row in nexus().store.folders.folder_grants():
        grants.setdefault(row["folder"], []).append({"team": row["team"], "access": row["access"],
                                                     "granted_by": row["granted_by"], "granted": row["granted"]})
    on_disk: set[str] = set()
    if root is not None and os.path.isdir(os.path.join(root, PROJECTS)):
        on_disk = {e.name for e in os.scandir(os.path.join(root, PROJECTS))
                   if e.is_dir() and PROJECT_NAME.fullmatch(e.name)}
    return jsonify({"configured": root is not None, "setting": ROOT_ENV,
                    "folders": [{"name": name, "path": f"{PROJECTS}/{name}", "exists": name in on_disk,
                                 "grants": grants.get(name, [])} for name in sorted(on_disk | set(grants))]})


@admin_api.put("/folders/<name>")
@require_user(admin=True)
def grant_folder(name: str):
    """{team, access: "read" | "read-write"}: share projects/<name> with a team (the folder is made if missing)."""
    check_project_name(name)
    body = request.get_json(silent=True)
    if not isinstance(body, dict) or set(body) != {"team", "access"}:
        raise ContractError('expected {"team": TEAM, "access": "read" | "read-write"}')
    team, access = body["team"], body["access"]
    if not isinstance(team, str) or not TEAM_NAME.fullmatch(team):
        raise ContractError("team: 1-64 letters, digits or . _ @ + - (starting with a letter or digit)")
    if access not in ACCESS_LEVELS:
        raise ContractError(f"access: expected one of {', '.join(ACCESS_LEVELS)}")
    root = _batch_root()
    if root is not None:
        try:
            os.makedirs(project_folder(root, name), mode=FOLDER_MODE, exist_ok=True)
        except OSError as exc:
            return api_error(409, f"{PROJECTS}/{name} cannot be made under the batch root ({exc.strerror}): "
                                  "nothing was granted")
    nexus().store.folders.grant_folder(name, team, access, g.user.name)
    return jsonify({"folder": name, "path": f"{PROJECTS}/{name}", "team": team, "access": access,
                    "exists": root is not None})


@admin_api.delete("/folders/<name>/teams/<team>")
@require_user(admin=True)
def revoke_folder(name: str, team: str):
    """Withdraw one team's grant on projects/<name> (the folder and its files stay)."""
    check_project_name(name)
    if not nexus().store.folders.revoke_folder(name, team):
        return api_error(404, f"team {team} has no grant on {PROJECTS}/{name}")
    return jsonify({"folder": name, "team": team, "revoked": True})
