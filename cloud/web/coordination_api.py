"""Coordination over HTTP: the team's rule sets (save, list, read, delete), the rule set a session runs after every
automation, the session's findings, and its findings or issues as a BCF archive."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from flask import Blueprint, Response, g, jsonify, request

from cloud.contract import ContractError
from cloud.findings_history import record_run
from cloud.rule_sets import RuleSetError, RuleSets
from cloud.session_findings import session_findings
from cloud.web.api import own_session
from cloud.web.auth import api_error, require_user
from cloud.web.state import nexus
from ifc_host.findings import Finding
from ifc_host.rule_set import MAX_DOCUMENT_BYTES, NAME, RuleSetProblem, parse_rule_set

coordination_api = Blueprint("coordination_api", __name__)


@coordination_api.errorhandler(RuleSetError)
@coordination_api.errorhandler(ContractError)
def _refused(exc: Exception):
    return api_error(400, str(exc))


def _body() -> Any:
    if (request.content_length or 0) > MAX_DOCUMENT_BYTES:
        raise ContractError(f"at most {MAX_DOCUMENT_BYTES} bytes are accepted")
    body = request.get_json(silent=True)
    if body is None:
        raise ContractError("expected a JSON body")
    return body


def _rule_sets() -> RuleSets:
    return RuleSets(nexus().store)


@coordination_api.get("/api/rule-sets")
@require_user()
def list_rule_sets():
    sets = _rule_sets()
    return jsonify({"team": sets.team(g.user.name), "rule_sets": sets.listing(g.user.name)})


@coordination_api.put("/api/rule-sets/<name>")
@require_user()
def save_rule_set(name: str):
    """The body is the rule set ({name?, checks}); its name, when given, must be the one in the path."""
    document = _body()
    if not isinstance(document, dict):
        raise ContractError("a rule set is a JSON object {\"name\": ..., \"checks\": [...]}")
    if document.get("name", name) != name:
        raise ContractError(f"name: the body names {document.get('name')!r}, the path {name!r}")
    saved = _rule_sets().save(g.user.name, {**document, "name": name})
    return jsonify({"team": _rule_sets().team(g.user.name), "rule_set": saved.as_json()})


@coordination_api.get("/api/rule-sets/<name>")
@require_user()
def get_rule_set(name: str):
    found = _rule_sets().get(g.user.name, name)
    if found is None:
        return api_error(404, f"no rule set {name}")
    return jsonify(found.as_json())


@coordination_api.delete("/api/rule-sets/<name>")
@require_user()
def delete_rule_set(name: str):
    if not _rule_sets().delete(g.user.name, name):
        return api_error(404, f"no rule set {name}")
    return jsonify({"deleted": name})


@coordination_api.put("/api/sessions/<session_id>/rules")
@require_user()
@own_session
def put_session_rules(row: dict[str, Any]):
    """{"rules": NAME} (a rule set saved for the team), {"rules": {...}} (a rule set document) or {"rules": null}:
    the rule set checked after every automation of the session (the document is attached as it is now)."""
    body = _body()
    if not isinstance(body, dict) or set(body) != {"rules"}:
        raise ContractError("expected {\"rules\": NAME | rule set | null}")
    value = body["rules"]
    document = None
    if isinstance(value, str):
        if not NAME.fullmatch(value):
            raise ContractError("rules: not a rule set name")
        found = _rule_sets().get(g.user.name, value)
        if found is None:
            return api_error(404, f"no rule set {value}")
        document = found.as_json()
    elif isinstance(value, dict):
        try:
            document = parse_rule_set(value).as_json()
        except RuleSetProblem as exc:
            raise ContractError(f"rules: {exc}") from None
        if any(c.get("check") == "script" and "code" not in c for c in document["checks"]):
            raise ContractError("rules: a script check naming a skill must be saved first (PUT /api/rule-sets/NAME)")
    elif value is not None:
        raise ContractError("rules: expected a rule set name, a rule set, or null")
    nexus().store.sessions.update_session(row["id"], rules=json.dumps(document) if document else None)
    return jsonify({"session_id": row["id"], "rules": None if document is None else {
        "name": document["name"], "checks": len(document["checks"])}})


@coordination_api.get("/api/sessions/<session_id>/findings")
@require_user()
@own_session
def get_findings(row: dict[str, Any]):
    return jsonify({"session_id": row["id"], "findings": session_findings(nexus().store, row["id"])})


@coordination_api.get("/api/sessions/<session_id>/bcf")
@require_user()
@own_session
def get_bcf(row: dict[str, Any]):
    """The session as a BCF archive: its imported topics with what was done about each (BCF in), else its
    findings, one topic each with the image the product captured of them."""
    from cloud.bcf.export import BcfExportProblem  # bcf-client loads on first use, not with the app
    from cloud.bcf.session import session_archive

    version = request.args.get("version", "2.1")
    if version not in ("2.1", "3.0"):
        raise ContractError(f"version: 2.1 or 3.0, got {version!r}")
    with tempfile.TemporaryDirectory(prefix="nexus-bcf-") as folder:
        out = Path(folder) / "session.bcf"
        try:
            session_archive(nexus().store, row, version, out, author=g.user.name)
        except BcfExportProblem as exc:
            raise ContractError(str(exc)) from None
        data = out.read_bytes()
    return Response(data, mimetype="application/octet-stream", headers={
        "Content-Disposition": f'attachment; filename="nexus-{row["id"][:8]}.bcf"'})


@coordination_api.post("/api/sessions/<session_id>/bcf")
@require_user()
@own_session
def post_bcf(row: dict[str, Any]):
    """A BCF archive (the body, or a multipart `file`) whose open topics become the task of the session's next
    message, each resolved to elements on the session's host (a read-only collection there)."""
    import threading
    import uuid

    from cloud.bcf.archive import BcfProblem
    from cloud.bcf.issues import (
        MAX_ARCHIVE_BYTES,
        attach_resolution,
        read_topics,
        resolver_script,
        save_imported,
    )
    from cloud.hostlink import session_link
    from cloud.hosts.registry import content_hash

    state = nexus()
    if (request.content_length or 0) > MAX_ARCHIVE_BYTES:
        raise ContractError(f"bcf: at most {MAX_ARCHIVE_BYTES} bytes are accepted")
    upload = request.files.get("file")
    data = upload.read(MAX_ARCHIVE_BYTES + 1) if upload is not None else request.get_data()
    if not data:
        raise ContractError("bcf: send the archive as the body (application/octet-stream) or as a file `file`")
    if state.runs.get(row["id"]) is not None:
        return api_error(409, "a run is in progress in this session; import BCF topics between runs")
    with tempfile.TemporaryDirectory(prefix="nexus-bcf-in-") as folder:
        path = Path(folder) / "in.bcf"
        path.write_bytes(data)
        try:
            version, topics = read_topics(path)
        except BcfProblem as exc:
            raise ContractError(f"bcf: {str(exc).replace(str(path), 'the upload')}") from None
    if not topics:
        raise ContractError("bcf: the archive has no open topic to work on")
    link = session_link(state.hosts, state.channel, row)
    if link is None or not link.connected() or link.host_app != "ifc":
        return api_error(409, "the session's IFC host is not connected: its topics are resolved to elements there")
    code = resolver_script(topics)
    call_id = f"bcf_{uuid.uuid4().hex[:12]}"
    state.store.ledger.record_scripts([{"session_id": row["id"], "tool_call_id": call_id, "user_name": g.user.name,
                                 "host_id": link.host_id, "host_app": link.host_app, "capability_version": None,
                                 "kind": "bcf_resolve", "code": code, "sha256": content_hash(code)}])
    reply = link.ask({"type": "execute", "mode": "collect", "code": code, "timeout_s": 120}, 150,
                     threading.Event(), about=call_id)
    message = reply.message or {}
    try:
        resolved = json.loads((message.get("stdout") or "").strip().splitlines()[-1])
    except (IndexError, ValueError):
        error = (message.get("error") or {}).get("message") or reply.detail or "no answer"
        return api_error(502, f"the host could not resolve the topics: {error}")
    attach_resolution(topics, resolved)
    save_imported(state.store, row["id"], data, version, topics)
    return jsonify({"session_id": row["id"], "version": version, "topics": [
        {"guid": t["guid"], "title": t["title"], "resolved_by": t["resolved"]["how"],
         "elements": len(t["resolved"]["elements"]), "missing": len(t["resolved"]["missing"])} for t in topics]})


