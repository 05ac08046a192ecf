"""Truthful, unforgeable change reports (issue 22 item 5, issue 23 M3): what an automation changed is worked
out in the keeper from the model the script's process wrote, compared entity by entity with the committed
one. A value written back unchanged is no change, a project edit is reported like any element, a change that
reached an element through linked data names what changed, and a script that switches off or patches the
host's change recording in its own process still gets the true report, validation and IDS check.

Real IfcOpenShell sample buildings, real keeper and script processes under both isolations (one keeper per
isolation for the tests on the module's sample: tests/ifc_host/shared_keeper.py).
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path

import ifcopenshell
import pytest

from cloud.config import Settings
from cloud.hosts.base import split_epilogue_output
from cloud.tools.render import describe_run
from ifc_host import sample
from ifc_host.executor import IsolatedExecutor, execute_command
from ifc_host.keeper_process import ISOLATIONS
from ifc_host.protocol import execute_result
from tests.ifc_host.shared_keeper import SharedKeeper
from tests.ifc_host.test_ids import FIRE_RATING_IDS

EPILOGUE = (Path(__file__).resolve().parents[2] / "cloud" / "hosts" / "epilogues" / "ifc_epilogue.py").read_text(
    encoding="utf-8")
DELETE_THREE_DOORS = """
import ifcopenshell.api.root
for door in model.by_type('IfcDoor')[:3]:
    print(door.id())
    ifcopenshell.api.root.remove_product(model, product=door)
"""
VISIBLE_EDIT = "wall = model.by_type('IfcWall')[0]\nwall.Name = 'renamed in plain sight'\nprint('wall', wall.id())\n"
# Two ways a script can blind the recorder in its own process: switch it off, or patch what it reports.
FORGERS = {
    "transaction_none": "model.transaction = None\n",
    "patched_recorder": ("import ifc_host.changes as _c\n_real = _c.ChangeRecorder.finish\n"
                         "_c.ChangeRecorder.finish = lambda self: _c.ChangeSet()\n"),
}


@pytest.fixture(scope="module", params=ISOLATIONS)
def isolation(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def shared(isolation: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedKeeper]:
    path = tmp_path_factory.mktemp(f"trusted-{isolation}") / "sample.ifc"
    sample.write_sample_model(path)  # 26 doors, 3 storeys, material layers
    keeper = SharedKeeper(path, isolation=isolation)
    yield keeper
    keeper.close()


@pytest.fixture()
def executor(shared: SharedKeeper) -> Iterator[IsolatedExecutor]:
    yield from shared.lend()  # the module's keeper, on the sample as first written


@pytest.fixture()
def model_path(executor: IsolatedExecutor, shared: SharedKeeper) -> Path:
    return shared.path


_counter = iter(range(1_000_000))


def automate(executor: IsolatedExecutor, code: str, **options: object) -> dict:
    result = executor.execute(execute_command(f"t{next(_counter)}", "automate", code, 120, epilogue_code=EPILOGUE,
                                         **options))  # type: ignore[arg-type]
    return result


def report_of(result: dict) -> str:
    return split_epilogue_output(result.get("epilogue_stdout"))[0]


def doors_in(path: Path) -> list[int]:
    return sorted(d.id() for d in ifcopenshell.open(str(path)).by_type("IfcDoor"))


# --- truthful ----------------------------------------------------------------------------------------------
def test_values_written_back_unchanged_are_no_change_and_nothing_is_written(executor: IsolatedExecutor,
                                                                             model_path: Path):
    before = model_path.read_bytes()
    stat = model_path.stat()
    result = automate(executor, "doors = model.by_type('IfcDoor')\nfor d in doors:\n    d.Tag = d.Tag\n"
                                "    d.Name = d.Name\nprint(len(doors))")
    assert result["ok"] and result["committed"], result.get("error")
    assert result["stdout"].strip() == "26"
    assert result["changes"] == {"added": [], "modified": [], "deleted": []}
    assert result["unchanged"] is True
    assert result["change_details"]["elements"] == [] and result["change_details"]["groups"] == []
    assert "No elements were added, modified or deleted." in report_of(result)
    assert "indirectly" not in report_of(result)
    assert model_path.read_bytes() == before and model_path.stat().st_mtime_ns == stat.st_mtime_ns
    text = describe_run(execute_result("r", result), "automate", report_of(result), Settings(), image_caption=None,
                        notes=[], extra=[])
    assert "the script changed nothing, so the model file was not rewritten" in text


def test_project_site_building_and_storey_edits_are_reported_like_any_element(executor: IsolatedExecutor,
                                                                              model_path: Path):
    code = """
