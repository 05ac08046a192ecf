"""BCF in → fix → BCF out on the real IFC host with buildingSMART's test cases (NEXUS_BCF_SUITE) and their model
Architectural.ifc (copied to a temporary folder, never into the repository): `nexus run --bcf-in --bcf-out` under
auto, and the server's upload under ask with Keep and Discard. Every input topic comes back with its GUID, its
comments and viewpoints as they were, a new comment saying what was done, and its status from the review."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import ifcopenshell
import pytest

from cloud.bcf.archive import read_bcf
from cloud.bcf.issues import read_topics
from tests.coordination.suite import federated_pair, suite
from tests.support.client import Client, write_script
from tests.support.real_ifc import connected_host

REPO = Path(__file__).resolve().parents[2]


def _case(version: str, name: str) -> Path:
    root = suite() / "Test Cases" / f"v{version}" / "Visualization" / name
    (found,) = [p for p in root.glob("*.bcf*") if p.is_file()]
    return found


def _working_copy(tmp_path: Path) -> Path:
    architectural, _ = federated_pair()
    path = tmp_path / "Architectural.ifc"
    shutil.copyfile(architectural, path)
    path.chmod(0o644)
    return path


def _rename_turns(topic_guid: str, wall_guid: str) -> list[list[dict]]:
    code = f"wall = model.by_guid({wall_guid!r})\nwall.Name = 'Fixed wall'\nprint(wall.id())\n"
    return [[{"tool_call": {"name": "execute_task_automation", "input": {"code": code}}}],
            [{"text": f"Renamed the wall.\nTOPIC {topic_guid}: renamed the wall to Fixed wall"}]]


def _comments(handler) -> list:
    return list(handler.comments)


def _viewpoint_guids(handler) -> list[str]:
    return [v.visualization_info.guid for v in handler.viewpoints.values()]


def test_nexus_run_fixes_the_topic_under_auto_and_hands_it_back_resolved(tmp_path):
    case = _case("3.0", "Single visible wall")
    model = _working_copy(tmp_path)
    version, (topic,) = read_topics(case)
    assert version == "3.0" and len(topic["components"]) == 1
    spec = write_script(tmp_path / "fix.json", _rename_turns(topic["guid"], topic["components"][0]))
    out, fixed = tmp_path / "answered.bcf", tmp_path / "fixed.ifc"
    command = [shutil.which("nexus")] if shutil.which("nexus") else [sys.executable, "-m", "cloud.cli"]
    done = subprocess.run([*command, "run", "fix the issues", "--ifc", str(model), "--model", spec, "--json",
                           "--bcf-in", str(case), "--bcf-out", str(out), "--out", str(fixed),
                           "--db", str(tmp_path / "run.db")], capture_output=True, text=True, timeout=600, cwd=REPO,
                          env={**os.environ, "NEXUS_SCRIPTED_DIRS": ""})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    chunks = [json.loads(line) for line in done.stdout.splitlines() if line.startswith('{"type"')]
    (result,) = [c for c in chunks if c["type"] == "Metadata" and c["metadata"]["kind"] == "tool_result"]
    assert result["metadata"]["committed"]
    assert ifcopenshell.open(str(fixed)).by_guid(topic["components"][0]).Name == "Fixed wall"

    before, after = read_bcf(case).topics[topic["guid"]], read_bcf(out).topics[topic["guid"]]
    assert after.topic.topic_status == "Resolved"
    assert [c.guid for c in _comments(after)][:-1] == [c.guid for c in _comments(before)]  # kept, in order
    new = _comments(after)[-1]
    assert new.comment == "Fixed by NexusAI: renamed the wall to Fixed wall" and new.author == "nexus run"
    assert set(_viewpoint_guids(before)) < set(_viewpoint_guids(after))
    (added,) = [v for v in after.viewpoints.values() if v.visualization_info.guid == new.viewpoint.guid]
    selected = [c.ifc_guid for c in added.visualization_info.components.selection.component]
    assert selected == topic["components"] and added.visualization_info.perspective_camera is not None


def test_bad_bcf_input_is_refused_before_the_run(tmp_path):
    model = _working_copy(tmp_path)
    (tmp_path / "notes.bcf").write_text("not a zip")
    command = [shutil.which("nexus")] if shutil.which("nexus") else [sys.executable, "-m", "cloud.cli"]
    spec = write_script(tmp_path / "s.json", [[{"text": "nothing"}]])
    done = subprocess.run([*command, "run", "x", "--ifc", str(model), "--model", spec, "--bcf-in",
                           str(tmp_path / "notes.bcf"), "--db", str(tmp_path / "run.db")], capture_output=True,
                          text=True, timeout=300, cwd=REPO)
    assert done.returncode == 2 and "is not a BCF archive (not a zip file)" in done.stderr


@pytest.fixture
def arc_host(server, alice, tmp_path):
    model = _working_copy(tmp_path)
    with connected_host(model, server.url, alice.token, timeout_s=120) as (_, host_id):
        yield host_id, model


def _decide(client: Client, session_id: str, decision: str):
    def on_frame(frame):
        meta = (frame.chunk or {}).get("metadata") or {}
        if meta.get("kind") == "approval_request":
            threading.Thread(target=lambda: client.call("POST", f"/api/sessions/{session_id}/approval", json={
                "tool_call_id": meta["tool_call_id"], "decision": decision})).start()
    return on_frame


def test_an_upload_is_checked_and_a_topic_without_components_is_resolved_by_its_camera(server, alice, arc_host,
                                                                                        scripts_dir):
    host_id, _ = arc_host
    sid = alice.new_session(host_id, write_script(scripts_dir / "none.json", [[{"text": "ok"}]]))
    refused = alice.call("POST", f"/api/sessions/{sid}/bcf", data=b"PK not really",
                         headers={"Content-Type": "application/octet-stream"})
    assert refused.status_code == 400 and "bcf: the upload is not a BCF archive" in refused.json()["error"]
    assert alice.call("POST", f"/api/sessions/{sid}/bcf").status_code == 400
    camera_only = _case("2.1", "PerspectiveCamera")
    uploaded = alice.call("POST", f"/api/sessions/{sid}/bcf", files={"file": camera_only.read_bytes()})
    assert uploaded.status_code == 200, uploaded.text
    (topic,) = uploaded.json()["topics"]
    assert topic["resolved_by"] == "viewpoint" and topic["elements"] >= 1
    bob = Client(server.url, server.token("bob"))
    assert bob.call("POST", f"/api/sessions/{sid}/bcf", data=camera_only.read_bytes()).status_code == 404


@pytest.mark.parametrize("decision", ["keep", "discard"])
def test_under_ask_a_kept_fix_resolves_the_topic_and_a_discarded_one_leaves_it_open(server, alice, arc_host,
                                                                                     scripts_dir, tmp_path, decision):
    host_id, model = arc_host
    case = _case("2.1", "Single visible wall")
    _, (topic,) = read_topics(case)
    sid = alice.new_session(host_id, write_script(scripts_dir / f"{decision}.json",
                                                  _rename_turns(topic["guid"], topic["components"][0])))
    assert alice.call("PUT", f"/api/sessions/{sid}/policy", json={"policy": "ask"}).status_code == 200
    uploaded = alice.call("POST", f"/api/sessions/{sid}/bcf", data=case.read_bytes(),
                          headers={"Content-Type": "application/octet-stream"})
    assert uploaded.status_code == 200, uploaded.text
    assert uploaded.json()["topics"][0]["resolved_by"] == "components"
    stream = alice.run(sid, "fix the issues", on_frame=_decide(alice, sid, decision))
    result = stream.of("Metadata", "tool_result")[0]["metadata"]
    assert result["committed"] == (decision == "keep")
    task = alice.call("GET", f"/api/sessions/{sid}").json()["messages"][0]
    assert f"TOPIC {topic['guid']}: Single visible wall" in json.dumps(task)  # the topic is part of the task
    assert topic["components"][0] in json.dumps(task)

    archive = alice.call("GET", f"/api/sessions/{sid}/bcf?version=2.1")
    assert archive.status_code == 200, archive.text
    path = tmp_path / f"answered-{decision}.bcf"
    path.write_bytes(archive.content)
    before, after = read_bcf(case).topics[topic["guid"]], read_bcf(path).topics[topic["guid"]]
    assert [c.guid for c in _comments(after)][:-1] == [c.guid for c in _comments(before)]
    assert set(_viewpoint_guids(before)) <= set(_viewpoint_guids(after))
    new = _comments(after)[-1]
    if decision == "keep":
        assert after.topic.topic_status == "Resolved"
        assert new.comment.startswith("Fixed by NexusAI") and "renamed the wall" in new.comment
        assert len(_viewpoint_guids(after)) == len(_viewpoint_guids(before)) + 1
    else:
        assert after.topic.topic_status == before.topic.topic_status
        assert "discarded" in new.comment and "stays open" in new.comment
        assert _viewpoint_guids(after) == _viewpoint_guids(before)
    assert alice.call("GET", f"/api/sessions/{sid}/bcf?version=3.0").status_code == 400  # it came as 2.1


def test_nexus_run_bcf_out_without_bcf_in_writes_the_findings_the_run_introduced(tmp_path):
    from tests.conformance.ifc_models import write_small_building
    from tests.coordination.independent_reader import read_archive
    from tests.coordination.test_rules import UNHOSTED_DOOR

    model = write_small_building(tmp_path / "model.ifc")
    spec = write_script(tmp_path / "door.json", [[{"tool_call": {"name": "execute_task_automation",
                                                                 "input": {"code": UNHOSTED_DOOR}}}],
                                                 [{"text": "Added the door."}]])
    out = tmp_path / "findings.bcf"
    command = [shutil.which("nexus")] if shutil.which("nexus") else [sys.executable, "-m", "cloud.cli"]
    done = subprocess.run([*command, "run", "add a door", "--ifc", str(model), "--model", spec, "--bcf-out", str(out),
                           "--bcf-version", "3.0", "--out", str(tmp_path / "out.ifc"), "--db", str(tmp_path / "r.db")],
                          capture_output=True, text=True, timeout=600, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    version, topics = read_archive(out)
    (topic,) = topics.values()
    assert version == "3.0" and "filling without an opening" in topic.title
    door = [d for d in ifcopenshell.open(str(tmp_path / "out.ifc")).by_type("IfcDoor") if d.Name == "loose door"][0]
    assert topic.viewpoints[0].selected == [door.GlobalId]


def test_a_fix_of_other_elements_does_not_resolve_a_topic(tmp_path):
    """The answer is worked out from the session as stored: a committed automation that changed other elements
    leaves the topic's status as it was, and its comment gives what the agent said."""
    from cloud.bcf.issues import answered_archive, imported_issues, save_imported
    from cloud.store import Store

    case = _case("2.1", "Single visible wall")
    _, topics = read_topics(case)
    topics[0]["resolved"] = {"how": "components", "elements": [
        {"global_id": topics[0]["components"][0], "ifc_class": "IfcWallStandardCase", "name": None, "step_id": 7493}],
        "missing": []}
    store = Store(tmp_path / "s.db")
    sid = store.create_session("alice", None, "scripted:x", {})
    save_imported(store, sid, case.read_bytes(), "2.1", topics)
    store.append_entries(sid, [
        {"role": "assistant", "content": [{"type": "tool_call", "id": "c1", "name": "execute_task_automation",
                                           "input": {}}]},
        {"role": "assistant", "content": [{"type": "text", "text": f"TOPIC {topics[0]['guid']}: left as it is"}]}])
    store.save_result(sid, "c1", {"mode": "automate", "committed": True, "changes": {"modified": [42]}})
    out = answered_archive(store, sid, imported_issues(store, sid), "2.1", tmp_path / "a.bcf", "alice")
    before, after = read_bcf(case).topics[topics[0]["guid"]], read_bcf(out).topics[topics[0]["guid"]]
    assert after.topic.topic_status == before.topic.topic_status
    assert _comments(after)[-1].comment == "Not changed by NexusAI: left as it is"
