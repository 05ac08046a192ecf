"""A rule set's clash check after an automation runs against the session's reference models, over the real server,
a real IFC host and buildingSMART's federated pair (NEXUS_BCF_SUITE, read in place): an automation that moves a wall
lining of Architectural.ifc onto a duct of MEP.ifc is rolled back under `block` (the file byte-identical); under
`warn` it is kept, the clash with both elements (and their models) is the session's finding, and the session's BCF
archive has its topic, selecting both, with the image captured after the automation as its snapshot."""
from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from cloud.bcf.archive import read_bcf
from tests.coordination.independent_reader import read_archive
from tests.coordination.suite import federated_pair
from tests.support.client import write_script
from tests.support.real_ifc import connected_host
from tests.support.server import running_server
from tests.support.spine import automate, say

LINING = "2QSM9p3m99rBfod7zG4JgE"  # an IfcCovering of Architectural.ifc, 197 mm from a duct (docs/coordination.md)
DUCT = "1wlrA3OY1En95av2mL6981"  # the IfcFlowSegment "Duct" of MEP.ifc beside it
MOVE_THE_LINING = f"""import ifcopenshell.api
import ifcopenshell.util.placement
lining = model.by_guid({LINING!r})
matrix = ifcopenshell.util.placement.get_local_placement(lining.ObjectPlacement)
matrix[1, 3] -= 300  # 300 mm south, through the duct (the model is in millimetres)
ifcopenshell.api.run("geometry.edit_object_placement", model, product=lining, matrix=matrix, is_si=False)
print("moved")
"""
CLASH_RULES = {"name": "coordination", "checks": [{"check": "clash", "severity": "error"}]}


@pytest.fixture
def server(tmp_path, scripts_dir):
    """Time for the view captured after the automation (the architectural model's plan)."""
    with running_server(tmp_path, keepalive_s=0.5, tool_timeout_s=180, script_timeout_s=120) as srv:
        yield srv


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_an_automation_clashing_with_a_reference_is_blocked_or_reported_and_exported(server, alice, tmp_path,
                                                                                      monkeypatch, scripts_dir):
    architectural, mep = federated_pair()
    work = tmp_path / "Architectural.ifc"
    shutil.copyfile(architectural, work)
    root = tmp_path / "root"
    (root / "alice").mkdir(parents=True)
    shutil.copyfile(mep, root / "alice" / "MEP.ifc")
    monkeypatch.setenv("NEXUS_BATCH_ROOT", str(root))
    spec = write_script(scripts_dir / "move.json", [automate(MOVE_THE_LINING), say("Moved the lining.")])
    with connected_host(work, server.url, alice.token) as (_, host_id):
        def session(validation: str) -> str:
            created = alice.call("POST", "/api/sessions", json={"host_id": host_id, "model": spec, "refs": ["MEP.ifc"]})
            assert created.status_code == 201, created.text
            sid = created.json()["session_id"]
            assert alice.call("PUT", f"/api/sessions/{sid}/rules", json={"rules": CLASH_RULES}).status_code == 200
            assert alice.call("PUT", f"/api/sessions/{sid}/validation",
                              json={"validation": validation}).status_code == 200
            return sid

        before, reference = _sha(work), _sha(root / "alice" / "MEP.ifc")
        blocked_sid = session("block")
        (blocked,) = (c["metadata"] for c in alice.run(blocked_sid, "move the lining").of("Metadata", "tool_result"))
        assert not blocked["committed"] and blocked["error"]["type"] == "RuleSetFailed", blocked
        assert any("rule set 'coordination': error: clash: IfcCovering clashes with IfcFlowSegment 'Duct'"
                   in f["message"] for f in blocked["failures"]), blocked["failures"]
        assert _sha(work) == before

        sid = session("warn")
        (kept,) = (c["metadata"] for c in alice.run(sid, "move the lining").of("Metadata", "tool_result"))
        assert kept["committed"], kept
        assert _sha(work) != before and _sha(root / "alice" / "MEP.ifc") == reference  # the reference is never written
        (finding,) = alice.call("GET", f"/api/sessions/{sid}/findings").json()["findings"]
        assert (finding["rule"], finding["severity"], finding["tool_call_id"]) == ("clash", "error",
                                                                                  kept["tool_call_id"])
        assert [(e["global_id"], e["ifc_class"], e["model"]) for e in finding["elements"]] == [
            (LINING, "IfcCovering", "Architectural.ifc"), (DUCT, "IfcFlowSegment", "MEP.ifc")]
        assert finding["point"] and finding["distance"] > 0.002 and finding["image_id"]
        for version in ("2.1", "3.0"):
            archive = alice.call("GET", f"/api/sessions/{sid}/bcf?version={version}", timeout=120)
            assert archive.status_code == 200, archive.text
            path = tmp_path / f"after-{version}.bcf"
            path.write_bytes(archive.content)
            (topic,) = read_bcf(path).topics.values()
            assert topic.topic.title == finding["title"]
            got_version, topics = read_archive(path)
            (read,) = topics.values()
            (viewpoint,) = read.viewpoints
            assert got_version == version and sorted(viewpoint.selected) == sorted([LINING, DUCT])
            assert viewpoint.snapshot  # the image captured after the automation
