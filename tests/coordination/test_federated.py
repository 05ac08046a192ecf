"""Federated sessions on the real IFC host with buildingSMART's federated pair (Architectural.ifc working, MEP.ifc
referenced, read in place through NEXUS_BCF_SUITE): scripts see `refs`, clash against them inside a collection, and
every attempt to change a reference fails the script with ReferenceIsReadOnly while the reference file keeps its
bytes and the working model is not written. Through each door: the host itself (fork and spawn), `nexus run --ref`,
`nexus mcp --ifc ... --ref`, `POST /api/sessions {refs}` (paths inside the person's own folders only)."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from ifc_host.executor import IsolatedExecutor, execute_command
from tests.coordination.suite import federated_pair
from tests.support.client import Client, write_script
from tests.support.spine import automate, collect, say

ROOT = Path(__file__).resolve().parents[2]
READ = "print(sorted(refs), len(refs['MEP.ifc'].by_type('IfcFlowSegment')), refs.placement('MEP.ifc').tolist())"
CHANGES = {  # each a different way to change the reference; every one must fail the script
    "attribute": "refs['MEP.ifc'].by_type('IfcFlowSegment')[0].Name = 'moved'",
    "api": "import ifcopenshell.api\nifcopenshell.api.run('root.create_entity', refs['MEP.ifc'], ifc_class='IfcWall')",
    "remove": "r = refs['MEP.ifc']\nr.remove(r.by_type('IfcFlowSegment')[0])",
    "guard removed": "r = refs['MEP.ifc']\nr.transaction = None\nr.by_type('IfcFlowSegment')[0].Name = 'moved'",
    "guard restored": ("r = refs['MEP.ifc']\nguard = r.transaction\nr.transaction = None\n"
                       "r.by_type('IfcFlowSegment')[0].Name = 'moved'\nr.transaction = guard"),
}
ALSO_THE_MODEL = "model.by_type('IfcWall')[0].Name = 'changed too'\n"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def pair(tmp_path) -> tuple[Path, Path]:
    """A scratch copy of the working model (it may be written) and the reference in place (never written)."""
    architectural, mep = federated_pair()
    work = tmp_path / "Architectural.ifc"
    shutil.copyfile(architectural, work)
    return work, mep


@pytest.mark.parametrize("isolation", ["fork", "spawn"])
def test_scripts_read_references_and_every_change_to_one_fails_with_nothing_written(pair, isolation):
    work, mep = pair
    work_sha, mep_sha = _sha(work), _sha(mep)
    refs = ({"name": "MEP.ifc", "path": str(mep)},)
    executor = IsolatedExecutor(work, isolation=isolation)
    try:
        def run(code: str, mode: str) -> dict:
            return executor.execute(execute_command(request_id=f"{mode}-{len(code)}-{hash(code)}", mode=mode, code=code,
                                               timeout_s=120, refs=refs))

        read = run(READ, "collect")
        assert read["ok"], read["error"]
        assert read["stdout"].strip() == ("['MEP.ifc'] 5 [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], "
                                          "[0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]]")
        for how, change in CHANGES.items():
            for mode in ("collect", "automate"):
                result = run(ALSO_THE_MODEL + change, mode)
                assert not result["ok"] and not result["committed"], (how, mode, result)
                assert result["error"]["type"] == "ReferenceIsReadOnly", (how, mode, result["error"])
                assert "refs['MEP.ifc']" in result["error"]["message"] and "read-only" in result["error"]["message"]
        assert _sha(mep) == mep_sha and _sha(work) == work_sha  # nothing written, the working model neither
        missing = executor.execute(execute_command(request_id="missing", mode="collect", code="print(1)", timeout_s=60,
                                              refs=({"name": "STR.ifc", "path": str(work.parent / "STR.ifc")},)))
        assert missing["error"]["type"] == "BadReference" and "STR.ifc" in missing["error"]["message"]
        kept = run("model.by_type('IfcWall')[0].Name = 'renamed'\nprint(refs['MEP.ifc'].by_type('IfcWall'))",
                   "automate")
        assert kept["committed"], kept["error"]  # reading a reference in an automation is fine
        assert _sha(mep) == mep_sha and _sha(work) != work_sha
    finally:
        executor.close()


def test_a_clash_between_the_model_and_its_references_inside_a_collection(pair):
    work, mep = pair
    executor = IsolatedExecutor(work, isolation="fork")
    code = ("import json\nfrom ifcclash.ifcclash import Clasher  # the library itself is importable too\n"
            "for f in refs.clash(clearance=0.3):\n    print(json.dumps(f.as_json()))\n")
    try:
        result = executor.execute(execute_command(request_id="clash", mode="collect", code=code, timeout_s=300,
                                             refs=({"name": "MEP.ifc", "path": str(mep)},)))
    finally:
        executor.close()
    assert result["ok"], result["error"]
    findings = [json.loads(line) for line in result["stdout"].splitlines()]
    assert len(findings) == 19  # as `nexus check Architectural.ifc --ref MEP.ifc --clearance 0.3` (docs)
    for finding in findings:
        a, b = finding["elements"]
        assert a["model"] == "Architectural.ifc" and b["model"] == "MEP.ifc"
        assert a["ifc_class"] in ("IfcCovering", "IfcWallStandardCase") and b["name"] in ("Duct", "Bend")
        assert len(a["global_id"]) == 22 and len(b["global_id"]) == 22 and len(finding["point"]) == 3
        assert 0.18 <= finding["distance"] <= 0.3


def _scripted(tmp_path: Path) -> str:
    return write_script(tmp_path / "federated.json", [
        collect(READ), automate(ALSO_THE_MODEL + CHANGES["attribute"]), say("Looked at the reference.")])


def _tool_results(chunks: list[dict]) -> list[dict]:
    return [c["metadata"] for c in chunks if c["type"] == "Metadata" and c["metadata"].get("kind") == "tool_result"]


def test_nexus_run_with_a_reference(pair, tmp_path):
    work, mep = pair
    work_sha, mep_sha = _sha(work), _sha(mep)
    command = [sys.executable, "-m", "cloud.cli", "run", "Look at the ducts", "--ifc", str(work), "--ref", str(mep),
               "--model", _scripted(tmp_path), "--json", "--out", str(tmp_path / "out.ifc"),
               "--db", str(tmp_path / "run.db")]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=dict(os.environ), timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    read, changed = _tool_results([json.loads(line) for line in done.stdout.splitlines()])
    assert read["stdout"].startswith("['MEP.ifc'] 5 ")
    assert changed["committed"] is False and changed["error"]["type"] == "ReferenceIsReadOnly"
    assert _sha(mep) == mep_sha and _sha(work) == work_sha and not (tmp_path / "out.ifc").exists()
    from cloud.store import Store

    (session,) = Store(tmp_path / "run.db").list_sessions()
    (first,) = [e for e in Store(tmp_path / "run.db").transcript(session["id"]) if e.get("role") == "user"][:1]
    context = next(p["text"] for p in first["content"] if p.get("kind") == "host_context")
    assert "Reference models (read-only" in context and "MEP.ifc" in context  # what the model is told

    refused = subprocess.run([*command[:8], str(work.parent / "STR.ifc"), *command[9:]], capture_output=True,
                             text=True, cwd=ROOT, env=dict(os.environ), timeout=120)
    assert refused.returncode == 2 and "--ref" in refused.stderr and "STR.ifc" in refused.stderr


def test_nexus_mcp_with_a_reference(pair, tmp_path):
    from tests.mcp.support import stdio_session, text_of

    work, mep = pair
    mep_sha = _sha(mep)

    async def scenario():
        async with stdio_session("--ifc", str(work), "--ref", str(mep), "--db", str(tmp_path / "db.sqlite")) as s:
            read = await s.call_tool("execute_data_collection", {"code": READ})
            changed = await s.call_tool("execute_task_automation", {"code": CHANGES["api"]})
            context = await s.read_resource("nexus://context")
            return read, changed, context

    read, changed, context = anyio.run(scenario)
    assert not read.is_error and read.structured_content["stdout"].startswith("['MEP.ifc'] 5 "), text_of(read)
    assert changed.is_error and changed.structured_content["error"]["type"] == "ReferenceIsReadOnly"
    assert "MEP.ifc" in context.contents[0].text
    assert _sha(mep) == mep_sha


def test_http_sessions_take_references_from_the_persons_own_folders_only(server, alice, pair, tmp_path, monkeypatch,
                                                                           scripts_dir):
    from tests.support.real_ifc import connected_host

    work, mep = pair
    root = tmp_path / "root"
    (root / "alice").mkdir(parents=True)
    (root / "bob").mkdir()
    shutil.copyfile(mep, root / "alice" / "MEP.ifc")
    shutil.copyfile(mep, root / "bob" / "secret.ifc")
    (root / "alice" / "link.ifc").symlink_to(root / "bob" / "secret.ifc")
    monkeypatch.setenv("NEXUS_BATCH_ROOT", str(root))
    reference_sha, work_sha = _sha(root / "alice" / "MEP.ifc"), _sha(work)

    def create(body: dict) -> object:
        return alice.call("POST", "/api/sessions", json=body)

    assert create({"refs": ["MEP.ifc"]}).status_code == 409  # no IFC host to send them to
    with connected_host(work, server.url, alice.token) as (_, host_id):
        refused = {"../bob/secret.ifc": 400, "/etc/passwd": 400, "link.ifc": 403, "nothing.ifc": 404}
        for path, status in refused.items():
            response = create({"host_id": host_id, "refs": [path]})
            assert response.status_code == status and path in response.json()["error"], (path, response.text)
        assert create({"host_id": host_id, "refs": "MEP.ifc"}).status_code == 400
        bob = Client(server.url, server.token("bob"))
        assert bob.call("POST", "/api/sessions", json={"host_id": host_id, "refs": ["MEP.ifc"]}).status_code == 404

        spec = _scripted(scripts_dir)
        created = create({"host_id": host_id, "model": spec, "refs": ["MEP.ifc"]})
        assert created.status_code == 201, created.text
        assert created.json()["refs"] == [{"name": "MEP.ifc", "path": "MEP.ifc"}]  # as the person names it
        sid = created.json()["session_id"]
        stream = alice.run(sid, "look at the ducts")
        read, changed = (c["metadata"] for c in stream.of("Metadata", "tool_result"))
        assert read["stdout"].startswith("['MEP.ifc'] 5 "), read
        assert changed["error"]["type"] == "ReferenceIsReadOnly" and not changed["committed"]
        shown = alice.call("GET", f"/api/sessions/{sid}").json()
        assert shown["refs"] == [{"name": "MEP.ifc", "path": "MEP.ifc"}]
        assert "Reference models (read-only" in json.dumps(shown["messages"])
        path = f"/api/sessions/{sid}/refs"
        assert bob.call("PUT", path, json={"refs": []}).status_code == 404  # not his session
        assert alice.call("PUT", path, json={"refs": ["link.ifc"]}).status_code == 403
        assert alice.call("PUT", path, json={"refs": []}).json() == {"session_id": sid, "refs": []}
        assert alice.call("GET", f"/api/sessions/{sid}").json()["refs"] == []
    assert _sha(root / "alice" / "MEP.ifc") == reference_sha and _sha(work) == work_sha


def test_lookup_api_finds_the_clash_api_and_the_reference_helpers():
    from cloud.hosts.api_indexes import api_index
    from cloud.hosts.hello import Hello

    index = api_index("ifc", Hello.parse({"type": "hello", "host_app": "ifc", "host_version": "1",
                                          "runtime_version": "1", "python_version": "3.11.7",
                                          "document": {"title": "T", "schema": "IFC4"}}))
    assert index.answer("Clasher").splitlines()[1].startswith("class ifcclash.ifcclash.Clasher(")
    assert "ifcclash.ifcclash.Clasher.clash(" in index.answer("Clasher clash")
    clash = index.answer("refs.clash")
    assert clash.splitlines()[1].startswith("function refs.clash(") and "clearance" in clash
    assert index.answer("refs").splitlines()[1].startswith("global refs: Mapping[str, ifcopenshell.file]")


def test_views_draw_the_references_greyed_behind_the_working_model(pair):
    import io

    from PIL import Image

    from ifc_host.render import render_view

    work, mep = pair
    architectural = str(work)

    def inked(png: bytes) -> int:  # pixels that are not the white background
        return sum(Image.open(io.BytesIO(png)).convert("L").histogram()[:250])

    alone = render_view(str(mep), "3D", [], 400, timeout_s=300)
    federated = render_view(str(mep), "3D", [], 400, timeout_s=300, refs=[architectural])
    assert federated.png != alone.png
    assert inked(federated.png) > 2 * inked(alone.png)  # the building around the ducts, drawn behind them
    plan = render_view(str(mep), None, [], 400, timeout_s=300, refs=[architectural])
    assert plan.png  # plans draw the working model only
