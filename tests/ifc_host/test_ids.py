"""IDS checks after an automation: the IDS requirements a script made fail are reported like schema findings
under `warn` and roll the run back under `block`; failures that were there before are not the script's.
Real IfcOpenShell models, real keeper and script processes, a real ifctester."""
from __future__ import annotations

from pathlib import Path

import pytest

from ifc_host.executor import IsolatedExecutor, execute_command
from ifc_host.ids_reader import MAX_IDS_BYTES, IdsProblem, parse_ids

FIRE_RATING_IDS = """<?xml version="1.0" encoding="UTF-8"?>
<ids xmlns="http://standards.buildingsmart.org/IDS" xmlns:xs="http://www.w3.org/2001/XMLSchema"
     xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
     xsi:schemaLocation="http://standards.buildingsmart.org/IDS http://standards.buildingsmart.org/IDS/1.0/ids.xsd">
  <info><title>Doors are fire rated</title></info>
  <specifications>
    <specification name="Door fire rating" ifcVersion="IFC2X3 IFC4 IFC4X3_ADD2">
      <applicability minOccurs="0" maxOccurs="unbounded">
        <entity><name><simpleValue>IFCDOOR</simpleValue></name></entity>
      </applicability>
      <requirements>
        <property dataType="IFCLABEL" cardinality="required">
          <propertySet><simpleValue>Pset_DoorCommon</simpleValue></propertySet>
          <baseName><simpleValue>FireRating</simpleValue></baseName>
        </property>
      </requirements>
    </specification>
  </specifications>
</ids>
"""

STOREY = "storey = [s for s in model.by_type('IfcBuildingStorey') if s.Name == 'Level 1'][0]\n"


def hosted_door(name: str) -> str:
    """A script that adds a door named `name` on Level 1, in a new opening of wall W104 (as a valid door is)."""
    return STOREY + f"""
wall = [w for w in model.by_type('IfcWall') if w.Name == 'W104'][0]
opening = ifcopenshell.api.root.create_entity(model, ifc_class='IfcOpeningElement')
ifcopenshell.api.feature.add_feature(model, feature=opening, element=wall)
door = ifcopenshell.api.root.create_entity(model, ifc_class='IfcDoor', name={name!r})
ifcopenshell.api.spatial.assign_container(model, relating_structure=storey, products=[door])
ifcopenshell.api.feature.add_filling(model, opening=opening, element=door)
"""


HOSTED_DOOR = hosted_door("new door") + "print(door.id())\n"
RATE = """
pset = ifcopenshell.api.pset.add_pset(model, product={door}, name='Pset_DoorCommon')
ifcopenshell.api.pset.edit_pset(model, pset=pset, properties={{'FireRating': 'EI30'}})
"""
RATE_ALL_DOORS = "for d in model.by_type('IfcDoor'):\n" + \
    "\n".join("    " + line for line in RATE.format(door="d").strip().splitlines())


_counter = iter(range(1_000_000))


def automate(executor: IsolatedExecutor, code: str, validation: str = "warn", ids: str | None = FIRE_RATING_IDS
             ) -> dict:
    return executor.execute(execute_command(f"ids{next(_counter)}", "automate", code, 60, validation=validation, ids=ids))


def ids_findings(result: dict) -> list[dict]:
    return [f for f in result["validation"]["findings"] if f["kind"] == "ids"]


def test_a_new_door_without_the_fire_rating_is_reported_under_warn(executor: IsolatedExecutor):
    result = automate(executor, HOSTED_DOOR)
    assert result["ok"] and result["committed"], result.get("error")
    door_id = int(result["stdout"].split()[-1])
    # the existing doors fail the same requirement, but they did before the run: only the new door is reported
    (finding,) = ids_findings(result)
    assert (finding["entity_id"], finding["class"]) == (door_id, "IfcDoor")
    assert finding["rule"] == "IDS 'Door fire rating'"
    assert "Pset_DoorCommon" in finding["message"] and "FireRating" in finding["message"]
    assert result["validation"]["ids"] == {"specifications": 1, "introduced": 1}
    (failure,) = [f for f in result["failures"] if "IDS" in f["message"]]
    assert failure["severity"] == "warning" and failure["element_ids"] == [door_id]
    assert f"#{door_id}=IfcDoor" in failure["message"]


def test_block_rolls_the_new_door_back_and_leaves_the_file_byte_identical(executor: IsolatedExecutor,
                                                                           model_path: Path):
    before = model_path.read_bytes()
    doors_before = executor.execute(execute_command("n0", "collect", "print(len(model.by_type('IfcDoor')))", 30))
    result = automate(executor, HOSTED_DOOR, validation="block")
    assert not result["ok"] and not result["committed"]
    assert result["error"]["type"] == "ValidationFailed" and "IDS" in result["error"]["message"]
    assert [f["kind"] for f in result["validation"]["findings"]] == ["ids"]
    assert model_path.read_bytes() == before
    doors_after = executor.execute(execute_command("n1", "collect", "print(len(model.by_type('IfcDoor')))", 30))
    assert doors_after["stdout"] == doors_before["stdout"]


