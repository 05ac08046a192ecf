"""3D scenes over real HTTP from the real IFC host after a real automation: valid glTF (Khronos validator), one
node per changed element with the change report's counts, deleted elements from the model as it was, moved
ones with their previous placement; the host route by view and by elements; owner and Revit answers."""
from __future__ import annotations

import base64
import json
import os
import shutil
import struct
import subprocess
import threading
from pathlib import Path
from typing import Any

import ifcopenshell
import numpy as np
import pytest

from cloud.assembly import run_session
from cloud.hostlink import session_link
from cloud.session_refs import save_refs
from ifc_host.sample import write_sample_model
from tests.corpus.corpus_files import corpus_dirs, manifest
from tests.support.client import Client, write_script
from tests.support.memory_model import MemoryModel
from tests.support.real_ifc import connected_host
from tests.support.server import running_server
from tests.support.spine import automate, collect, say

REPO = Path(__file__).resolve().parent.parent
VALIDATOR_MODULES = REPO / ".cache" / "npm" / "node_modules"
CORPUS_FILES = ("AC20-FZK-Haus.ifc", "IfcOpenHouse_IFC4.ifc", "duplex.ifc")

# Deletes a door, moves a column (or wall, or slab) 1 m east, renames a window (or member, or wall).
CHANGE = """
import ifcopenshell.api, numpy
door = [d for d in model.by_type('IfcDoor') if d.Representation][0]
door_id = door.id()
ifcopenshell.api.run('root.remove_product', model, product=door)
mover = [e for e in model.by_type('IfcColumn') + model.by_type('IfcWall') + model.by_type('IfcSlab')
         if e.Representation and e.ObjectPlacement and e.ObjectPlacement.is_a('IfcLocalPlacement')][0]
import ifcopenshell.util.placement
matrix = ifcopenshell.util.placement.get_local_placement(mover.ObjectPlacement)
matrix[0][3] += 1000.0 / ifcopenshell.util.unit.calculate_unit_scale(model) / 1000.0
ifcopenshell.api.run('geometry.edit_object_placement', model, product=mover, matrix=matrix, is_si=False)
window = [w for w in model.by_type('IfcWindow') + model.by_type('IfcMember') + model.by_type('IfcWall')
          if w.Representation and w.id() != mover.id() and w.Name != 'renamed by the scene test'][0]
window.Name = 'renamed by the scene test'
print('moved', mover.id(), 'deleted', door_id)
"""


def render_opens() -> int:
    """Models the render servers of this process have opened (the host runs in this process)."""
    from ifc_host import render_pool

    return sum(server.opens for server in render_pool.pool.servers())


def glb_document(glb: bytes) -> dict[str, Any]:
    magic, version, length = struct.unpack("<III", glb[:12])
    assert (magic, version, length) == (0x46546C67, 2, len(glb))
    size, kind = struct.unpack("<II", glb[12:20])
    assert kind == 0x4E4F534A
    return json.loads(glb[20:20 + size])


