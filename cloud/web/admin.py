"""Admin API (admin tokens only): sessions with transcripts, audit log, hosts, providers, usage, tokens."""
from __future__ import annotations

from flask import Blueprint, jsonify, request

from cloud.contract import ContractError
from cloud.hosts.registry import known_providers
from cloud.policy import POLICY_STRICTNESS
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


@admin_api.get("/sessions")
@require_user(admin=True)
def sessions():
    return jsonify({"sessions": nexus().store.list_sessions(limit=_limit())})


@admin_api.get("/sessions/<session_id>")
@require_user(admin=True)
def session_detail(session_id: str):
    store = nexus().store
    row = store.get_session(session_id)
    if row is None:
        return api_error(404, f"no session {session_id}")
    return jsonify({**row, "transcript": store.transcript(session_id), "usage": store.session_usage(session_id),
                    "audit": store.audit(session_id=session_id)})


@admin_api.get("/audit")
@require_user(admin=True)
def audit():
    sha = request.args.get("sha256", "").strip().lower()
    if sha and not all(c in "0123456789abcdef" for c in sha):
        raise ContractError("sha256: expected hexadecimal digits (a prefix is enough)")
    return jsonify({"audit": nexus().store.audit(sha256_prefix=sha or None,
                                                  session_id=request.args.get("session_id") or None,
                                                  limit=_limit())})


@admin_api.get("/hosts")
@require_user(admin=True)
def hosts():
    return jsonify({"hosts": [h.describe() for h in nexus().hosts.all()],
                    "providers": [{"host_app": p.host_app, "capability_version": p.capability_version}
                                  for p in known_providers()]})


@admin_api.get("/usage")
@require_user(admin=True)
def usage():
    return jsonify({"usage": nexus().store.usage_summary()})


@admin_api.get("/tokens")
@require_user(admin=True)
def tokens():
    return jsonify({"tokens": nexus().store.list_tokens()})


@admin_api.post("/tokens")
@require_user(admin=True)
def create_token():
    body = request.get_json(silent=True)
    if not isinstance(body, dict) or not isinstance(body.get("user"), str) or not body["user"].strip():
        raise ContractError("user: expected a non-empty user name")
    admin = body.get("admin", False)
    if not isinstance(admin, bool):
        raise ContractError("admin: expected true or false")
    token = nexus().store.create_token(body["user"].strip(), admin=admin)
    return jsonify({"user": body["user"].strip(), "token": token}), 201


@admin_api.delete("/tokens/<token_id>")
@require_user(admin=True)
def revoke_token(token_id: str):
    if not nexus().store.revoke_token(token_id):
        return api_error(404, f"no active token {token_id}")
    return jsonify({"revoked": token_id})


@admin_api.get("/users")
@require_user(admin=True)
def users():
    """Every user that holds or held a token, with their admin flag and policy."""
    store = nexus().store
    names = sorted({t["user_name"] for t in store.list_tokens()})
    found = [store.get_user(name) for name in names]
    return jsonify({"users": [{"name": u.name, "is_admin": u.is_admin, "policy": u.policy} for u in found if u]})


@admin_api.put("/users/<user_name>/policy")
@require_user(admin=True)
def user_policy(user_name: str):
    body = request.get_json(silent=True)
    policy = body.get("policy") if isinstance(body, dict) else None
    if policy not in POLICY_STRICTNESS:
        raise ContractError(f"policy: expected one of {', '.join(POLICY_STRICTNESS)}")
    if not nexus().store.set_user_policy(user_name, policy):
        return api_error(404, f"no user {user_name}")
    return jsonify({"user": user_name, "policy": policy})
