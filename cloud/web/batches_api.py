"""Batches over HTTP (issue 18): start one reviewed script (or a prompt) on many models under the batch root,
list and read batches (per-file outcome, changes by kind, validation findings, images, audit entries),
follow progress live (SSE), cancel, and keep or discard each staged result under `ask`; the batch page.

Runs on the Dramatiq queue when NEXUS_REDIS_URL is set, else on an embedded pool (cloud.batch.service). A
person only ever sees their own batches (another's is answered like one that does not exist); an admin
sees all of them.
"""
from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

from flask import Blueprint, Response, current_app, g, jsonify, make_response, render_template, request

from cloud.batch import service
from cloud.batch.jobs import BatchError, BatchSpec, read_result, sha256_text
from cloud.folders.access import FolderError, Namer, access_for, check_relative
from cloud.folders.roots import NotConfigured, Roots
from cloud.ids_document import ids_summary
from cloud.policy import stricter
from cloud.skills.library import SkillError
from cloud.skills.saving import kept_automation
from cloud.vendors.registry import ModelSpecError, check_allowed_for_http, create_model
from cloud.web.auth import api_error, current_user, require_user
from cloud.web.quotas import check_limit
from cloud.web.sse import KEEPALIVE_FRAME, frame, stream_response
from cloud.web.state import nexus

batches_api = Blueprint("batches_api", __name__)

FIELDS = {"files", "out", "script", "script_name", "script_sha256", "session_id", "tool_call_id", "prompt",
          "model", "policy", "validation", "ids"}
POLICIES = ("auto", "ask", "readonly")
VALIDATIONS = ("warn", "block")
MAX_SCRIPT = 256 * 1024
MAX_PROMPT = 20_000
SHA256 = re.compile(r"^[0-9a-f]{64}$")
POLL_S = 0.5
KEEPALIVE_S = 15.0
MAX_STREAM_S = 3600.0  # a stream ends after an hour (the page reads the batch again and re-follows)
EXTENSION = "nexus_batches"


@batches_api.errorhandler(NotConfigured)
def _not_configured(exc: NotConfigured):
    return api_error(503, str(exc))


@batches_api.errorhandler(service.DecisionConflict)
def _conflict(exc: service.DecisionConflict):
    return api_error(409, str(exc))


@batches_api.errorhandler(BatchError)
def _refused(exc: BatchError):
    return api_error(400, str(exc))


@batches_api.errorhandler(FolderError)
def _folder_refused(exc: FolderError):
    return api_error(exc.status, str(exc))


@batches_api.errorhandler(ModelSpecError)
def _bad_model(exc: ModelSpecError):
    return api_error(exc.status, str(exc))


def runner() -> service.Runner:
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    found = app.extensions.get(EXTENSION)
    if found is None:
        found = app.extensions.setdefault(EXTENSION, service.Runner(nexus().store))
    return found


def _text(body: dict[str, Any], name: str, limit: int) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise BatchError(f"{name}: expected non-empty text")
    if len(value) > limit:
        raise BatchError(f"{name}: at most {limit} characters")
    return value


def _script_from_audit(body: dict[str, Any], user: str) -> tuple[str, dict[str, Any], str | None]:
    """The exact script of one of the person's kept automations, by its sha256 in the audit log (and/or the
    session and tool call it ran in): the browser never re-sends the code."""
    store = nexus().store
    sha = body.get("script_sha256")
    if sha is not None and (not isinstance(sha, str) or not SHA256.match(sha)):
        raise BatchError("script_sha256: expected 64 lowercase hex digits")
    session_id, call_id = body.get("session_id"), body.get("tool_call_id")
    if (session_id is None) != (call_id is None):
        raise BatchError("session_id and tool_call_id go together")
    if session_id is not None:
        if not isinstance(session_id, str) or not isinstance(call_id, str):
            raise BatchError("session_id, tool_call_id: expected text")
        candidates = [(session_id, call_id)]
    else:
        candidates = [(r["session_id"], r["tool_call_id"]) for r in store.ledger.audit(sha256_prefix=sha, kind="model",
                                                                                  user_name=user, limit=50)
                      if r["sha256"] == sha]
        if not candidates:
            raise BatchError("script_sha256: no script of yours with this sha256 in the audit log")
    problem = "no kept automation"
    for sid, cid in candidates:
        try:
            found = kept_automation(store, user, sid, cid)
        except SkillError as exc:
            problem = str(exc)
            continue
        if sha is not None and found["sha256"] != sha:
            problem = "script_sha256: the automation's audited script has another sha256"
            continue
        session = found["session"]
        return found["code"], {"session_id": sid, "tool_call_id": cid, "sha256": found["sha256"]}, session["policy"]
    raise BatchError(problem)


