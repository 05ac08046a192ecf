"""ifc_host/spatial.py: the one rule for the storey an element stands on, how storeys are named, what a storey holds,
on the sample building, on hand-built models that put the rule's order to the test, and on real corpus files."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import ifcopenshell
import ifcopenshell.api.spatial
import ifcopenshell.guid
import pytest

from cloud.evaluation import checks
from ifc_host.changes import describe_element
from ifc_host.sample import write_sample_model
from ifc_host.spatial import (
    FEW_ELEMENTS,
    StoreyIndex,
    elements_of_storey,
    parent_of,
    storey_ids,
    storey_labels,
    storey_of,
)
from tests.corpus.corpus_files import corpus_dirs, manifest

Entity = ifcopenshell.entity_instance


def ifc2x3_model() -> ifcopenshell.file:
    """Storeys sharing a Name, a space contained in a storey (IFC2X3: IfcSpace has no ContainedInStructure),
    a typed wall with an opening and a door filling it, and an assembly whose part is aggregated."""
    model = ifcopenshell.file(schema="IFC2X3")

    def root(ifc_class: str, **attributes: Any) -> Entity:
        return model.create_entity(ifc_class, GlobalId=ifcopenshell.guid.new(), **attributes)

    project, site, building = root("IfcProject", Name="P"), root("IfcSite"), root("IfcBuilding")
    storeys = [root("IfcBuildingStorey", Name=name) for name in ("Floor", "Floor", None)]
    root("IfcRelAggregates", RelatingObject=project, RelatedObjects=[site])
    root("IfcRelAggregates", RelatingObject=site, RelatedObjects=[building])
    root("IfcRelAggregates", RelatingObject=building, RelatedObjects=storeys)
    space = root("IfcSpace", Name="Room")
    root("IfcRelContainedInSpatialStructure", RelatingStructure=storeys[1], RelatedElements=[space])
    wall_type, wall = root("IfcWallType", Name="Basic 200"), root("IfcWall", Name="W1")
    root("IfcRelDefinesByType", RelatingType=wall_type, RelatedObjects=[wall])
    assembly, part = root("IfcElementAssembly"), root("IfcBeam")
    root("IfcRelContainedInSpatialStructure", RelatingStructure=storeys[2], RelatedElements=[wall])
    root("IfcRelContainedInSpatialStructure", RelatingStructure=storeys[0], RelatedElements=[assembly])
    root("IfcRelAggregates", RelatingObject=assembly, RelatedObjects=[part])
    opening, door = root("IfcOpeningElement"), root("IfcDoor", Name="D1")
    root("IfcRelVoidsElement", RelatingBuildingElement=wall, RelatedOpeningElement=opening)
    root("IfcRelFillsElement", RelatingOpeningElement=opening, RelatedBuildingElement=door)
    return model


def assert_one_rule(model: ifcopenshell.file) -> dict[int, int | None]:
    """storey_of element by element, the whole-model index and elements_of_storey all say the same."""
    products = model.by_type("IfcProduct")
    walked = {e.id(): (s.id() if (s := storey_of(e)) is not None else None) for e in products}
    index = StoreyIndex(model)
    assert {i: index.storey_id(i) for i in walked} == walked
    assert storey_ids(model, walked) == walked  # more than FEW_ELEMENTS goes through the index, fewer walk
    held: dict[int, int] = {}
    for storey in model.by_type("IfcBuildingStorey"):
        for element in elements_of_storey(storey):
            assert element.id() not in held, f"#{element.id()} is held by two storeys"
            held[element.id()] = storey.id()
    expected = {i: s for i, s in walked.items() if s is not None
                and not model.by_id(i).is_a("IfcFeatureElement") and not model.by_id(i).is_a("IfcBuildingStorey")}
    assert held == expected
    return walked


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> ifcopenshell.file:
    path = tmp_path_factory.mktemp("spatial") / "office.ifc"
    write_sample_model(path, storeys=3)
    return ifcopenshell.open(str(path))


def _door(model: ifcopenshell.file, tag: str) -> Entity:
    return next(d for d in model.by_type("IfcDoor") if d.Tag == tag)


def test_every_element_of_the_sample_building_is_on_its_storey(sample: ifcopenshell.file):
    walked = assert_one_rule(sample)
    names = {s.id(): s.Name for s in sample.by_type("IfcBuildingStorey")}
    for element in sample.by_type("IfcDoor") + sample.by_type("IfcWindow"):  # tags start with the level: D203
        assert names[walked[element.id()]] == f"Level {element.Tag[1]}", element
    for opening in sample.by_type("IfcOpeningElement"):  # on the storey of the wall it cuts
        wall = opening.VoidsElements[0].RelatingBuildingElement
        assert walked[opening.id()] == walked[wall.id()] is not None
    for space in sample.by_type("IfcSpace"):  # aggregated under its storey
        assert names[walked[space.id()]] == f"Level {space.Name[0]}"
    orphan = next(c for c in sample.by_type("IfcColumn") if c.Tag == "C-ORPHAN")
    assert walked[orphan.id()] is None and parent_of(orphan) is None
    assert all(walked[s.id()] == s.id() for s in sample.by_type("IfcBuildingStorey"))
    assert storey_labels(sample) == {i: name for i, name in names.items()}


def test_a_door_filling_an_opening_in_a_contained_wall_is_on_the_walls_storey(sample: ifcopenshell.file):
    model = ifcopenshell.file.from_string(sample.to_string())
    door = _door(model, "D203")
    ifcopenshell.api.spatial.unassign_container(model, products=[door])
    assert not door.ContainedInStructure and door.FillsVoids
    level_2 = next(s for s in model.by_type("IfcBuildingStorey") if s.Name == "Level 2")
    assert parent_of(door) == door.FillsVoids[0].RelatingOpeningElement
    assert storey_of(door) == level_2 and checks.storey_of(door) == level_2
    assert door in elements_of_storey(level_2)
    assert describe_element(door, storey_labels(model))["storey"] == "Level 2"
    assert_one_rule(model)


def test_the_rule_takes_containment_then_the_host_then_the_whole_then_the_nest():
    model = ifcopenshell.file(schema="IFC4")

    def root(ifc_class: str, **attributes: Any) -> Entity:
        return model.create_entity(ifc_class, GlobalId=ifcopenshell.guid.new(), **attributes)

    low, high, top = (root("IfcBuildingStorey", Name=n) for n in ("Low", "High", "Top"))
    wall = root("IfcWall")
    root("IfcRelContainedInSpatialStructure", RelatingStructure=high, RelatedElements=[wall])
    stated, hosted = root("IfcDoor", Name="stated"), root("IfcDoor", Name="hosted")
    for door in (stated, hosted):
        opening = root("IfcOpeningElement")
        root("IfcRelVoidsElement", RelatingBuildingElement=wall, RelatedOpeningElement=opening)
        root("IfcRelFillsElement", RelatingOpeningElement=opening, RelatedBuildingElement=door)
    root("IfcRelContainedInSpatialStructure", RelatingStructure=low, RelatedElements=[stated])
    assembly = root("IfcElementAssembly")
    root("IfcRelContainedInSpatialStructure", RelatingStructure=top, RelatedElements=[assembly])
    root("IfcRelAggregates", RelatingObject=assembly, RelatedObjects=[hosted])  # the host ranks above the whole
    part, port = root("IfcBeam"), root("IfcDistributionPort")
    root("IfcRelAggregates", RelatingObject=assembly, RelatedObjects=[part])
    root("IfcRelNests", RelatingObject=part, RelatedObjects=[port])
    root("IfcRelNests", RelatingObject=wall, RelatedObjects=[root("IfcBeam", Name="nested only")])
    assert storey_of(stated) == low  # what the author stated first
    assert storey_of(hosted) == high  # the wall whose opening it fills, before the assembly it is part of
    assert storey_of(part) == top and storey_of(port) == top  # the whole, then the nest
    nested = next(b for b in model.by_type("IfcBeam") if b.Name == "nested only")
    assert storey_of(nested) == high
    assert storey_of(root("IfcWall")) is None
    twice = root("IfcColumn")  # contained twice (the schema allows one): the lower relationship id decides
    for storey in (top, low):
        root("IfcRelContainedInSpatialStructure", RelatingStructure=storey, RelatedElements=[twice])
    assert storey_of(twice) == top
    assert_one_rule(model)


def test_shared_and_missing_names_are_step_ids_and_ifc2x3_spaces_are_found_by_reference():
    model = ifc2x3_model()
    first, second, unnamed = sorted(model.by_type("IfcBuildingStorey"), key=lambda s: s.id())
    assert storey_labels(model) == {first.id(): f"#{first.id()}", second.id(): f"#{second.id()}",
                                    unnamed.id(): f"#{unnamed.id()}"}
    walked = assert_one_rule(model)
    by_name = {model.by_id(i).Name: s for i, s in walked.items() if model.by_id(i).Name}
    assert by_name["Room"] == second.id()  # contained, though IFC2X3 gives a space no ContainedInStructure
    assert by_name["W1"] == by_name["D1"] == unnamed.id()  # the door through its opening and the wall
    assert walked[model.by_type("IfcBeam")[0].id()] == first.id()  # part of an assembly
    assert storey_ids(model, [999_999]) == {999_999: None}


def _corpus_model(name: str) -> ifcopenshell.file:
    entry = next(e for e in manifest() if e.file == name)
    if not entry.present():
        pytest.fail(f"{name} is not in {corpus_dirs()} (scripts/corpus.sh; corpus/SOURCES.md)")
    entry.check_digest()
    return ifcopenshell.open(str(entry.location))


def test_archicad_fzk_haus_doors_and_windows_stand_on_their_walls_storeys():
    model = _corpus_model("AC14-FZK-Haus.ifc")  # IFC2X3, ArchiCAD 14: doors and windows in openings
    walked = assert_one_rule(model)
    fillings = [e for e in model.by_type("IfcDoor") + model.by_type("IfcWindow") if e.FillsVoids]
    assert len(fillings) > 10
    for element in fillings:
        wall = element.FillsVoids[0].RelatingOpeningElement.VoidsElements[0].RelatingBuildingElement
        assert walked[element.id()] == walked[wall.id()] is not None, element
    labels = storey_labels(model)
    assert sorted(labels.values()) == sorted((s.Name or "").strip() for s in model.by_type("IfcBuildingStorey"))
    assert len(walked) > FEW_ELEMENTS  # storey_ids went through the whole-model index


def test_a_revit_export_puts_every_building_element_on_a_storey():
    model = _corpus_model("duplex.ifc")  # IFC2X3, Revit: spaces contained, furniture, doors in openings
    walked = assert_one_rule(model)
    elements = [e for e in model.by_type("IfcElement") if not e.is_a("IfcFeatureElement")]
    assert len(elements) > 100
    assert all(walked[e.id()] is not None for e in elements), [e for e in elements if walked[e.id()] is None][:5]
    spaces = model.by_type("IfcSpace")
    assert spaces and all(walked[s.id()] is not None for s in spaces)


def test_storey_labels_keep_the_views_order_for_the_hello(tmp_path: Path):
    from ifc_host.model_file import describe_context, describe_document

    write_sample_model(tmp_path / "m.ifc", storeys=2)
    model = ifcopenshell.open(str(tmp_path / "m.ifc"))
    level_2 = next(s for s in model.by_type("IfcBuildingStorey") if s.Name == "Level 2")
    level_2.Name = "Level 1"  # two storeys named alike: both by step id
    ids = sorted(s.id() for s in model.by_type("IfcBuildingStorey"))
    assert describe_document(model, tmp_path / "m.ifc")["storeys"] == [f"#{i}" for i in ids]
    assert [level["name"] for level in describe_context(model)["levels"]] == [f"#{i}" for i in ids]
