"""Before → after in the change report: old and new values of what a script changed, grouped by what changed.

Real IfcOpenShell models, real keeper and script processes; each automation is held and then discarded, so
the module shares one keeper and one model.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ifc_host import sample
from ifc_host.executor import IsolatedExecutor, execute_command
from tests.conformance.ifc_models import write_small_building

REPORT = "import json\nprint(json.dumps(nexus_change_details()))\n"
MOVE = """
scale = ifcopenshell.util.unit.calculate_unit_scale(model)
def move(name, dx):
    wall = [w for w in model.by_type('IfcWall') if w.Name == name][0]
    matrix = ifcopenshell.util.placement.get_local_placement(wall.ObjectPlacement)
    matrix[0, 3] += dx / scale
    ifcopenshell.api.geometry.edit_object_placement(model, product=wall, matrix=matrix, is_si=False)
"""


@pytest.fixture(scope="module")
def executor(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IsolatedExecutor]:
    path = write_small_building(tmp_path_factory.mktemp("details") / "model.ifc")
    runner = IsolatedExecutor(path)
    yield runner
    runner.close()


_counter = iter(range(1_000_000))


def held(executor: IsolatedExecutor, code: str) -> tuple[dict, dict]:
    """Run an automation, return its result and what the epilogue was given, then discard it."""
    request_id = f"d{next(_counter)}"
    result = executor.execute(execute_command(request_id, "automate", code, 30, epilogue_code=REPORT, hold=True))
    assert result["ok"] and result.get("held"), result.get("error")
    assert executor.decide(request_id, "discard")["committed"] is False
    return result, json.loads(result["epilogue_stdout"])


def by_id(details: dict, status: str) -> dict[int, dict]:
    return {e["id"]: e for e in details["elements"] if e["status"] == status}


def changes_of(element: dict) -> dict[str, tuple[str | None, str | None]]:
    return {c["key"]: (c["old"], c["new"]) for c in element["changes"]}


def test_renumbering_shows_each_old_and_new_mark(executor: IsolatedExecutor):
    code = "for door in model.by_type('IfcDoor'):\n    door.Tag = 'N' + door.Tag[1:]"
    result, details = held(executor, code)
    assert result["change_details"] == details
    assert details["groups"] == [{"kinds": ["attributes"], "count": 4, "classes": {"IfcDoor": 4},
                                  "ids": result["changes"]["modified"]}]
    marks = {changes_of(e)["attribute:Tag"] for e in by_id(details, "modified").values()}
    assert marks == {("D101", "N101"), ("D102", "N102"), ("D201", "N201"), ("D202", "N202")}
    assert all(len(e["changes"]) == 1 for e in details["elements"])


def test_pset_edit_shows_old_and_new_property_values(executor: IsolatedExecutor):
    prepare = """
wall = [w for w in model.by_type('IfcWall') if w.Name == 'W102'][0]
pset = ifcopenshell.api.pset.add_pset(model, product=wall, name='Pset_WallCommon')
ifcopenshell.api.pset.edit_pset(model, pset=pset, properties={'FireRating': 'EI30', 'IsExternal': False})
"""
    request_id = f"d{next(_counter)}"
    committed = executor.execute(execute_command(request_id, "automate", prepare, 30))
    assert committed["committed"], committed.get("error")
    edit = """
wall = [w for w in model.by_type('IfcWall') if w.Name == 'W102'][0]
pset = ifcopenshell.util.element.get_pset(wall, 'Pset_WallCommon')
ifcopenshell.api.pset.edit_pset(model, pset=model.by_id(pset['id']), properties={'FireRating': 'EI60', 'LoadBearing': True})
"""
    result, details = held(executor, edit)
    (wall,) = by_id(details, "modified").values()
    assert wall["name"] == "W102" and wall["kinds"] == ["properties"]
    assert changes_of(wall) == {"property:Pset_WallCommon.FireRating": ("EI30", "EI60"),
                                "property:Pset_WallCommon.LoadBearing": (None, "True")}
    assert details["groups"][0]["kinds"] == ["properties"] and details["groups"][0]["count"] == 1


def test_two_walls_moved_and_the_geometry_that_followed_are_told_apart(executor: IsolatedExecutor):
    result, details = held(executor, MOVE + "move('W101', 1.5)\nmove('W201', 1.5)\n")
    groups = {tuple(g["kinds"]): g for g in details["groups"]}
    assert groups[("placement",)]["count"] == 2 and groups[("placement",)]["classes"] == {"IfcWall": 2}
    # The door openings are placed relative to their walls: their geometry followed; they were not moved.
    assert groups[("followed",)]["classes"] == {"IfcOpeningElement": 2}
    assert sum(g["count"] for g in details["groups"]) == len(result["changes"]["modified"])
    walls = {e["name"]: changes_of(e)["placement"] for e in by_id(details, "modified").values()
             if e["class"] == "IfcWall"}
    assert walls == {"W101": ("x 0.000, y 0.000, z 0.000 m, rotation 0.0°", "x 1.500, y 0.000, z 0.000 m, rotation 0.0°"),
                     "W201": ("x 0.000, y 0.000, z 3.000 m, rotation 0.0°", "x 1.500, y 0.000, z 3.000 m, rotation 0.0°")}
    followed = [e for e in details["elements"] if e["kinds"] == ["followed"]]
    assert {changes_of(e)["placement"][1][:9] for e in followed} == {"x 2.500, "}


def test_type_change_shows_old_and_new_type(executor: IsolatedExecutor):
    code = """