def _ids_from(body: dict[str, Any], source: dict[str, Any] | None) -> str | None:
    """The batch's IDS: `ids` (the document as a string, checked and refused with the session route's 400
    messages), or `null` for none; without the field, a batch of a session's kept automation (the chat page's
    "Apply to other models…") carries that session's IDS over."""
    from cloud.ids_document import check_ids_text
    from ifc_host.ids_reader import IdsProblem

    if "ids" not in body:
        if source is None:
            return None
        row = nexus().store.sessions.get_session(source["session_id"]) or {}
        return (row.get("ids") or None) if row.get("user_name") == g.user.name else None
    document = body["ids"]
    if document is None:
        return None
    if not isinstance(document, str):
        raise BatchError("ids: expected the IDS document as a string, or null for none")
    try:
        return check_ids_text(document)[0]
    except IdsProblem as exc:
        raise BatchError(f"ids: {exc}") from exc


def _spec_from(body: Any) -> BatchSpec:
    if not isinstance(body, dict):
        raise BatchError("expected a JSON object body")
    unknown = sorted(set(body) - FIELDS)
    if unknown:
        raise BatchError(f"unknown field(s): {', '.join(unknown)} (expected some of {', '.join(sorted(FIELDS))})")
    user = g.user
    roots = Roots.from_env()
    if "out" not in body:
        raise BatchError("out: required, a folder relative to your folder (inputs are never modified)")
    if "files" not in body:
        raise BatchError("files: required, a glob or a list of paths relative to your folder")
    access = access_for(nexus().store, roots.root, user.name)
    out = service.resolve_out(roots, access, body["out"])
    files = service.resolve_files(roots, access, body["files"], out)
    policy = body.get("policy")
    if policy is not None and policy not in POLICIES:
        raise BatchError(f"policy: expected one of {', '.join(POLICIES)}")
    validation = body.get("validation", "warn")
    if validation not in VALIDATIONS:
        raise BatchError(f"validation: expected one of {', '.join(VALIDATIONS)}")
    script = _text(body, "script", MAX_SCRIPT)
    prompt = _text(body, "prompt", MAX_PROMPT)
    model = _text(body, "model", 500)
    from_audit = any(k in body for k in ("script_sha256", "session_id", "tool_call_id"))
    if sum(bool(x) for x in (script is not None, prompt is not None, from_audit)) != 1:
        raise BatchError("give exactly one of: script, prompt (with model), or script_sha256 / session_id + "
                         "tool_call_id (a kept automation from the audit log)")
    if prompt is None and model is not None:
        raise BatchError("model: only with prompt")
    source, session_policy, name = None, None, _text(body, "script_name", 200)
    if from_audit:
        script, source, session_policy = _script_from_audit(body, user.name)
        name = name or f"audited script {source['sha256'][:12]}"
    elif prompt is not None:
        if model is None:
            raise BatchError("model: required with prompt (a model spec, e.g. anthropic:claude-sonnet-4-5)")
        check_allowed_for_http(model)
        create_model(model)
    effective = stricter(policy or session_policy or "auto", user.policy)
    if effective == "ask" and script is None:
        raise BatchError("policy ask: per-file review is for scripts (the agent's own runs decide per change)")
    ids = _ids_from(body, source)
    return service.new_spec(roots, files=files, out=out, owner=user.name, script=script, script_name=name,
                            prompt=prompt, model=model, policy=effective, validation=validation, source=source,
                            ids=ids, access=access)


def _visible(batch_id: str) -> BatchSpec:
    """The batch, if the signed-in person may see it (owner or admin); 404 otherwise, exactly alike."""
    spec = service.load(Roots.from_env(), batch_id)
    if spec is None or (spec.owner != g.user.name and not g.user.is_admin):
        raise _Missing(batch_id)
    return spec


class _Missing(Exception):
    pass