CHECK_SCRIPT = """import json
from ifc_host.rule_set import parse_rule_set
from ifc_host.rules import run_rule_set, script_findings
rules = parse_rule_set(json.loads({document!r}))
found = run_rule_set(rules, {name!r}, models={{{name!r}: model}}, run_script=script_findings)  # in the sandbox
print(json.dumps([f.as_json() for f in found]))
"""


@coordination_api.post("/api/sessions/<session_id>/check")
@require_user()
@own_session
def run_check(row: dict[str, Any]):
    """{"rules": NAME | rule set}: run the rule set now over the whole working model, on the session's IFC host
    (a read-only collection there, audited); its findings are returned and join the session's findings."""
    import threading
    import time
    import uuid

    from cloud.hostlink import session_link
    from cloud.hosts.registry import content_hash
    from cloud.session_findings import CHECK_PREFIX

    body = _body()
    if not isinstance(body, dict) or set(body) != {"rules"}:
        raise ContractError("expected {\"rules\": NAME | rule set}")
    value = body["rules"]
    if isinstance(value, str) and NAME.fullmatch(value):
        found = _rule_sets().get(g.user.name, value)
        if found is None:
            return api_error(404, f"no rule set {value}")
        document = found.as_json()
    elif isinstance(value, dict):
        try:
            document = parse_rule_set(value).as_json()
        except RuleSetProblem as exc:
            raise ContractError(f"rules: {exc}") from None
    else:
        raise ContractError("rules: expected a rule set name or a rule set")
    state = nexus()
    if state.runs.get(row["id"]) is not None:
        return api_error(409, "a run is in progress in this session; check between runs")
    link = session_link(state.hosts, state.channel, row)
    if link is None or not link.connected() or link.host_app != "ifc":
        return api_error(409, "the session's IFC host is not connected: rule sets run there")
    path = str(link.hello.document.get("path") or "")  # findings name models by file name, as after automations
    name = Path(path).name if path else "model.ifc"
    code = CHECK_SCRIPT.format(document=json.dumps(document), name=name)
    call_id = f"{CHECK_PREFIX}{time.time_ns()}-{uuid.uuid4().hex[:8]}"
    state.store.ledger.record_scripts([{"session_id": row["id"], "tool_call_id": call_id, "user_name": g.user.name,
                                 "host_id": link.host_id, "host_app": link.host_app, "capability_version": None,
                                 "kind": "rule_set", "code": code, "sha256": content_hash(code)}])
    timeout = state.settings.script_timeout_s
    reply = link.ask({"type": "execute", "mode": "collect", "code": code, "timeout_s": timeout}, timeout + 30,
                     threading.Event(), about=call_id)
    message = reply.message or {}
    try:
        findings = json.loads((message.get("stdout") or "").strip().splitlines()[-1])
    except (IndexError, ValueError):
        error = (message.get("error") or {}).get("message") or reply.detail or "no answer"
        return api_error(502, f"the host could not run the rule set: {error}")
    state.store.results.save_result(row["id"], call_id, {"rule_set": document["name"], "findings": findings})
    record_run(state.store.finding_runs, model=name, source="check", check_name=document["name"],
               findings=[Finding.from_json(f) for f in findings], user_name=g.user.name, session_id=row["id"])
    return jsonify({"session_id": row["id"], "check_id": call_id, "rule_set": document["name"], "findings": findings})