def test_a_door_that_failed_before_is_not_reported_and_a_rated_new_door_passes(executor: IsolatedExecutor):
    edit = automate(executor, "for d in model.by_type('IfcDoor'):\n    d.Name = (d.Name or '') + '!'",
                    validation="block")
    assert edit["committed"], edit.get("error")
    assert edit["validation"]["ids"]["introduced"] == 0 and ids_findings(edit) == []
    rated = automate(executor, HOSTED_DOOR + RATE.format(door="door"), validation="block")
    assert rated["committed"], rated.get("error")
    assert rated["validation"]["introduced"] == 0


def test_removing_the_rating_from_a_door_that_had_it_is_introduced(executor: IsolatedExecutor):
    assert automate(executor, RATE_ALL_DOORS, validation="block")["committed"]
    code = ("door = model.by_type('IfcDoor')[0]\n"
            "pset = ifcopenshell.util.element.get_psets(door)['Pset_DoorCommon']\n"
            "ifcopenshell.api.pset.remove_pset(model, product=door, pset=model.by_id(pset['id']))\n"
            "print(door.id())")
    result = automate(executor, code, validation="block")
    assert not result["committed"] and result["error"]["type"] == "ValidationFailed"
    (finding,) = ids_findings(result)
    assert finding["entity_id"] == int(result["stdout"].split()[-1])


def test_without_an_ids_nothing_is_checked(executor: IsolatedExecutor):
    result = automate(executor, HOSTED_DOOR, validation="block", ids=None)
    assert result["committed"], result.get("error")
    assert "ids" not in result["validation"]


def test_an_unreadable_ids_at_the_host_is_a_warning_not_a_lost_run(executor: IsolatedExecutor):
    result = automate(executor, HOSTED_DOOR, validation="block", ids="<ids>not the IDS namespace</ids>")
    assert result["committed"], result.get("error")
    (warning,) = [f for f in result["failures"] if f["message"].startswith("IDS:")]
    assert warning["severity"] == "warning" and "not an IDS document" in warning["message"]


def test_parse_ids_names_the_problem():
    assert parse_ids(FIRE_RATING_IDS).specifications[0].name == "Door fire rating"
    with pytest.raises(IdsProblem, match="^not XML: "):
        parse_ids("this is { not xml")
    with pytest.raises(IdsProblem, match=r"^not an IDS document: the root element is <svg>"):
        parse_ids("<svg/>")
    with pytest.raises(IdsProblem, match="^not a valid IDS document: "):
        parse_ids(FIRE_RATING_IDS.replace("<specifications>", "<specifications><bogus/>"))
    with pytest.raises(IdsProblem, match="at most"):
        parse_ids(b"<" + b"x" * MAX_IDS_BYTES + b"/>")
    with pytest.raises(IdsProblem, match="^not XML: the IDS is not UTF-8"):
        parse_ids(b"<ids>\xff</ids>")


def _one_spec_ids(applicability: str, occurs: str) -> str:
    return FIRE_RATING_IDS.replace('<applicability minOccurs="0" maxOccurs="unbounded">',
                                   f"<applicability {occurs}>").replace(
        "<entity><name><simpleValue>IFCDOOR</simpleValue></name></entity>", applicability)


def test_a_prohibited_element_the_run_made_and_a_required_one_it_removed_are_introduced(model_path: Path):
    import ifcopenshell
    import ifcopenshell.api.root

    from ifc_host.ids_check import check_model, introduced

    furniture = "<entity><name><simpleValue>IFCFURNITURE</simpleValue></name></entity>"
    prohibited = parse_ids(_one_spec_ids(furniture, 'minOccurs="0" maxOccurs="0"'))
    required_doors = parse_ids(_one_spec_ids(
        "<entity><name><simpleValue>IFCDOOR</simpleValue></name></entity>", 'minOccurs="1" maxOccurs="unbounded"'))
    model = ifcopenshell.open(str(model_path))
    before_prohibited, before_required = check_model(model, prohibited), check_model(model, required_doors)
    table = ifcopenshell.api.root.create_entity(model, ifc_class="IfcFurniture", name="table")
    for door in model.by_type("IfcDoor"):
        model.remove(door)
    (found,) = introduced(before_prohibited, check_model(model, prohibited))
    assert (found.entity_id, found.entity_class, found.kind) == (table.id(), "IfcFurniture", "ids")
    assert "prohibits" in found.message
    (gone,) = introduced(before_required, check_model(model, required_doors))
    assert gone.entity_id == 0 and "no longer applies to any element" in gone.message
    assert introduced(check_model(model, required_doors), check_model(model, required_doors)) == []


def test_the_no_fork_isolation_checks_the_ids_too(model_path: Path):
    runner = IsolatedExecutor(model_path, isolation="spawn")
    try:
        before = model_path.read_bytes()
        blocked = automate(runner, HOSTED_DOOR, validation="block")
        assert not blocked["committed"] and [f["kind"] for f in blocked["validation"]["findings"]] == ["ids"]
        assert model_path.read_bytes() == before
        rated = automate(runner, HOSTED_DOOR + RATE.format(door="door"), validation="block")
        assert rated["committed"], rated.get("error")
    finally:
        runner.close()
