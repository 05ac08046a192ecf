"""Save as skill under the `ask` policy on the real IFC host (issue 19, item 1): an automation the person kept
becomes a skill that records who kept it; one they discarded, or one whose script failed, is refused over the
API (proposal and save) and nothing is added to the library."""
from __future__ import annotations

import threading
from typing import Any

import pytest

from ifc_host.runtime import start_host_thread
from ifc_host.sample import write_sample_model
from tests.support.client import Client, write_script
from tests.support.server import running_server

RENAME = "NAME = 'Kept'\nfor wall in model.by_type('IfcWall')[:2]:\n    wall.Name = NAME\n"
FAILING = "for wall in model.by_type('IfcWall')[:2]:\n    wall.Name = 'half'\nraise RuntimeError('not today')\n"


@pytest.fixture
def stack(tmp_path, scripts_dir):
    model = tmp_path / "model.ifc"
    write_sample_model(model, storeys=1)
    with running_server(tmp_path, keepalive_s=0.5, tool_timeout_s=60, script_timeout_s=30) as srv:
        client = Client(srv.url, srv.token("alice"))
        host = start_host_thread(str(model), srv.url, client.token)
        host_id = host.wait_connected(60)
        yield client, host_id
        host.stop()


def _automation(client: Client, host_id: str, scripts_dir: Any, code: str, decision: str) -> dict[str, Any]:
    """One automation in a session under ask, kept or discarded by the person: its session and tool call ids."""
    call = {"tool_call": {"name": "execute_task_automation", "input": {"code": code}}}
    sid = client.new_session(host_id, write_script(scripts_dir / f"{decision}.json", [[call], [{"text": "ok"}]]))
    assert client.call("PUT", f"/api/sessions/{sid}/policy", json={"policy": "ask"}).status_code == 200

    def on_frame(frame):
        meta = (frame.chunk or {}).get("metadata") or {}
        if meta.get("kind") == "approval_request":
            threading.Thread(target=lambda: client.call("POST", f"/api/sessions/{sid}/approval", json={
                "tool_call_id": meta["tool_call_id"], "decision": decision})).start()

    stream = client.run(sid, "rename two walls", on_frame=on_frame)
    result = stream.of("Metadata", "tool_result")[0]["metadata"]
    return {"session_id": sid, "tool_call_id": result["tool_call_id"], "committed": result["committed"]}


def _save(client: Client, ids: dict[str, Any], name: str):
    body = {"session_id": ids["session_id"], "tool_call_id": ids["tool_call_id"], "name": name,
            "description": "Name two walls", "parameters": []}
    return client.call("POST", "/api/skills/proposal", json=body), client.call("POST", "/api/skills", json=body)


def test_only_a_kept_automation_becomes_a_skill_under_ask(stack, scripts_dir):
    client, host_id = stack
    discarded = _automation(client, host_id, scripts_dir, RENAME, "discard")
    assert discarded["committed"] is False
    for response in _save(client, discarded, "Discarded"):
        assert response.status_code == 400 and "only a kept change" in response.json()["error"], response.text

    failed = _automation(client, host_id, scripts_dir, FAILING, "keep")  # fails before any review
    assert failed["committed"] is False
    for response in _save(client, failed, "Failed"):
        assert response.status_code == 400 and "only a kept change" in response.json()["error"], response.text
    assert client.call("GET", "/api/skills").json()["skills"] == []

    kept = _automation(client, host_id, scripts_dir, RENAME, "keep")
    assert kept["committed"] is True
    proposal, saved = _save(client, kept, "Kept walls")
    assert proposal.status_code == 200 and [p["name"] for p in proposal.json()["parameters"]] == ["NAME"]
    assert saved.status_code == 201, saved.text
    provenance = saved.json()["provenance"]
    assert provenance["decision"] == "keep" and provenance["kept_by"] == "alice"
    assert [s["name"] for s in client.call("GET", "/api/skills").json()["skills"]] == ["Kept walls"]
