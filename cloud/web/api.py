"""The JSON API: sessions, messages (SSE), tool results, approval, policy, cancel, hosts."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from functools import wraps
from typing import Any

from flask import Blueprint, Response, g, jsonify, request

from cloud.assembly import run_session
from cloud.contract import ContractError
from cloud.hostlink import HELD, HostActivity, abort_on_host, session_link
from cloud.policy import POLICY_STRICTNESS
from cloud.rendezvous import Delivery
from cloud.runs import KEEPALIVE, Run
from cloud.session_refs import refs_of_row, shown_refs
from cloud.tools.relay import validate_relayed_result
from cloud.transcript import model_view, person_view
from cloud.validation_setting import VALIDATION_STRICTNESS
from cloud.vendors.base import ModelError
from cloud.vendors.registry import ModelSpecError, check_allowed_for_http, create_model
from cloud.web.auth import api_error, require_user
from cloud.web.quotas import check_sessions_per_hour, reserve_run
from cloud.web.sse import KEEPALIVE_FRAME, frame, stream_response
from cloud.web.state import nexus

api = Blueprint("api", __name__, url_prefix="/api")

MAX_MESSAGE_CHARS = 100_000


def _json_body(*required: str, optional: tuple[str, ...] = ()) -> dict[str, Any]:
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        raise ContractError("request body must be a JSON object")
    missing = [k for k in required if k not in body]
    if missing:
        raise ContractError(f"missing field(s): {', '.join(missing)}")
    unknown = set(body) - set(required) - set(optional)
    if unknown:
        raise ContractError(f"unknown field(s): {', '.join(sorted(unknown))}")
    return body


@api.errorhandler(ContractError)
def _bad_request(exc: ContractError):
    return api_error(400, str(exc))


class NotFound(Exception):
    pass


@api.errorhandler(NotFound)
def _not_found(exc: NotFound):
    return api_error(404, str(exc))


@api.errorhandler(ModelSpecError)
def _bad_model(exc: ModelSpecError):
    return api_error(exc.status, str(exc))


@api.errorhandler(ModelError)
def _unusable_model(exc: ModelError):
    # Raised while building the adapter, e.g. a scripted file that breaks the format: the client's spec.
    return api_error(400, str(exc))


def own_session(view: Callable[..., Any]) -> Callable[..., Any]:
    """Resolve <session_id> to the signed-in user's session row.

    Another user's session is answered exactly like one that does not exist (404), so ids cannot be probed.
    """
    @wraps(view)
    def wrapped(session_id: str, **kwargs: Any):
        row = nexus().store.sessions.get_session(session_id)
        if row is None or row["user_name"] != g.user.name:
            return api_error(404, f"no session {session_id}")
        return view(row, **kwargs)
    return wrapped


def _check_model(spec: Any) -> str:
    if not isinstance(spec, str) or not spec:
        raise ContractError("model: expected a model spec like anthropic:claude-sonnet-4-5")
    if any(ord(c) < 32 or ord(c) == 127 for c in spec):
        raise ContractError("model: control characters are not allowed in a model spec")
    check_allowed_for_http(spec)
    return spec


def _check_host(host_id: Any) -> str | None:
    if host_id is None:
        return None
    if not isinstance(host_id, str):
        raise ContractError("host_id: expected a string")
    # Ownership is in the store (it outlives a restart); another user's host reads as unknown.
    if nexus().store.auth.host_owner(host_id) != g.user.name:
        raise NotFound(f"host_id: no host {host_id} is known")
    return host_id


@api.post("/sessions")
@require_user()
def create_session():
    from cloud.session_refs import RefsProblem, http_refs, save_refs

    body = _json_body(optional=("host_id", "model", "refs"))
    state = nexus()
    check_sessions_per_hour(state.store, state.settings, g.user.name)
    host_id = _check_host(body.get("host_id"))
    if host_id is None:
        mine = state.hosts.for_user(g.user.name)
        host_id = mine[0].host_id if len(mine) == 1 else None
    model = _check_model(body["model"]) if body.get("model") is not None else state.default_model
    try:
        refs = http_refs(state.store, g.user.name, body.get("refs", []))
        if refs:
            _check_refs_host(state, host_id)
    except RefsProblem as exc:
        return api_error(exc.status, str(exc))
    session_id = state.store.sessions.create_session(g.user.name, host_id, model, {})
    if refs:
        save_refs(state.store, session_id, refs)
    return jsonify({"session_id": session_id, "host_id": host_id, "model": model,
                    "refs": shown_refs(refs, g.user.name)}), 201


def _check_refs_host(state: Any, host_id: str | None) -> None:
    """Reference models are for IFC hosts (Revit's are its linked models): the session's host must take them."""
    from cloud.session_refs import REFS_CAPABILITY, RefsProblem

    host = state.hosts.get(host_id) if host_id else None
    if host is None:
        raise RefsProblem("refs: a session with reference models needs a connected IFC host (host_id)", 409)
    if REFS_CAPABILITY not in (host.hello.get("capabilities") or []):
        raise RefsProblem(f"refs: host {host_id} ({host.host_app}) does not take reference models; they are for "
                          "IFC hosts (in Revit, the linked models are the references)")


@api.get("/sessions")
@require_user()
def list_sessions():
    return jsonify({"sessions": nexus().store.sessions.list_sessions(g.user.name)})


PREVIEW_CHARS = 140
PREVIEW_SESSIONS = 50


@api.get("/sessions/previews")
@require_user()
def session_previews():
    """The first thing the person asked in each of their latest sessions, for the chat page's list."""
    store = nexus().store
    previews = {}
    for row in store.sessions.list_sessions(g.user.name, limit=PREVIEW_SESSIONS):
        first = next((e for e in store.sessions.transcript(row["id"]) if e.get("role") == "user"), None)
        text = "".join(p.get("text", "") for p in (first or {}).get("content", []) if p.get("type") == "text" and not p.get("kind"))
        previews[row["id"]] = " ".join(text.split())[:PREVIEW_CHARS]
    return jsonify({"previews": previews})


@api.get("/runs")
@require_user()
def list_runs():
    """The person's runs in progress across all their sessions, and which of them wait for a decision."""
    state = nexus()
    runs = []
    for run in state.runs.active():
        row = state.store.sessions.get_session(run.session_id)
        if row is None or row["user_name"] != g.user.name:
            continue
        runs.append({"session_id": run.session_id, "host_id": row["host_id"], "model": row["model"],
                     "chunks": run.chunk_count(), "updated": row["updated"],
                     "awaiting_decision": state.channel.awaiting_decision(run.session_id)})
    return jsonify({"runs": sorted(runs, key=lambda r: -r["updated"])})


@api.get("/sessions/<session_id>")
@require_user()
@own_session
def get_session(row: dict[str, Any]):
    from cloud.ids_document import ids_summary

    session_id = row["id"]
    state = nexus()
    run = state.runs.get(session_id)
    transcript = state.store.sessions.transcript(session_id)
    return jsonify({
        "session_id": row["id"], "host_id": row["host_id"], "model": row["model"], "status": row["status"],
        "policy": row["policy"], "validation": row.get("validation") or "warn", "messages": model_view(transcript), "history": person_view(transcript),
        "usage": state.store.ledger.session_usage(session_id), "running": run is not None,
        "run_chunks": run.chunk_count() if run else 0,
        "ids": ids_summary(row.get("ids")),  # title, specifications, size: never the document
        "refs": shown_refs(refs_of_row(row), g.user.name),
    })


@api.put("/sessions/<session_id>/host")
@require_user()
@own_session
def set_host(row: dict[str, Any]):
    session_id = row["id"]
    host_id = _check_host(_json_body("host_id")["host_id"])
    nexus().store.sessions.update_session(session_id, host_id=host_id)
    return jsonify({"session_id": session_id, "host_id": host_id})


@api.put("/sessions/<session_id>/refs")
@require_user()
@own_session
def set_refs(row: dict[str, Any]):
    """Attach reference models to a session (or `[]` to detach them): they reach the host with its next script."""
    from cloud.session_refs import RefsProblem, http_refs, save_refs

    session_id = row["id"]
    state = nexus()
    try:
        refs = http_refs(state.store, g.user.name, _json_body("refs")["refs"])
        if refs:
            _check_refs_host(state, row["host_id"])
    except RefsProblem as exc:
        return api_error(exc.status, str(exc))
    save_refs(state.store, session_id, refs)
    return jsonify({"session_id": session_id, "refs": shown_refs(refs, g.user.name)})


def _stream(run: Run, after: int) -> Response:
    """The run's SSE stream from chunk `after` on: it reads nothing of the request, so none of it is kept."""
    return stream_response(_follow(run, after, nexus().settings.keepalive_s), in_request_context=False)


def _follow(run: Run, after: int, keepalive_s: float) -> Iterator[str]:
    index = after
    for chunk in run.follow(after, keepalive_s):
        if chunk is KEEPALIVE:
            yield KEEPALIVE_FRAME
        else:
            yield frame(chunk, index)
            index += 1


@api.post("/sessions/<session_id>/messages")
@require_user()
@own_session
def post_message(row: dict[str, Any]):
    session_id = row["id"]
    body = _json_body("text", optional=("model",))
    text = body["text"]
    if not isinstance(text, str) or not text.strip():
        raise ContractError("text: expected a non-empty string")
    if len(text) > MAX_MESSAGE_CHARS:
        raise ContractError(f"text: longer than {MAX_MESSAGE_CHARS:,} characters")
    state = nexus()
    spec = _check_model(body["model"]) if body.get("model") is not None else row["model"]
    if not spec:
        raise ContractError("model: this session has no model; send one (e.g. anthropic:claude-sonnet-4-5)")
    _check_model(spec)  # again at use: a scripted file may have become a symlink out of the allowed dirs
    model = create_model(spec)
    stored_model, row["model"] = row["model"], spec
    host = session_link(state.hosts, state.channel, row)
    if state.runs.get(session_id) is not None:  # refused below; a slot is taken only for a run that may start
        return api_error(409, "a run is already in progress in this session")
    from cloud.bcf.issues import task_with_topics  # bcf-client loads on first use, not with the app

    slot = reserve_run(state.settings, state.runs, g.user.name)  # counts and registers in one step
    run = state.runs.start(session_id, slot.around(lambda run: run_session(  # imported BCF topics join once
        state.store, state.settings, model, host, row, task_with_topics(state.store, session_id, text), run.cancel,
        owner=run.owner)))
    if run is None:  # a refused message must not switch the session's model either
        slot.release()
        return api_error(409, "a run is already in progress in this session")
    if spec != stored_model:
        state.store.sessions.update_session(session_id, model=spec)
    return _stream(run, 0)


@api.get("/sessions/<session_id>/stream")
@require_user()
@own_session
def reattach(row: dict[str, Any]):
    session_id = row["id"]
    run = nexus().runs.recent(session_id)  # a run that finished meanwhile still replays what was missed
    if run is None:
        return api_error(404, "no run in progress in this session")
    after = request.args.get("after", "0")
    if not after.isdigit():
        raise ContractError("after: expected a chunk index")
    return _stream(run, int(after))


@api.post("/sessions/<session_id>/tool-results")
@require_user()
@own_session
def post_tool_result(row: dict[str, Any]):
    session_id = row["id"]
    body = _json_body("tool_call_id", "result")
    if not isinstance(body["tool_call_id"], str):
        raise ContractError("tool_call_id: expected a string")
    result = body["result"]
    if isinstance(result, dict):
        result = {**result, "request_id": result.get("request_id") or body["tool_call_id"]}
    result = validate_relayed_result(result)
    delivery = nexus().channel.deliver_tool_result(session_id, body["tool_call_id"], result)
    if delivery is not Delivery.ACCEPTED:
        return api_error(409, f"tool call {body['tool_call_id']} is not pending ({delivery.value})")
    return jsonify({"accepted": True}), 202


@api.post("/sessions/<session_id>/approval")
@require_user()
@own_session
def post_approval(row: dict[str, Any]):
    session_id = row["id"]
    body = _json_body("tool_call_id", "decision", optional=("comment",))
    if not isinstance(body["tool_call_id"], str):
        raise ContractError("tool_call_id: expected a string")
    if body["decision"] not in ("keep", "discard"):
        raise ContractError("decision: expected 'keep' or 'discard'")
    comment = body.get("comment") or ""
    if not isinstance(comment, str) or len(comment) > 4000:
        raise ContractError("comment: expected a string of at most 4,000 characters")
    decision = {"decision": body["decision"], "comment": comment, "by": g.user.name}
    delivery = nexus().channel.deliver_tool_result(session_id, body["tool_call_id"], decision, kind="approval")
    if delivery is not Delivery.ACCEPTED:
        return api_error(409, f"nothing awaits approval for tool call {body['tool_call_id']}")
    return jsonify({"accepted": True, "decision": body["decision"]}), 202


@api.put("/sessions/<session_id>/policy")
@require_user()
@own_session
def put_policy(row: dict[str, Any]):
    return _put_choice(row, "policy", POLICY_STRICTNESS)


@api.put("/sessions/<session_id>/validation")
@require_user()
@own_session
def put_validation(row: dict[str, Any]):
    return _put_choice(row, "validation", VALIDATION_STRICTNESS)


def _put_choice(row: dict[str, Any], name: str, allowed: Iterable[str]):
    """Set the session's `name` to the body's value, one of `allowed`."""
    value = _json_body(name)[name]
    if not isinstance(value, str) or value not in allowed:
        raise ContractError(f"{name}: expected one of {', '.join(allowed)}")
    nexus().store.sessions.update_session(row["id"], **{name: value})
    return jsonify({"session_id": row["id"], name: value})


@api.put("/sessions/<session_id>/ids")
@require_user()
@own_session
def put_ids(row: dict[str, Any]):
    """The session's IDS: the XML document as the body (application/xml), or JSON {"ids": xml | null}; null
    or an empty body clears it. Checked here, so a document that is not XML or not an IDS is refused at once."""
    from cloud.ids_document import check_ids_text
    from ifc_host.ids_reader import MAX_IDS_BYTES, IdsProblem

    session_id = row["id"]
    if (request.content_length or 0) > MAX_IDS_BYTES:
        raise ContractError(f"ids: the IDS is {request.content_length} bytes; at most {MAX_IDS_BYTES} are accepted")
    document: str | bytes | None
    if request.mimetype in ("application/xml", "text/xml"):
        document = request.get_data() or None
    else:
        document = _json_body("ids")["ids"]
        if document is not None and not isinstance(document, str):
            raise ContractError("ids: expected the IDS document as a string, or null to clear it")
    specifications, text = None, None
    if document:
        try:  # the batch route checks with the same function (one set of messages)
            text, specifications = check_ids_text(document)
        except IdsProblem as exc:
            raise ContractError(f"ids: {exc}") from exc
    nexus().store.sessions.update_session(session_id, ids=text or None)
    return jsonify({"session_id": session_id, "ids": None if not text else {
        "bytes": len(text.encode("utf-8")), "specifications": specifications}})


@api.post("/sessions/<session_id>/cancel")
@require_user()
@own_session
def cancel(row: dict[str, Any]):
    session_id = row["id"]
    run = nexus().runs.get(session_id)
    if run is None:
        return api_error(409, "no run in progress in this session")
    run.cancel.set()
    return jsonify({"cancelled": True}), 202


@api.get("/sessions/<session_id>/results/<tool_call_id>")
@require_user()
@own_session
def get_result(row: dict[str, Any], tool_call_id: str):
    session_id = row["id"]
    store = nexus().store
    result = store.results.get_result(session_id, tool_call_id) or text_only_result(store.sessions.transcript(session_id), tool_call_id)
    return jsonify(result) if result is not None else api_error(404, f"no result for {tool_call_id}")


def text_only_result(transcript: list[dict[str, Any]], tool_call_id: str) -> dict[str, Any] | None:
    """A text-only result (a refusal, a spent budget, a lost answer: never stored apart) as the person's
    copy, rebuilt from the transcript: the same `person` words the live stream carried."""
    from cloud.tools.result import ToolResult

    for entry in transcript:
        for part in entry.get("content", []) if entry.get("role") == "tool" else []:
            if part.get("type") == "tool_result" and part.get("tool_call_id") == tool_call_id:
                text = "\n".join(p.get("text", "") for p in part.get("content", []) if p.get("type") == "text")
                return ToolResult(tool_call_id, part.get("name", ""), not part.get("is_error"), text).to_json()
    return None


@api.get("/sessions/<session_id>/images/<image_id>")
@require_user()
@own_session
def get_image(row: dict[str, Any], image_id: str):
    session_id = row["id"]
    png = nexus().store.results.get_image(session_id, image_id)
    if png is None:
        return api_error(404, f"no image {image_id}")
    return Response(png, mimetype="image/png", headers={"Cache-Control": "private, max-age=86400"})


@api.get("/hosts")
@require_user()
def list_hosts():
    hosts = nexus().hosts
    return jsonify({"hosts": [hosts.describe(h) for h in hosts.for_user(g.user.name)]})


@api.post("/hosts/<host_id>/release")
@require_user()
def release_host(host_id: str):
    """Discard the change a host holds for a decision (its owner, or an admin). The run waiting for the
    decision gets it as any discard; a hold no run waits for any more is aborted on the host."""
    state = nexus()
    connection = state.hosts.get(host_id)
    if connection is None or (connection.user_name != g.user.name and not g.user.is_admin):
        return api_error(404, f"no connected host {host_id}")
    activity = state.hosts.activity(host_id)
    if activity.state != HELD or not activity.request_id:
        return api_error(409, f"host {host_id} holds no change to release (it is {activity.state})")
    decision = {"decision": "discard", "by": g.user.name, "comment": "released from the host list"}
    delivery = Delivery.NOT_PENDING
    if activity.session_id and activity.tool_call_id:
        delivery = state.channel.deliver_tool_result(activity.session_id, activity.tool_call_id, decision,
                                                     kind="approval")
    if delivery is not Delivery.ACCEPTED:
        abort_on_host(state.hosts, host_id, activity.request_id)
        state.hosts.note_activity(host_id, HostActivity(), replacing=activity.request_id)
    return jsonify({"released": True, "host_id": host_id, "session_id": activity.session_id,
                    "tool_call_id": activity.tool_call_id}), 202


@api.get("/me")
@require_user()
def me():
    return jsonify({"user": g.user.name, "is_admin": g.user.is_admin, "policy": g.user.policy,
                    "validation": nexus().store.user_settings.user_validation(g.user.name) or "warn"})