def validate(tmp_path: Path, glb: bytes) -> dict[str, Any]:
    """The Khronos glTF validator's verdict (npm gltf-validator, installed by scripts/test into .cache/npm)."""
    if not (VALIDATOR_MODULES / "gltf-validator").is_dir() or shutil.which("node") is None:  # fails, never skips
        pytest.fail("the Khronos glTF validator is not installed (scripts/test installs gltf-validator into "
                    f"{VALIDATOR_MODULES})", pytrace=False)
    path = tmp_path / f"scene-{len(list(tmp_path.glob('scene-*.glb')))}.glb"
    path.write_bytes(glb)
    done = subprocess.run(["node", str(REPO / "tests" / "support" / "validate_glb.js"), str(path)],
                          env={**os.environ, "NODE_PATH": str(VALIDATOR_MODULES)}, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    (report,) = json.loads(done.stdout)
    return report


def change_nodes(document: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    nodes = document["nodes"][1:]
    return {kind: [n for n in nodes if n["extras"]["change"] == kind] for kind in ("added", "modified", "deleted")}


class Stack:
    def __init__(self, server, host_id: str, token: str, host: Any, model_path: Path):
        self.server, self.host_id, self.host, self.model_path = server, host_id, host, model_path
        self.store = server.state.store
        self.client = Client(server.url, token)

    def automate(self, code: str, committed: bool = True, turn: Any = automate,
                 refs: list[dict[str, str]] | None = None) -> tuple[str, dict[str, Any]]:
        row = self.store.get_session(self.store.create_session("alice", self.host_id, "scripted:m", {}))
        if refs:
            save_refs(self.store, row["id"], refs)
            row = self.store.get_session(row["id"])
        state = self.server.state
        produced = list(run_session(self.store, state.settings, MemoryModel([turn(code), say("done")]),
                                    session_link(state.hosts, state.channel, row), row, "go", threading.Event()))
        (result,) = [c.metadata for c in produced if c.type == "Metadata" and c.metadata["kind"] == "tool_result"]
        assert bool(result["committed"]) is committed, result.get("error") or result.get("stdout")
        return row["id"], result


def serve(tmp_path: Path, model: Path):
    server_cm = running_server(tmp_path, keepalive_s=0.5, tool_timeout_s=180, script_timeout_s=120)
    server = server_cm.__enter__()
    token = server.token("alice")
    host_cm = connected_host(model, server.url, token, timeout_s=60)
    host, host_id = host_cm.__enter__()
    return server_cm, host_cm, Stack(server, host_id, token, host, model)


@pytest.fixture(scope="module")
def sample_stack(tmp_path_factory):
    """One server and IFC host on the sample building for the module: the tests that change the model do so in
    sessions of their own, each with CHANGE (which renames an element not renamed before); the others read it or
    change nothing."""
    tmp_path = tmp_path_factory.mktemp("scene-sample")
    model = tmp_path / "model.ifc"
    write_sample_model(model, storeys=2)
    server_cm, host_cm, stack = serve(tmp_path, model)
    try:
        yield stack
    finally:
        host_cm.__exit__(None, None, None)
        server_cm.__exit__(None, None, None)


def check_names(document: dict[str, Any], model_path: Path) -> None:
    """Every working node is named by its element's GlobalId, with its step id and class, in the committed model;
    every deleted one is gone from it."""
    model = ifcopenshell.open(str(model_path))
    for node in document["nodes"][1:]:
        extras = node["extras"]
        if extras["model"] != "working":
            continue
        if extras["change"] == "deleted":
            assert _no_element(model, node["name"]), node
            continue
        element = model.by_id(extras["step_id"])
        assert (node["name"], extras["ifc_class"], extras["name"]) == (element.GlobalId, element.is_a(), element.Name)


def _no_element(model: Any, global_id: str) -> bool:
    try:
        return model.by_guid(global_id) is None
    except RuntimeError:
        return True


def check_change_scene(tmp_path: Path, stack: Stack, session_id: str, result: dict[str, Any],
                       response: Any = None, model_path: Path | None = None) -> dict[str, Any]:
    if response is None:
        response = stack.client.call("GET", f"/api/sessions/{session_id}/results/{result['tool_call_id']}/scene",
                                     timeout=300)
    assert response.status_code == 200, response.text
    assert response.headers["Content-Type"] == "model/gltf-binary"
    assert response.headers["Content-Encoding"] == "gzip"  # requests asks for it; its content is the GLB
    report = validate(tmp_path, response.content)
    assert report["errors"] == 0, report["messages"]
    document = glb_document(response.content)
    nodes = change_nodes(document)
    changes = result["changes"]
    assert {k: len(v) for k, v in nodes.items()} == {k: len(changes[k]) for k in nodes}
    for kind in nodes:
        assert sorted(n["extras"]["step_id"] for n in nodes[kind]) == sorted(changes[kind])
    summary = json.loads(response.headers["X-Nexus-Scene"])
    assert summary["counts"] == {k: len(changes[k]) for k in nodes}
    (deleted,) = nodes["deleted"]
    assert deleted["extras"]["ifc_class"] == "IfcDoor" and "mesh" in deleted and len(deleted["name"]) == 22
    moved = [n for n in nodes["modified"] if "before_matrix" in n["extras"] and "mesh" in n]  # (its openings follow)
    assert len(moved) == 1
    after = np.array(moved[0]["matrix"]).reshape(4, 4).T
    before = np.array(moved[0]["extras"]["before_matrix"]).reshape(4, 4).T
    assert np.allclose(after[:3, 3] - before[:3, 3], [1.0, 0.0, 0.0], atol=1e-3)  # 1 m east, in IFC axes
    renamed = [n for n in nodes["modified"] if n["extras"]["name"] == "renamed by the scene test"]
    assert len(renamed) == 1 and "before_matrix" not in renamed[0]["extras"]
    if model_path is not None:
        check_names(document, model_path)
    return document


def test_the_scene_of_an_automation_on_the_sample_building_matches_its_change_report_and_is_valid_gltf(
        tmp_path, sample_stack):
    session_id, result = sample_stack.automate(CHANGE)
    document = check_change_scene(tmp_path, sample_stack, session_id, result, model_path=sample_stack.model_path)
    nodes = document["nodes"][1:]
    assert len(nodes) > 40  # the whole storey is there, not only the changed elements
    assert all(set(n["extras"]) >= {"step_id", "ifc_class", "name", "storey", "model", "change"} for n in nodes)
    assert {n["extras"]["model"] for n in nodes} == {"working"}
    assert len(document["meshes"]) < len([n for n in nodes if "mesh" in n])  # doors, windows share meshes


def test_a_federated_session_s_scenes_hold_its_references_as_context_never_as_changes(tmp_path, sample_stack):
    """The references' elements are nodes of their own model (as the 3D image draws them behind the working one):
    the result's scene and the host's scene of the session's view, with the change report's counts unchanged."""
    reference = tmp_path / "refs" / "MEP.ifc"
    write_sample_model(reference, storeys=2, seed=7)
    refs = [{"name": "MEP.ifc", "path": str(reference)}]
    session_id, result = sample_stack.automate(CHANGE, refs=refs)
    response = sample_stack.client.call("GET", f"/api/sessions/{session_id}/results/{result['tool_call_id']}/scene",
                                        timeout=300)
    document = check_change_scene(tmp_path, sample_stack, session_id, result, response,
                                  model_path=sample_stack.model_path)  # validator, counts, names, ghosts
    nodes = document["nodes"][1:]
    referenced = [n for n in nodes if n["extras"]["model"] == "MEP.ifc"]
    reference_ids = {e.GlobalId for e in ifcopenshell.open(str(reference)).by_type("IfcElement")}
    assert referenced and {n["name"] for n in referenced} <= reference_ids
    assert all(n["extras"]["change"] is None for n in referenced)
    assert {n["extras"]["model"] for n in nodes} == {"working", "MEP.ifc"}
    summary = json.loads(response.headers["X-Nexus-Scene"])
    assert summary["references"] == {"MEP.ifc": len(referenced)}
    assert summary["nodes"] == len(nodes)

    client, host = sample_stack.client, sample_stack.host_id
    around = client.call("GET", f"/api/hosts/{host}/scene", params={"view": "3D", "session": session_id}, timeout=300)
    assert around.status_code == 200, around.text
    assert validate(tmp_path, around.content)["errors"] == 0
    whole = [n for n in glb_document(around.content)["nodes"][1:] if n["extras"]["model"] == "MEP.ifc"]
    assert len(whole) > len(referenced) and json.loads(around.headers["X-Nexus-Scene"])["references"] == {
        "MEP.ifc": len(whole)}  # the whole reference around the whole model; the storey's scene: what reaches it
    alone = client.call("GET", f"/api/hosts/{host}/scene", params={"view": "3D"}, timeout=300)
    assert {n["extras"]["model"] for n in glb_document(alone.content)["nodes"][1:]} == {"working"}
    stranger = Client(sample_stack.server.url, sample_stack.server.token("mallory"))
    assert stranger.call("GET", f"/api/hosts/{host}/scene", params={"session": session_id}).status_code == 404


def test_the_host_scene_by_view_and_by_elements_and_what_it_refuses(tmp_path, sample_stack):
    client = sample_stack.client
    host = sample_stack.host_id
    whole = client.call("GET", f"/api/hosts/{host}/scene", params={"view": "3D"}, timeout=300)
    assert whole.status_code == 200, whole.text
    assert validate(tmp_path, whole.content)["errors"] == 0
    nodes = glb_document(whole.content)["nodes"][1:]
    assert {n["extras"]["storey"] for n in nodes} >= {"Level 1", "Level 2"}
    wall = next(n for n in nodes if n["extras"]["ifc_class"] == "IfcWall")
    picked = client.call("GET", f"/api/hosts/{host}/scene",
                         params={"elements": f"{wall['name']},#{nodes[0]['extras']['step_id']}"}, timeout=300)
    assert picked.status_code == 200, picked.text
    assert validate(tmp_path, picked.content)["errors"] == 0
    assert sorted(n["name"] for n in glb_document(picked.content)["nodes"][1:]) == sorted({wall["name"], nodes[0]["name"]})

    bad = client.call("GET", f"/api/hosts/{host}/scene", params={"elements": "door 7"})
    assert bad.status_code == 400 and "neither a step id" in bad.json()["error"]
    unknown_view = client.call("GET", f"/api/hosts/{host}/scene", params={"view": "Level 9"}, timeout=300)
    assert unknown_view.status_code == 422 and "Level 9" in unknown_view.json()["error"]
    unknown_gid = client.call("GET", f"/api/hosts/{host}/scene", params={"elements": "Z" * 22}, timeout=300)
    assert unknown_gid.status_code == 422 and "no element with GlobalId" in unknown_gid.json()["error"]
    unknown_id = client.call("GET", f"/api/hosts/{host}/scene", params={"elements": "#999999"}, timeout=300)
    assert unknown_id.status_code == 422 and "no element #999999" in unknown_id.json()["error"]
    stranger = Client(sample_stack.server.url, sample_stack.server.token("mallory"))
    assert stranger.call("GET", f"/api/hosts/{host}/scene").status_code == 404
    assert Client(sample_stack.server.url, None).call("GET", f"/api/hosts/{host}/scene").status_code == 401


def test_a_rolled_back_automation_has_no_scene_and_a_collect_result_has_no_view(tmp_path, sample_stack):
    client = sample_stack.client
    session_id, result = sample_stack.automate("model.by_type('IfcDoor')[0].Name = 'x'\nraise RuntimeError('no')",
                                               committed=False)
    response = client.call("GET", f"/api/sessions/{session_id}/results/{result['tool_call_id']}/scene")
    assert response.status_code == 409 and "changed nothing" in response.json()["error"]
    session_id, result = sample_stack.automate("print(len(model.by_type('IfcDoor')))", committed=False, turn=collect)
    response = client.call("GET", f"/api/sessions/{session_id}/results/{result['tool_call_id']}/scene")
    assert response.status_code == 404 and "has no view to show in 3D" in response.json()["error"]
    missing = client.call("GET", f"/api/sessions/{session_id}/results/nope/scene")
    assert missing.status_code == 404 and "no result for nope" in missing.json()["error"]


@pytest.mark.parametrize("decision", ["keep", "discard"])
def test_a_change_held_under_ask_shows_the_held_model_then_the_committed_one_or_nothing(tmp_path, scripts_dir,
                                                                                        decision):
    model = tmp_path / "model.ifc"
    write_sample_model(model, storeys=2)
    committed_before = model.read_bytes()
    server_cm, host_cm, stack = serve(tmp_path, model)
    try:
        client = stack.client
        session_id = client.new_session(stack.host_id, write_script(scripts_dir / "held.json", [
            [{"tool_call": {"name": "execute_task_automation", "input": {"code": CHANGE}}}], [{"text": "done"}]]))
        assert client.call("PUT", f"/api/sessions/{session_id}/policy", json={"policy": "ask"}).status_code == 200
        while_held: list[Any] = []

        def on_frame(frame: Any) -> None:
            meta = (frame.chunk or {}).get("metadata") or {}
            if meta.get("kind") != "approval_request":
                return

            def look_then_decide() -> None:
                try:
                    url = f"/api/sessions/{session_id}/results/{meta['tool_call_id']}/scene"
                    while_held.append((meta, client.call("GET", url, timeout=300)))
                    while_held.append(model.read_bytes() == committed_before)
                    # Again: the same held file, kept open by its render server (before: copied and opened anew).
                    writes, opens = stack.host.runtime.held_snapshot.writes, render_opens()
                    again = client.call("GET", url, timeout=300)
                    while_held.append((again.content == while_held[0][1].content,
                                       stack.host.runtime.held_snapshot.writes - writes, render_opens() - opens))
                finally:
                    client.call("POST", f"/api/sessions/{session_id}/approval",
                                json={"tool_call_id": meta["tool_call_id"], "decision": decision})
            threading.Thread(target=look_then_decide, daemon=True).start()

        stream = client.run(session_id, "go", on_frame=on_frame)
        (meta, held_response), nothing_written, (same, writes, opens) = while_held
        assert same and writes == 0 and opens == 0, (same, writes, opens)
        assert nothing_written  # the scene came from the held model: the file on disk was still the old one
        assert json.loads(held_response.headers["X-Nexus-Scene"])["held"] is True
        check_change_scene(tmp_path, stack, session_id, meta, held_response)  # counts, deleted, moved, renamed

        result = stream.of("Metadata", "tool_result")[0]["metadata"]
        after = client.call("GET", f"/api/sessions/{session_id}/results/{result['tool_call_id']}/scene", timeout=300)
        if decision == "keep":
            assert result["committed"] and result["changes"] == meta["changes"]
            check_change_scene(tmp_path, stack, session_id, result, after)
            assert "held" not in json.loads(after.headers["X-Nexus-Scene"])
        else:
            assert not result["committed"] and model.read_bytes() == committed_before
            assert after.status_code == 409 and "was discarded" in after.json()["error"], after.text
    finally:
        host_cm.__exit__(None, None, None)
        server_cm.__exit__(None, None, None)


@pytest.mark.parametrize("name", CORPUS_FILES)
def test_the_scene_of_an_automation_on_a_corpus_file_matches_its_change_report(tmp_path, name):
    entry = next(e for e in manifest() if e.file == name)  # a file the manifest names: missing fails, never skips
    if not entry.present():
        pytest.fail(f"{name} is not in {corpus_dirs()} (scripts/corpus.sh; corpus/SOURCES.md)")
    source = entry.location
    model = tmp_path / name
    shutil.copy(source, model)
    server_cm, host_cm, stack = serve(tmp_path, model)
    try:
        session_id, result = stack.automate(CHANGE)
        document = check_change_scene(tmp_path, stack, session_id, result, model_path=model)
        colours = {tuple(m["pbrMetallicRoughness"]["baseColorFactor"]) for m in document["materials"]}
        assert len(colours) >= 3  # the files' own styles, not one grey
    finally:
        host_cm.__exit__(None, None, None)
        server_cm.__exit__(None, None, None)


def test_a_revit_host_answers_no_scene_in_plain_words(server, alice):
    from tests.support.test_host import TestHost

    host = TestHost(server.ws_url, alice.token, host_app="revit").start()
    try:
        response = alice.call("GET", f"/api/hosts/{server.wait_for_host(alice.token)}/scene")
        assert response.status_code == 409
        assert "Revit hosts cannot send a 3D scene yet" in response.json()["error"]
    finally:
        host.stop()


def test_the_mcp_review_card_s_scenes_are_valid_gltf_with_the_change_report_s_counts_and_the_reference(tmp_path):
    """`nexus mcp --ifc --ref --policy ask` (the real IFC host over stdio, a minimal MCP Apps client): the card's
    scene_of_change while the change is held and after Keep passes the Khronos validator, has the change report's
    counts, and holds the --ref model's elements as context."""
    import anyio

    from tests.mcp.support import stdio_session
    from tests.mcp.test_review_card import RENDERS_APPS, held_change

    model, reference = tmp_path / "ARC.ifc", tmp_path / "refs" / "MEP.ifc"
    write_sample_model(model, storeys=2)
    write_sample_model(reference, storeys=1, seed=7)

    async def scenario() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        async with stdio_session("--ifc", str(model), "--ref", str(reference), "--out", str(tmp_path / "out.ifc"),
                                 "--db", str(tmp_path / "db.sqlite"), "--policy", "ask",
                                 extensions=RENDERS_APPS) as session:
            async with anyio.create_task_group() as group:
                group.start_soon(session.call_tool, "execute_task_automation", {"code": CHANGE})
                held = await held_change(session, timeout_s=300)
                while_held = await session.call_tool("scene_of_change", {"session_id": held["session_id"],
                                                                         "tool_call_id": held["tool_call_id"]})
                await session.call_tool("decide_held_change", {"tool_call_id": held["tool_call_id"],
                                                               "decision": "keep"})
            kept = await session.call_tool("scene_of_change", {"session_id": held["session_id"],
                                                               "tool_call_id": held["tool_call_id"]})
            return held, while_held.structured_content, kept.structured_content

    held, while_held, kept = anyio.run(scenario)
    expected = {k: len(held["changes"][k]) for k in ("added", "modified", "deleted")}
    assert sum(expected.values()) >= 3, held["changes"]
    for answer, is_held in ((while_held, True), (kept, False)):
        assert answer["ok"] is True, answer
        glb = base64.b64decode(answer["glb_base64"])
        assert validate(tmp_path, glb)["errors"] == 0
        document = glb_document(glb)
        assert {k: len(v) for k, v in change_nodes(document).items()} == expected == answer["summary"]["counts"]
        assert bool(answer["summary"].get("held")) is is_held
        referenced = [n for n in document["nodes"][1:] if n["extras"]["model"] == "MEP.ifc"]
        assert referenced and all(n["extras"]["change"] is None for n in referenced)
        assert answer["summary"]["references"] == {"MEP.ifc": len(referenced)}
    check_names(glb_document(base64.b64decode(kept["glb_base64"])), tmp_path / "out.ifc")