new_type = ifcopenshell.api.root.create_entity(model, ifc_class='IfcWallType', name='WT-300')
wall = [w for w in model.by_type('IfcWall') if w.Name == 'W103'][0]
ifcopenshell.api.type.assign_type(model, related_objects=[wall], relating_type=new_type)
"""
    result, details = held(executor, code)
    (wall,) = by_id(details, "modified").values()
    old, new = changes_of(wall)["type"]
    assert wall["kinds"] == ["type"] and old.startswith("WT-200 (#") and new.startswith("WT-300 (#")
    (added,) = by_id(details, "added").values()
    assert added["class"] == "IfcWallType" and changes_of(added)["attribute:Name"] == (None, "WT-300")


def test_deleted_elements_keep_their_last_values(executor: IsolatedExecutor):
    code = "door = [d for d in model.by_type('IfcDoor') if d.Tag == 'D202'][0]\n" \
           "ifcopenshell.api.root.remove_product(model, product=door)"
    result, details = held(executor, code)
    (door,) = by_id(details, "deleted").values()
    values = changes_of(door)
    assert door["class"] == "IfcDoor" and door["name"] == "Door 2.2"
    assert values["attribute:Tag"] == ("D202", None)
    assert values["type"][0].startswith("DT-01 (#") and values["container"][0].startswith("Level 2 (#")
    assert values["placement"] == ("x 1.000, y 4.000, z 3.000 m, rotation 0.0°", None)
    assert values["openings"][0].startswith("1 (fills #") and values["openings"][1] is None
    # The opening it filled lost its filling: that is its change.
    (opening,) = by_id(details, "modified").values()
    assert opening["kinds"] == ["openings"] and changes_of(opening)["openings"][1] is None


def test_big_changes_are_counted_in_full_and_sampled_per_group(tmp_path: Path):
    path = write_small_building(tmp_path / "big.ifc", storeys=3, walls_per_storey=30, doors_per_storey=20)
    runner = IsolatedExecutor(path)
    try:
        code = MOVE + "for w in model.by_type('IfcWall'):\n    move(w.Name, 0.25)\n" \
                      "for d in model.by_type('IfcDoor'):\n    d.Tag = 'X' + d.Tag\n"
        result = runner.execute(execute_command("big", "automate", code, 60))
        assert result["committed"], result.get("error")
        details = result["change_details"]
        counts = {tuple(g["kinds"]): g["count"] for g in details["groups"]}
        assert counts == {("placement",): 90, ("followed",): 60, ("attributes",): 60}
        shown = [e for e in details["elements"] if e["status"] == "modified"]
        assert {tuple(e["kinds"]) for e in shown} == set(counts)
        assert len(shown) == 40  # the first elements of each group, in turn, up to the cap
        assert len(details["elements"]) == 40 and details["counts"]["modified"] == 210
    finally:
        runner.close()


def test_hosted_elements_kept_in_place_when_their_wall_moves_are_not_called_moved(tmp_path: Path):
    """IfcOpenShell's edit_object_placement re-bases windows placed relative to a moved wall so they stay
    where they were: their own placement changed, their position did not; the openings moved with the wall."""
    path = tmp_path / "sample.ifc"
    sample.write_sample_model(path, storeys=1)
    runner = IsolatedExecutor(path)
    try:
        code = ("import ifcopenshell.util.unit\n" + MOVE.replace("w.Name == name", "w.id() == name")
                + "for wall in sorted(model.by_type('IfcWall'), key=lambda w: w.id())[:2]:\n"
                  "    move(wall.id(), 0.5)\n")
        result = runner.execute(execute_command("hosted", "automate", code, 60, epilogue_code=REPORT, hold=True))
        assert result["ok"], result.get("error")
        runner.decide("hosted", "discard")
        details = result["change_details"]
        groups = {tuple(g["kinds"]): g["classes"] for g in details["groups"]}
        assert groups[("placement",)] == {"IfcWall": 2}
        assert set(groups[("rebased",)]) == {"IfcWindow"} and set(groups[("followed",)]) == {"IfcOpeningElement"}
        for element in details["elements"]:
            moved = "placement" in changes_of(element)
            assert moved == (element["kinds"] != ["rebased"]), element
    finally:
        runner.close()