project = model.by_type('IfcProject')[0]
project.Description = 'Tender issue'
site = model.by_type('IfcSite')[0]
site.Description = 'North plot'
building = model.by_type('IfcBuilding')[0]
building.Name = 'Block A'
storey = model.by_type('IfcBuildingStorey')[0]
storey.Name = 'Ground floor'
print(project.id(), site.id(), building.id(), storey.id())
"""
    result = automate(executor, code)
    assert result["committed"], result.get("error")
    ids = [int(x) for x in result["stdout"].split()]
    assert result["changes"] == {"added": [], "modified": sorted(ids), "deleted": []}
    elements = {e["id"]: {c["key"]: (c["old"], c["new"]) for c in e["changes"]}
                for e in result["change_details"]["elements"]}
    assert elements[ids[0]] == {"attribute:Description": (None, "Tender issue")}
    assert elements[ids[1]] == {"attribute:Description": (None, "North plot")}
    assert elements[ids[2]]["attribute:Name"][1] == "Block A"
    assert elements[ids[3]]["attribute:Name"][1] == "Ground floor"
    report = report_of(result)
    assert "0 added, 4 modified, 0 deleted" in report and "Description (none) -> Tender issue" in report
    written = ifcopenshell.open(str(model_path))
    assert written.by_type("IfcProject")[0].Description == "Tender issue"


def test_a_change_through_linked_data_names_what_changed(executor: IsolatedExecutor):
    code = ("layer = model.by_type('IfcMaterialLayer')[0]\nlayer.LayerThickness = layer.LayerThickness + 0.05\n"
            "print(layer.id())")
    result = automate(executor, code)
    assert result["committed"], result.get("error")
    layer = int(result["stdout"])
    details = result["change_details"]
    assert result["changes"]["modified"] and details["groups"]
    (group,) = details["groups"]
    assert group["kinds"] == ["linked"] and group["via"] == [f"IfcMaterialLayer #{layer}"]
    for element in details["elements"]:
        assert element["changes"], element  # never "no listed value changed"
        (change,) = element["changes"]
        assert change["key"] == f"linked:IfcMaterialLayer #{layer}"
        assert re.fullmatch(r"LayerThickness [0-9.]+", change["old"]) and change["old"] != change["new"]
    report = report_of(result)
    assert "indirectly" not in report and f"linked data changed (IfcMaterialLayer #{layer})" in report


def test_commit_time_is_the_whole_commit_with_the_scripts_own_time_beside_it(executor: IsolatedExecutor):
    result = automate(executor, "import time\ntime.sleep(0.3)\nmodel.by_type('IfcDoor')[0].Tag = 'X1'")
    assert result["committed"], result.get("error")
    message = execute_result("r", result)  # checked against shared_contract/host/execute_result.json
    assert message["script_ms"] >= 300 and message["commit_ms"] > 0
    assert message["duration_ms"] >= message["script_ms"] + message["commit_ms"] - 5
    text = describe_run(message, "automate", report_of(result), Settings(), image_caption=None, notes=[], extra=[])
    first = text.splitlines()[0]
    assert re.fullmatch(r"Transaction: committed \(script \d+ ms, commit [0-9.]+ (ms|s)\)\.", first), first


# --- unforgeable -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("forger", sorted(FORGERS))
def test_a_script_that_blinds_the_recorder_still_gets_its_three_deletions_reported(
        executor: IsolatedExecutor, model_path: Path, forger: str):
    doors_before = doors_in(model_path)
    result = automate(executor, FORGERS[forger] + DELETE_THREE_DOORS + VISIBLE_EDIT)
    assert result["ok"] and result["committed"], result.get("error")
    printed, wall_line = result["stdout"].split("wall")
    deleted, wall = [int(x) for x in printed.split()], int(wall_line)
    assert len(deleted) == 3
    assert doors_in(model_path) == [d for d in doors_before if d not in deleted]
    assert result["changes"]["deleted"] == sorted(deleted)
    assert wall in result["changes"]["modified"]
    (warning,) = [f for f in result["failures"] if "change record" in f["message"]]
    assert "0 added, 0 modified, 0 deleted" in warning["message"] and "3 deleted" in warning["message"]
    report = report_of(result)
    assert re.search(r"0 added, \d+ modified, 3 deleted element\(s\)", report), report
    assert "worked around the host's change recording" in report


def test_a_held_forged_automation_is_reviewed_and_kept_as_it_really_is(isolation: str, tmp_path: Path):
    model_path = tmp_path / "sample.ifc"
    sample.write_sample_model(model_path)
    doors_before = doors_in(model_path)
    with_hold = IsolatedExecutor(model_path, isolation=isolation)
    try:
        held = with_hold.execute(execute_command("held1", "automate", FORGERS["transaction_none"] + DELETE_THREE_DOORS
                                            + VISIBLE_EDIT, 120, epilogue_code=EPILOGUE, hold=True))
        assert held["ok"] and held.get("held"), held.get("error")
        assert len(held["changes"]["deleted"]) == 3 and "3 deleted" in report_of(held)
        preview = tmp_path / "preview.ifc"
        with_hold.snapshot_held(preview)
        assert len(doors_in(preview)) == len(doors_before) - 3
        kept = with_hold.decide("held1", "keep")
        assert kept["committed"], kept.get("error")
        assert hashlib.sha256(model_path.read_bytes()).digest() == hashlib.sha256(preview.read_bytes()).digest()
        assert doors_in(model_path) == [d for d in doors_before if d not in held["changes"]["deleted"]]
    finally:
        with_hold.close()


def test_validation_of_a_forged_run_still_catches_what_the_script_introduced(executor: IsolatedExecutor,
                                                                             model_path: Path):
    before = model_path.read_bytes()
    code = FORGERS["transaction_none"] + (
        "storey = model.by_type('IfcBuildingStorey')[0]\n"
        "rel = model.createIfcRelAggregates(ifcopenshell.guid.new(), None, 'empty', None, storey, [])\n"
        "print(rel.id())")
    result = automate(executor, code, validation="block")
    assert not result["ok"] and not result["committed"]
    assert result["error"]["type"] == "ValidationFailed"
    rel_id = int(result["stdout"])
    assert (rel_id, "RelatedObjects") in {(f["entity_id"], f["attribute"]) for f in result["validation"]["findings"]}
    assert model_path.read_bytes() == before


def test_the_ids_check_of_a_forged_run_runs_on_what_the_script_wrote(executor: IsolatedExecutor):
    # the script blinds the recorder and the IDS comparison in its own process, then adds an unrated door
    code = FORGERS["patched_recorder"] + """