@batches_api.errorhandler(_Missing)
def _missing(exc: _Missing):
    return api_error(404, f"no batch {exc.args[0]}")


def _summary(spec: BatchSpec) -> dict[str, Any]:
    shown = _namer(spec)
    return {"batch_id": spec.batch_id, "owner": spec.owner, "created": spec.created, "kind": spec.kind,
            "script_name": spec.script_name, "script_sha256": sha256_text(spec.script) if spec.script else None,
            "prompt": spec.prompt, "model": spec.model, "policy": "ask" if spec.review else spec.policy,
            "validation": spec.validation, "review": spec.review, "source": spec.source,
            "ids": ids_summary(spec.ids),  # title, specifications, size: never the document
            "out": _shown(shown, spec.out_dir), "files": len(spec.files),
            "progress": service.progress(spec, runner().running(spec.batch_id)), "runner": runner().kind,
            "url": f"/batches/{spec.batch_id}"}


def _namer(spec: BatchSpec) -> Namer:
    """Server paths as the batch's owner names them: relative to their folder, or projects/<name>/..."""
    cache = g.setdefault("batch_namers", {})
    owner = spec.owner or ""
    if owner not in cache:
        cache[owner] = Namer(Roots.from_env().root, owner)
    return cache[owner]


def _shown(shown: Namer, path: str | None) -> str | None:
    return shown(path) if path else None


def _relative_text(spec: BatchSpec, text: str | None) -> str | None:
    """Messages name files as the person named them (no server paths)."""
    return _namer(spec).text(text) if text else text


def _file_row(spec: BatchSpec, path: str, running: set[str]) -> dict[str, Any]:
    store, shown = nexus().store, _namer(spec)
    result = read_result(spec, path)
    state = service.file_state(spec, result, path in running)
    row: dict[str, Any] = {"file": _shown(shown, path), "state": state}
    if result is None or state in ("queued", "running"):
        return row
    session_id = result.get("session_id")
    audit = store.ledger.audit(session_id=session_id) if session_id else []
    row.update({
        "ok": bool(result.get("ok")), "committed": bool(result.get("committed")),
        "changes": result.get("changes", {}), "change_kinds": result.get("change_kinds", {}),
        "change_details": result.get("change_details", []), "validation": result.get("validation", []),
        "error": _relative_text(spec, result.get("error")), "seconds": result.get("seconds"), "worker": result.get("worker"),
        "session_id": session_id, "output": _shown(shown, result.get("output")) if state != "staged" else None,
        "review": {k: v for k, v in (result.get("review") or {}).items() if k != "staged"} or None,
        "images": [i["image_id"] for i in store.results.list_images(session_id)] if session_id else [],
        "decisions": [e for e in service.events(spec) if e.get("file") == spec.relative(path)],
        "audit": [{k: r[k] for k in ("id", "ts", "user_name", "tool_call_id", "kind", "sha256", "bytes")}
                  for r in audit],
        "stdout": _relative_text(spec, result.get("stdout")) or ""})
    return row


@batches_api.post("/api/batches")
@require_user()
def start_batch():
    spec = _spec_from(request.get_json(silent=True))
    running = [s for s in service.all_batches(Roots.from_env()) if s.owner == g.user.name
               and not service.progress(s, runner().running(s.batch_id))["finished"]]
    check_limit("concurrent batches", len(running), nexus().settings.quota_concurrent_batches, retry_after_s=30)
    runner().start(spec)
    service.log_event(spec, "start", g.user.name, files=len(spec.files), runner=runner().kind,
                      script_sha256=sha256_text(spec.script) if spec.script else None)
    return jsonify({"batch_id": spec.batch_id, "files": len(spec.files), "url": f"/batches/{spec.batch_id}",
                    "policy": "ask" if spec.review else spec.policy, "runner": runner().kind,
                    "ids": ids_summary(spec.ids)}), 202


@batches_api.get("/api/batches")
@require_user()
def list_batches():
    specs = service.all_batches(Roots.from_env())
    if not g.user.is_admin or request.args.get("mine") == "1":
        specs = [s for s in specs if s.owner == g.user.name]
    return jsonify({"batches": [_summary(s) for s in specs[:200]]})


@batches_api.get("/api/batches/<batch_id>")
@require_user()
def batch_detail(batch_id: str):
    spec = _visible(batch_id)
    running = set(runner().running(spec.batch_id))
    return jsonify({**_summary(spec), "file_results": [_file_row(spec, p, running) for p in spec.files],
                    "events": service.events(spec)})


