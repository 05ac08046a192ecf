"""Save as skill: a committed (and, under `ask`, kept) automation of one of the person's sessions becomes a
named skill, with its script exactly as it ran, its host app and capability version, its provenance and
the run's before/after as a recorded example. A check skill (`check: true`) may also come from a data collection
that ran without an error: a check reads the model and prints its findings (cloud/skills/checks.py)."""
from __future__ import annotations

from typing import Any

from cloud.skills.library import SkillError, SkillLibrary, SkillVersion
from cloud.skills.parameters import BindError, confirm_parameters, propose_parameters
from cloud.store import Store

AUTOMATION_TOOLS = ("execute_task_automation", "run_skill")
COLLECTION_TOOL = "execute_data_collection"


def kept_automation(store: Store, user_name: str, session_id: str, tool_call_id: str,
                    check: bool = False) -> dict[str, Any]:
    """{code, sha256, host_app, capability_version, result, session} of a committed automation of the
    user's own session (for a check, also a collection that ran without an error); SkillError naming what is
    missing otherwise."""
    session = store.sessions.get_session(session_id)
    if session is None or session["user_name"] != user_name:
        raise SkillError(f"session_id: no session {session_id} of yours")
    result = store.results.get_result(session_id, tool_call_id)
    collected = check and result is not None and result.get("name") == COLLECTION_TOOL
    if collected:
        if not result.get("ok"):
            raise SkillError(f"tool_call_id: the collection {tool_call_id} failed: only a check that ran "
                             "can become a skill")
    elif result is None or result.get("name") not in AUTOMATION_TOOLS:
        what = "automation or data collection" if check else "automation"
        raise SkillError(f"tool_call_id: no {what} {tool_call_id} in session {session_id}")
    decision = result.get("decision") or {}
    if not collected and (not result.get("committed") or decision.get("decision") == "discard"):
        raise SkillError(f"tool_call_id: automation {tool_call_id} did not commit (or was discarded): "
                         "only a kept change can become a skill")
    audit = store.ledger.audit(session_id=session_id)
    model = [r for r in audit if r["tool_call_id"] == tool_call_id and r["kind"] == "model"]
    epilogue = [r for r in audit if r["tool_call_id"] == tool_call_id and r["kind"] == "epilogue"]
    if not model:
        raise SkillError(f"tool_call_id: the audit log has no script for {tool_call_id}")
    return {"code": model[0]["code"], "sha256": model[0]["sha256"], "host_app": model[0]["host_app"],
            "capability_version": epilogue[0]["capability_version"] if epilogue else None,
            "result": result, "session": session, "decision": decision}


def proposal(store: Store, user_name: str, session_id: str, tool_call_id: str) -> dict[str, Any]:
    found = kept_automation(store, user_name, session_id, tool_call_id)
    return {"host_app": found["host_app"], "sha256": found["sha256"], "code": found["code"],
            "parameters": propose_parameters(found["code"])}


def save_skill(store: Store, user_name: str, request: dict[str, Any]) -> SkillVersion:
    """`request`: session_id, tool_call_id, name, description, parameters (names the person confirmed,
    or {name, description}), portable (optional)."""
    for key in ("session_id", "tool_call_id", "name", "description"):
        if not isinstance(request.get(key), str) or not request[key].strip():
            raise SkillError(f"{key}: required text")
    chosen = request.get("parameters")
    if not isinstance(chosen, list):
        raise SkillError("parameters: required list of the parameter names you confirm "
                         "(POST /api/skills/proposal lists the candidates); [] for none")
    portable, check = request.get("portable", False), request.get("check", False)
    if not isinstance(portable, bool):
        raise SkillError("portable: true or false")
    if not isinstance(check, bool):
        raise SkillError("check: true (a check skill, printing FINDING lines) or false")
    found = kept_automation(store, user_name, request["session_id"], request["tool_call_id"], check)
    try:
        parameters = confirm_parameters(found["code"], chosen)
    except BindError as exc:
        raise SkillError(str(exc)) from None
    result, decision = found["result"], found["decision"]
    provenance = {"session_id": request["session_id"], "tool_call_id": request["tool_call_id"],
                  "model": found["session"].get("model"), "saved_by": user_name,
                  "kept_by": decision.get("by") or user_name,
                  "decision": decision.get("decision", "collected" if result.get("mode") == "collect"
                                           else "auto-commit"),
                  "sha256": found["sha256"]}
    example = {"changes": result.get("changes"), "change_report": result.get("change_report"),
               "change_details": result.get("change_details"), "validation": result.get("validation"),
               "arguments": {p["name"]: p["default"] for p in parameters}}
    return SkillLibrary(store).save(
        user_name=user_name, name=request["name"].strip(), description=request["description"].strip(),
        host_app=found["host_app"], code=found["code"], parameters=parameters,
        capability_version=found["capability_version"], provenance=provenance, example=example,
        portable=portable, check=check)