import ifc_host.ids_check as _ids
_ids.introduced = lambda before, after: []
storey = model.by_type('IfcBuildingStorey')[0]
door = ifcopenshell.api.root.create_entity(model, ifc_class='IfcDoor', name='unrated')
ifcopenshell.api.spatial.assign_container(model, relating_structure=storey, products=[door])
print(door.id())
"""
    result = automate(executor, code, ids=FIRE_RATING_IDS)
    assert result["committed"], result.get("error")
    door = int(result["stdout"])
    assert result["changes"]["added"] == [door]
    assert [f["entity_id"] for f in result["validation"]["findings"] if f["kind"] == "ids"] == [door]
    assert result["validation"]["ids"] == {"specifications": 1, "introduced": 1}


def test_a_serialisation_hiding_an_entity_is_not_committed_as_sent(executor: IsolatedExecutor, model_path: Path):
    """The script's process sends the text it likes: here two records on one line, so a line-by-line
    comparison would take #2 for deleted and #1 for a record it is not. The keeper notices and writes its
    own serialisation of what it parsed, and reports only the door really deleted."""
    code = """
import ifcopenshell.api.root
door = model.by_type('IfcDoor')[0]
gone = door.id()
ifcopenshell.api.root.remove_product(model, product=door)
_real = ifcopenshell.file.to_string
def _glued(self):
    text = _real(self)
    lines = text.split('\\n')
    first = next(i for i, line in enumerate(lines) if line.startswith('#1='))
    lines[first] = lines[first] + lines[first + 1]
    del lines[first + 1]
    return '\\n'.join(lines)
ifcopenshell.file.to_string = _glued
print(gone)
"""
    result = automate(executor, code)
    assert result["committed"], result.get("error")
    gone = int(result["stdout"])
    assert result["changes"]["deleted"] == [gone]
    assert any("not written the way IfcOpenShell writes one" in f["message"] for f in result["failures"])
    written = model_path.read_text(encoding="utf-8")
    assert "\n#1=" in written and "\n#2=" in written  # the keeper's own, one record a line
    assert gone not in doors_in(model_path)
