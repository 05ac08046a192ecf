"""Validation after every automation: only what the script introduced, reported under `warn`, rolled back under
`block`. Real IfcOpenShell models in real keeper and script processes."""
from __future__ import annotations

from pathlib import Path

import pytest

from ifc_host.executor import IsolatedExecutor, execute_command
from tests.ifc_host.test_ids import hosted_door

NO_GUID_WALL = "wall = model.createIfcWall(Name='no id')\nprint(wall.id())"
STOREY = "storey = [s for s in model.by_type('IfcBuildingStorey') if s.Name == 'Level 1'][0]\n"
EMPTY_REL = STOREY + "rel = model.createIfcRelAggregates(ifcopenshell.guid.new(), None, 'empty', None, storey, [])\n" \
                     "print(rel.id())"


_counter = iter(range(1_000_000))


def automate(executor: IsolatedExecutor, code: str, validation: str = "warn") -> dict:
    return executor.execute(execute_command(f"v{next(_counter)}", "automate", code, 30, validation=validation))


def findings(result: dict) -> list[dict]:
    return result["validation"]["findings"]


def test_a_schema_error_is_reported_under_warn_with_entity_attribute_and_rule(executor: IsolatedExecutor):
    result = automate(executor, EMPTY_REL)
    assert result["ok"] and result["committed"], result.get("error")
    rel_id = int(result["stdout"].split()[-1])
    assert result["validation"]["mode"] == "warn" and result["validation"]["introduced"] == 1
    (finding,) = findings(result)
    assert (finding["entity_id"], finding["class"], finding["attribute"], finding["rule"], finding["kind"]) == \
        (rel_id, "IfcRelAggregates", "RelatedObjects", "attribute type", "schema")
    (failure,) = result["failures"]
    assert failure["severity"] == "warning" and failure["element_ids"] == [rel_id]
    assert f"#{rel_id}=IfcRelAggregates.RelatedObjects" in failure["message"]


@pytest.mark.parametrize("code", [NO_GUID_WALL, EMPTY_REL])
def test_block_rolls_back_and_leaves_the_file_byte_identical(executor: IsolatedExecutor, model_path: Path, code: str):
    before = model_path.read_bytes()
    result = automate(executor, code, validation="block")
    assert not result["ok"] and not result["committed"]
    assert result["error"]["type"] == "ValidationFailed"
    assert "not optional" in result["error"]["message"] or "attribute type" in result["error"]["message"]
    assert "unchanged" in result["error"]["message"]
    assert result["failures"][0]["severity"] == "error"
    assert model_path.read_bytes() == before
    count = executor.execute(execute_command("count", "collect", "print(len(model.by_type('IfcWall')))", 30))
    assert count["stdout"].strip() == "8"


def test_a_valid_change_passes_block(executor: IsolatedExecutor, model_path: Path):
    result = automate(executor, "for d in model.by_type('IfcDoor'):\n    d.Tag = 'X' + d.Tag", validation="block")
    assert result["committed"] and result["validation"]["introduced"] == 0 and result["failures"] == []
    assert result["validation"]["checked"] >= 4
    assert b"'XD101'" in model_path.read_bytes()


def test_errors_that_were_there_before_are_not_the_scripts(executor: IsolatedExecutor):
    assert automate(executor, EMPTY_REL)["committed"]
    result = automate(executor, "[r for r in model.by_type('IfcRelAggregates') if r.Name == 'empty'][0]"
                                ".Description = 'still empty'", validation="block")
    assert result["committed"], result.get("error")
    assert result["validation"]["introduced"] == 0 and result["validation"]["checked"] >= 1


def test_aggregate_bounds_and_duplicate_global_ids_are_schema_errors(executor: IsolatedExecutor):
    code = STOREY + """
rel = model.createIfcRelAggregates(ifcopenshell.guid.new(), None, None, None, storey, [])
twin = ifcopenshell.api.root.create_entity(model, ifc_class='IfcColumn', name='twin')
twin.GlobalId = storey.GlobalId
print(rel.id(), twin.id())
"""
    result = automate(executor, code)
    rel_id, twin_id = (int(x) for x in result["stdout"].split())
    found = {(f["entity_id"], f["attribute"], f["rule"]) for f in findings(result)}
    assert (rel_id, "RelatedObjects", "attribute type") in found
    assert (twin_id, "GlobalId", "IfcRoot.UR1 unique GlobalId") in found


def test_a_door_without_an_opening_is_a_model_rule_finding(executor: IsolatedExecutor):
    code = STOREY + """
door = ifcopenshell.api.root.create_entity(model, ifc_class='IfcDoor', name='loose door')
ifcopenshell.api.spatial.assign_container(model, relating_structure=storey, products=[door])
print(door.id())
"""
    result = automate(executor, code)
    door_id = int(result["stdout"].split()[-1])
    (finding,) = findings(result)
    assert (finding["entity_id"], finding["attribute"], finding["kind"]) == (door_id, "FillsVoids", "model rule")
    assert "opening" in finding["message"]
    blocked = automate(executor, code, validation="block")
    assert not blocked["committed"] and blocked["error"]["type"] == "ValidationFailed"


def test_taking_an_existing_door_out_of_its_opening_alone_is_a_model_rule_finding(executor: IsolatedExecutor):
    """Removing only the IfcRelFillsElement leaves the door's own record as it was: the rule still sees it."""
    code = "door = [d for d in model.by_type('IfcDoor') if d.FillsVoids][0]\n" \
           "print(door.id())\nmodel.remove(door.FillsVoids[0])"
    result = automate(executor, code)
    door_id = int(result["stdout"].split()[-1])
    rules = [f for f in findings(result) if f["kind"] == "model rule"]
    assert [(f["entity_id"], f["attribute"]) for f in rules] == [(door_id, "FillsVoids")], findings(result)


def test_a_door_in_an_opening_and_edits_of_existing_doors_pass(executor: IsolatedExecutor):
    code = hosted_door("hosted door") + """for d in model.by_type('IfcDoor'):
    d.Name = (d.Name or '') + '!'
"""
    result = automate(executor, code, validation="block")
    assert result["committed"], result.get("error")
    assert result["validation"]["introduced"] == 0


def test_dropping_the_only_reference_to_an_entity_breaks_its_inverse(executor: IsolatedExecutor):
    """An untouched entity gets a finding when the script removed what its schema requires to point at it."""
    code = "wall = [w for w in model.by_type('IfcWall') if w.Name == 'W101'][0]\n" \
           "print(wall.Representation.id())\nwall.Representation = None"
    result = automate(executor, code)
    shape_id = int(result["stdout"].split()[-1])
    (finding,) = findings(result)
    assert (finding["entity_id"], finding["class"], finding["attribute"], finding["rule"]) == \
        (shape_id, "IfcProductDefinitionShape", "ShapeOfProduct", "inverse cardinality")
    renamed = automate(executor, "for w in model.by_type('IfcWall'):\n    w.Name = 'x' + (w.Name or '')",
                       validation="block")
    assert renamed["committed"] and renamed["validation"]["introduced"] == 0  # the earlier finding is not new
