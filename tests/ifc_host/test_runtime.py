"""The IFC host runtime over real websockets: against the real orchestrator, and a raw endpoint where the
test needs to misbehave on purpose."""
from __future__ import annotations

import base64
import io
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from cloud.hosts.registry import stamped_epilogue
from ifc_host.model_file import BadModelError, open_checked
from ifc_host.runtime import HostRejected, start_host_thread, websocket_url
from tests.conformance.conftest import Commander
from tests.conformance.hosts import IfcHostLauncher, LaunchedIfcHost, sample_building
from tests.conformance.raw_cloud import RawCloud
from tests.support.server import RunningServer

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def ifc_host(server: RunningServer, tmp_path: Path) -> Iterator[LaunchedIfcHost]:
    launched = IfcHostLauncher().launch(tmp_path / "host", server.url, server.token("ifc-user"))
    yield launched
    launched.stop()


@pytest.fixture
def cloud(server: RunningServer, ifc_host: LaunchedIfcHost) -> Commander:
    return Commander(server, ifc_host)


def test_failing_hanging_and_crashing_scripts_leave_the_file_byte_identical(cloud: Commander,
                                                                           ifc_host: LaunchedIfcHost):
    before = ifc_host.model_path.read_bytes()
    prefix = "for door in model.by_type('IfcDoor'):\n    door.Tag = 'X'\n"
    cases = {
        "ValueError": prefix + "raise ValueError('bad mark')\n",
        "Timeout": prefix + "while True:\n    pass\n",
        "HostCrash": prefix + "import os\nos.abort()\n",
        "HostCrash ": prefix + "import os\nos.kill(os.getpid(), 9)\n",
    }
    for expected, code in cases.items():
        reply = cloud.run(code, mode="automate", timeout_s=1.5)
        assert reply["ok"] is False and reply["committed"] is False, expected
        assert reply["error"]["type"] == expected.strip()
        assert reply.get("timed_out", False) is (expected == "Timeout")
        assert ifc_host.model_path.read_bytes() == before, expected

    fixed = cloud.run("for door in model.by_type('IfcDoor'):\n    door.Tag = 'ok'\n", mode="automate")
    assert fixed["committed"] is True
    assert {d.Tag for d in open_checked(ifc_host.model_path).by_type("IfcDoor")} == {"ok"}


def test_change_report_names_up_to_15_elements_then_groups(cloud: Commander):
    epilogue = stamped_epilogue("ifc").as_message()
    rename = "walls = sorted(model.by_type('IfcWall'), key=lambda w: w.id())[:{n}]\nfor w in walls:\n    w.Name = 'r{n}'\n"

    named = cloud.run(rename.format(n=15), mode="automate", epilogue=epilogue)
    report = named["epilogue_stdout"]
    assert named["committed"] and len(named["changes"]["modified"]) == 15
    lines = [line for line in report.splitlines() if line.startswith("- #")]
    assert len(lines) == 15
    assert all(" IfcWall " in line and "| type " in line and "| Level " in line and "GlobalId " in line
               for line in lines)
    assert "by class and type" not in report

    grouped = cloud.run(rename.format(n=16), mode="automate", epilogue=epilogue)
    report = grouped["epilogue_stdout"]
    assert len(grouped["changes"]["modified"]) == 16
    assert "Modified (16), by class and type:" in report
    assert not any(line.startswith("- #") for line in report.splitlines())
    assert "x IfcWall | type " in report and "e.g. #" in report
    assert '@@nexus {"geometry_changed": false' in report


def test_out_path_receives_commits_and_never_touches_the_input(server: RunningServer, tmp_path: Path):
    out = tmp_path / "out" / "result.ifc"
    out.parent.mkdir()
    launched = IfcHostLauncher().launch(tmp_path / "host", server.url, server.token("ifc-out"), out_path=out)
    try:
        before = launched.model_path.read_bytes()
        cloud = Commander(server, launched)
        assert cloud.run("model.by_type('IfcDoor')[0].Tag = 'OUT-1'", mode="automate")["committed"]
        assert cloud.run("model.by_type('IfcDoor')[1].Tag = 'OUT-2'", mode="automate")["committed"]
        failed = cloud.run("model.by_type('IfcDoor')[2].Tag = 'never'\n1/0", mode="automate")
        assert failed["committed"] is False
        view = cloud.send({"type": "export_view", "view": "Level 1", "max_px": 200}, timeout=120)
        assert view["ok"], view.get("error")
    finally:
        launched.stop()
    assert launched.model_path.read_bytes() == before
    tags = [d.Tag for d in open_checked(out).by_type("IfcDoor")]
    assert tags[:3] == ["OUT-1", "OUT-2", tags[2]] and "never" not in tags


