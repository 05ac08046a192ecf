"""A session's findings: everything the checks after its automations found that the scripts introduced
(validation's schema, model-rule and IDS findings, and its rule set's), in the one finding type
(ifc_host/findings.py), in the order of the runs, each with the tool call that introduced it, whether that
automation is in the model (committed) and the image the product captured of it, and the findings of the check
skills the session ran (cloud/skills/checks.py) where they ran; then the findings of rule sets
run on demand over the whole model (`check-...` ids)."""
from __future__ import annotations

from typing import Any

from cloud.store import Store
from cloud.transcript import tool_calls
from ifc_host.findings import Finding

CHECK_PREFIX = "check-"  # results of rule sets run on demand (POST /api/sessions/<id>/check)


def session_findings(store: Store, session_id: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for call_id in _tool_call_ids(store, session_id):
        result = store.results.get_result(session_id, call_id)
        validation = (result or {}).get("validation") or {}
        image = (result or {}).get("image") or {}
        for finding in validation.get("unified") or []:
            out.append({**finding, "tool_call_id": call_id, "committed": bool(result.get("committed")),
                        "image_id": image.get("image_id")})
        for finding in (result or {}).get("findings") or []:  # a check skill's run (cloud/skills/checks.py)
            out.append({**finding, "tool_call_id": call_id, "committed": True, "image_id": None,
                        "check_skill": result.get("check_skill")})
    for call_id, result in store.results.results_with_prefix(session_id, CHECK_PREFIX):
        for finding in result.get("findings") or []:
            out.append({**finding, "tool_call_id": call_id, "committed": True, "image_id": None,
                        "rule_set": result.get("rule_set")})
    return out


def as_findings(rows: list[dict[str, Any]]) -> list[Finding]:
    return [Finding.from_json(r) for r in rows]


def _tool_call_ids(store: Store, session_id: str) -> list[str]:
    ids: list[str] = []
    for entry in store.sessions.transcript(session_id):
        if entry.get("role") == "assistant":
            ids += [c["id"] for c in tool_calls(entry)]
    return list(dict.fromkeys(ids))
