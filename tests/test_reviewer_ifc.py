"""The person as reviewer on the real IFC host (issue 7): Keep/Discard round trips, deadlines that bite."""
from __future__ import annotations

import hashlib
import shutil
import threading
from pathlib import Path

import ifcopenshell
import pytest

from ifc_host.runtime import start_host_thread
from ifc_host.sample import write_sample_model
from tests.support.client import Client, write_script
from tests.support.server import running_server

RENAME_WALLS = {"tool_call": {"name": "execute_task_automation", "input": {
    "code": "for wall in model.by_type('IfcWall')[:2]:\n    wall.Name = 'Reviewed'\n"}}}


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sample") / "sample.ifc"
    write_sample_model(path, storeys=2)
    return path


@pytest.fixture
def stack(tmp_path, sample, scripts_dir):
    model = tmp_path / "model.ifc"
    shutil.copy(sample, model)
    with running_server(tmp_path, keepalive_s=0.5, tool_timeout_s=60, script_timeout_s=3) as srv:
        client = Client(srv.url, srv.token("alice"))
        host = start_host_thread(str(model), srv.url, client.token)
        host_id = host.wait_connected(60)
        yield client, host_id, model
        host.stop()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _decide(client: Client, session_id: str, decision: str):
    def on_frame(frame):
        meta = (frame.chunk or {}).get("metadata") or {}
        if meta.get("kind") == "approval_request":
            threading.Thread(target=lambda: client.call("POST", f"/api/sessions/{session_id}/approval", json={
                "tool_call_id": meta["tool_call_id"], "decision": decision})).start()
    return on_frame


@pytest.mark.parametrize("decision", ["keep", "discard"])
def test_keep_writes_the_file_and_discard_leaves_it_byte_identical(stack, scripts_dir, decision):
    client, host_id, model = stack
    before = _digest(model)
    sid = client.new_session(host_id, write_script(scripts_dir / "ask.json", [[RENAME_WALLS], [{"text": "ok"}]]))
    assert client.call("PUT", f"/api/sessions/{sid}/policy", json={"policy": "ask"}).status_code == 200
    stream = client.run(sid, "rename two walls", on_frame=_decide(client, sid, decision))
    request = stream.of("Metadata", "approval_request")[0]["metadata"]
    assert "Reviewed" in request["change_report"]
    assert _digest(model) == before or decision == "keep"  # nothing is written while the person decides
    result = stream.of("Metadata", "tool_result")[0]["metadata"]
    names = [w.Name for w in ifcopenshell.open(str(model)).by_type("IfcWall")[:2]]
    if decision == "keep":
        assert result["committed"] and names == ["Reviewed", "Reviewed"]
    else:
        assert not result["committed"] and _digest(model) == before


def test_an_infinite_loop_that_swallows_every_exception_is_stopped_at_its_deadline(stack, scripts_dir):
    client, host_id, model = stack
    before = _digest(model)
    stubborn = "while True:\n    try:\n        model.by_type('IfcWall')[0].Name = 'x'\n    except:\n        pass\n"
    sid = client.new_session(host_id, write_script(scripts_dir / "loop.json", [
        [{"tool_call": {"name": "execute_task_automation", "input": {"code": stubborn}}}], [{"text": "ok"}]]))
    stream = client.run(sid, "loop forever")
    result = stream.of("Metadata", "tool_result")[0]
    assert result["metadata"]["timed_out"] and not result["metadata"]["committed"]
    assert "deadline" in result["content"]
    assert _digest(model) == before