@batches_api.get("/api/batches/<batch_id>/events")
@require_user()
def batch_events(batch_id: str):
    """Progress as server-sent events: `BatchProgress` on every change, `BatchFile` as each file finishes
    (or is decided), `BatchComplete` once nothing is queued or running."""
    spec = _visible(batch_id)
    the_runner = runner()

    def frames() -> Iterator[str]:
        seen: dict[str, str] = {}
        last, quiet_since, index = None, time.monotonic(), 0
        ends = time.monotonic() + MAX_STREAM_S
        while time.monotonic() < ends:
            running = set(the_runner.running(spec.batch_id))
            for path in spec.files:
                state = service.file_state(spec, read_result(spec, path), path in running)
                if state not in ("queued", "running") and seen.get(path) != state:
                    seen[path] = state
                    index += 1
                    yield frame({"type": "BatchFile", "file": spec.relative(path), "state": state}, index)
            now = service.progress(spec, list(running))
            if now != last:
                last, quiet_since = now, time.monotonic()
                index += 1
                yield frame({"type": "BatchProgress", **now}, index)
            if now["finished"]:
                index += 1
                yield frame({"type": "BatchComplete", **now}, index)
                return
            if time.monotonic() - quiet_since > KEEPALIVE_S:
                quiet_since = time.monotonic()
                yield KEEPALIVE_FRAME
            time.sleep(POLL_S)

    return stream_response(frames())


@batches_api.post("/api/batches/<batch_id>/cancel")
@require_user()
def cancel_batch(batch_id: str):
    spec = _visible(batch_id)
    if service.progress(spec, runner().running(batch_id))["finished"]:
        return api_error(409, f"batch {batch_id} has finished: nothing to cancel")
    service.cancel(spec, g.user.name)
    return jsonify({"batch_id": batch_id, "cancelled": True}), 202


@batches_api.post("/api/batches/<batch_id>/review")
@require_user()
def review_file(batch_id: str):
    spec = _visible(batch_id)
    body = request.get_json(silent=True)
    if not isinstance(body, dict) or set(body) - {"file", "decision"}:
        raise BatchError("expected {\"file\": RELATIVE_PATH, \"decision\": \"keep\"|\"discard\"}")
    relative = check_relative(body.get("file"), "file")
    shown = _namer(spec)
    match = next((p for p in spec.files if shown(p) == relative), None)
    if match is None:
        raise BatchError(f"file: {relative!r} is not a file of this batch")
    if body.get("decision") == "keep" and spec.out_dir and spec.owner:
        # the out folder was writable when the batch started; a grant withdrawn since keeps nothing there
        owner = access_for(nexus().store, Roots.from_env().root, spec.owner)
        if not owner.allows(spec.out_dir, "write"):
            raise FolderError(f"out: {shown(spec.out_dir)!r} is no longer a folder {spec.owner} may write to "
                              "(a project folder's grant was withdrawn or made read-only): nothing kept")
    result = service.decide(spec, spec.relative(match), body.get("decision"), g.user.name)
    return jsonify({"file": relative, "decision": result["review"]["decision"], "by": g.user.name,
                    "output": _shown(shown, result.get("output"))})


@batches_api.get("/api/batches/<batch_id>/images/<image_id>")
@require_user()
def batch_image(batch_id: str, image_id: str):
    spec = _visible(batch_id)
    for path in spec.files:
        session_id = (read_result(spec, path) or {}).get("session_id")
        png = nexus().store.results.get_image(session_id, image_id) if session_id else None
        if png is not None:
            return Response(png, mimetype="image/png", headers={"Cache-Control": "private, max-age=86400"})
    return api_error(404, f"no image {image_id} in batch {batch_id}")


@batches_api.get("/batches/<batch_id>")
def batch_page(batch_id: str):
    """The batch view (progress, per-file results, keep/discard under `ask`); the page reads the API."""
    user = current_user()
    if user is None:
        return api_error(401, "missing or invalid bearer token")
    g.user = user
    try:
        _visible(batch_id)
    except NotConfigured as exc:
        return api_error(503, str(exc))
    return make_response(render_template("batch.html", user=user, batch_id=batch_id))
