"""The validation setting through the real server and a real IFC host: per session and per user, the stricter
wins; what the script introduced reaches the model's copy and the person's; `block` rolls back."""
from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from tests.support.client import Client, write_script
from tests.support.real_ifc import digest
from tests.support.spine import automate, say

BREAK_SCHEMA = ("storey = model.by_type('IfcBuildingStorey')[0]\n"
                "model.createIfcRelAggregates(ifcopenshell.guid.new(), None, 'empty', None, storey, [])\n")


def _spec(scripts_dir: Path) -> str:
    return write_script(scripts_dir / "break.json", [automate(BREAK_SCHEMA), say("done")])


def test_the_session_route_stores_the_setting_and_refuses_bad_values(server, alice, building_host):
    sid = alice.new_session(building_host[0])
    assert alice.call("GET", f"/api/sessions/{sid}").json()["validation"] == "warn"
    answer = alice.call("PUT", f"/api/sessions/{sid}/validation", json={"validation": "block"})
    assert answer.status_code == 200 and answer.json() == {"session_id": sid, "validation": "block"}
    assert alice.call("GET", f"/api/sessions/{sid}").json()["validation"] == "block"
    bad = alice.call("PUT", f"/api/sessions/{sid}/validation", json={"validation": "strict"})
    assert bad.status_code == 400 and "validation" in bad.text
    bob = Client(server.url, server.token("bob"))
    assert bob.call("PUT", f"/api/sessions/{sid}/validation", json={"validation": "warn"}).status_code == 404
    assert Client(server.url, None).call("PUT", f"/api/sessions/{sid}/validation",
                                         json={"validation": "warn"}).status_code == 401
    assert alice.call("GET", "/api/me").json()["validation"] == "warn"
    admin = Client(server.url, server.token("root", admin=True))
    assert alice.call("PUT", "/api/admin/users/alice/validation", json={"validation": "block"}).status_code == 403
    assert admin.call("PUT", "/api/admin/users/nobody/validation", json={"validation": "block"}).status_code == 404
    assert admin.call("PUT", "/api/admin/users/alice/validation", json={"validation": "x"}).status_code == 400


def test_warn_reports_what_the_script_introduced_to_the_model_and_the_person(server, alice,
                                                                             building_host, scripts_dir):
    host_id, model_path = building_host
    before = digest(model_path)
    sid = alice.new_session(host_id, _spec(scripts_dir))
    result = alice.run(sid, "add an aggregation").of("Metadata", "tool_result")[0]
    person = result["metadata"]
    assert person["committed"] and person["validation"]["mode"] == "warn"
    assert person["validation"]["introduced"] == 1
    assert "IfcRelAggregates.RelatedObjects" in person["failures"][0]["message"]
    assert person["change_details"]["counts"] == {"added": 0, "modified": 0, "deleted": 0}
    assert "validation: schema attribute type" in result["content"]  # the model's copy
    assert digest(model_path) != before


@pytest.mark.parametrize("session_setting,user_setting", [("block", "warn"), ("warn", "block")])
def test_the_stricter_of_session_and_user_setting_blocks(server, alice, building_host, scripts_dir,
                                                         session_setting, user_setting):
    host_id, model_path = building_host
    admin = Client(server.url, server.token("root", admin=True))
    assert admin.call("PUT", "/api/admin/users/alice/validation",
                      json={"validation": user_setting}).status_code == 200
    sid = alice.new_session(host_id, _spec(scripts_dir))
    assert alice.call("PUT", f"/api/sessions/{sid}/validation",
                      json={"validation": session_setting}).status_code == 200
    before = model_path.read_bytes()
    result = alice.run(sid, "add an aggregation").of("Metadata", "tool_result")[0]
    assert not result["metadata"]["committed"]
    assert result["metadata"]["error"]["type"] == "ValidationFailed"
    assert "ValidationFailed" in result["content"] and "IfcRelAggregates.RelatedObjects" in result["content"]
    assert model_path.read_bytes() == before


def test_the_person_reviewing_a_held_change_sees_before_after_and_validation(server, alice,
                                                                             building_host, scripts_dir):
    host_id, model_path = building_host
    path = scripts_dir / "rename.json"
    path.write_text(json.dumps({"turns": [
        [{"tool_call": {"name": "execute_task_automation",
                        "input": {"code": "for d in model.by_type('IfcDoor'):\n    d.Tag = 'R' + d.Tag"}}}],
        [{"text": "done"}]]}))
    sid = alice.new_session(host_id, f"scripted:{path}")
    assert alice.call("PUT", f"/api/sessions/{sid}/policy", json={"policy": "ask"}).status_code == 200

    def keep_when_asked(frame):
        metadata = (frame.chunk or {}).get("metadata") or {}
        if metadata.get("kind") == "approval_request":
            threading.Thread(target=lambda: alice.call("POST", f"/api/sessions/{sid}/approval", json={
                "tool_call_id": metadata["tool_call_id"], "decision": "keep"})).start()

    stream = alice.run(sid, "renumber the doors", on_frame=keep_when_asked)
    (request,) = stream.of("Metadata", "approval_request")
    details = request["metadata"]["change_details"]
    assert details["groups"] == [{"kinds": ["attributes"], "count": 4, "classes": {"IfcDoor": 4},
                                  "ids": details["groups"][0]["ids"]}]
    assert {(c["old"], c["new"]) for e in details["elements"] for c in e["changes"]} == \
        {("D101", "RD101"), ("D102", "RD102"), ("D201", "RD201"), ("D202", "RD202")}
    assert request["metadata"]["validation"]["introduced"] == 0
    assert stream.of("Metadata", "tool_result")[0]["metadata"]["committed"]
    assert b"'RD101'" in model_path.read_bytes()