def test_a_held_automation_is_previewed_then_kept_or_discarded(cloud: Commander, ifc_host: LaunchedIfcHost):
    before = ifc_host.model_path.read_bytes()
    code = "door = sorted(model.by_type('IfcDoor'), key=lambda d: d.id())[0]\ndoor.Tag = 'HELD'\nprint(door.id())"
    held = cloud.send({"type": "execute", "request_id": "hold-1", "mode": "automate", "code": code, "timeout_s": 10,
                       "hold": True, "epilogue": stamped_epilogue("ifc").as_message()})
    door_id = int(held["stdout"].split()[-1])
    assert held["ok"] and held["held"] is True and held["committed"] is False
    assert held["changes"]["modified"] == [door_id]

    busy = cloud.send({"type": "execute", "mode": "collect", "code": "print(1)", "timeout_s": 5})
    assert busy["type"] == "error" and "hold-1" in busy["message"]
    preview = cloud.send({"type": "export_view", "element_ids": [door_id], "max_px": 300}, timeout=120)
    assert preview["ok"], preview.get("error")
    assert Image.open(io.BytesIO(base64.b64decode(preview["png_base64"]))).size == (preview["width"], preview["height"])

    discarded = cloud.send({"type": "decide", "request_id": "hold-1", "decision": "discard"})
    assert discarded["type"] == "execute_result" and discarded["committed"] is False and discarded["held"] is False
    assert ifc_host.model_path.read_bytes() == before
    assert cloud.output(f"print(model.by_id({door_id}).Tag)") != "HELD\n"

    cloud.send({"type": "execute", "request_id": "hold-2", "mode": "automate", "code": code, "timeout_s": 10,
                "hold": True})
    kept = cloud.send({"type": "decide", "request_id": "hold-2", "decision": "keep"})
    assert kept["committed"] is True and kept["changes"]["modified"] == [door_id]
    assert open_checked(ifc_host.model_path).by_id(door_id).Tag == "HELD"

    stale = cloud.send({"type": "decide", "request_id": "hold-2", "decision": "keep"})
    assert stale["type"] == "error" and "hold-2" in stale["message"]


def test_context_describes_the_committed_model(cloud: Commander):
    reply = cloud.send({"type": "context"})
    assert reply["type"] == "context_result" and reply["ok"] is True
    context = reply["context"]
    assert [level["name"] for level in context["levels"]] == ["Level 1", "Level 2", "Level 3"]
    assert context["levels"][1]["elevation"] > context["levels"][0]["elevation"]
    assert context["counts"]["IfcWall"] == 36 and context["counts"]["IfcDoor"] == 26


def test_bad_ifc_files_are_refused_at_start(tmp_path: Path):
    whole = sample_building().read_bytes()
    files = {"empty": b"", "garbage": b"\x00\x01 this is not an IFC file\n", "truncated": whole[: len(whole) // 2]}
    for name, content in files.items():
        path = tmp_path / f"{name}.ifc"
        path.write_bytes(content)
        with pytest.raises(BadModelError) as refused:
            start_host_thread(str(path), "http://127.0.0.1:9", "token")
        assert str(path) in str(refused.value), name
    assert "truncated" in str(refused.value)

    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "NEXUS_TOKEN": "t"}
    cli = subprocess.run([sys.executable, "-m", "cloud.cli", "ifc-host", str(tmp_path / "truncated.ifc"),
                          "--server", "http://127.0.0.1:9"],
                         capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    assert cli.returncode != 0
    assert "truncated" in cli.stderr + cli.stdout and "Traceback" not in cli.stderr


def test_a_refused_token_stops_the_host_instead_of_retrying(server: RunningServer, tmp_path: Path):
    model = tmp_path / "m.ifc"
    model.write_bytes(sample_building().read_bytes())
    handle = start_host_thread(str(model), server.url, "not-a-valid-token")
    try:
        with pytest.raises(HostRejected):
            handle.wait_connected(20)
        assert handle.finished.wait(20)
    finally:
        handle.stop()


def test_a_result_finished_while_disconnected_is_delivered_after_reconnecting(raw_cloud: RawCloud, tmp_path: Path):
    launched = IfcHostLauncher().launch(tmp_path / "host", raw_cloud.url, "raw", connect=False)
    try:
        first = raw_cloud.accept()
        first.welcome("h_late")
        first.send({"type": "execute", "request_id": "slow-1", "mode": "collect", "timeout_s": 20,
                    "code": "import time\ntime.sleep(1.5)\nprint('finished')"})
        first.close()
        second = raw_cloud.accept(timeout=30)
        assert second.hello["host_id"] == "h_late"
        second.welcome("h_late")
        late = second.recv(timeout=30)
        assert late["type"] == "execute_result" and late["request_id"] == "slow-1" and late["stdout"] == "finished\n"
    finally:
        launched.stop()


def test_websocket_url_is_derived_from_the_server_url():
    assert websocket_url("http://127.0.0.1:8765") == "ws://127.0.0.1:8765/ws/host"
    assert websocket_url("https://nexus.example/app/") == "wss://nexus.example/app/ws/host"
    assert websocket_url("ws://h:1/ws/host") == "ws://h:1/ws/host"
    with pytest.raises(ValueError):
        websocket_url("127.0.0.1:8765")
