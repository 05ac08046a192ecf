"""The sample building: deterministic, realistic, and carrying the documented defects."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import ifcopenshell
import ifcopenshell.util.element as element_util
import ifcopenshell.util.placement
import pytest

from ifc_host.sample import (
    ORPHAN_COLUMN_TAG,
    UNHOSTED_DOOR_TAG,
    build_sample_model,
    summarize_model,
    write_sample_model,
)

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    path = tmp_path_factory.mktemp("sample") / "office.ifc"
    return path, write_sample_model(path)


@pytest.fixture(scope="module")
def model(written: tuple[Path, dict]) -> ifcopenshell.file:
    return ifcopenshell.open(str(written[0]))


def test_same_arguments_give_a_byte_identical_file_in_another_process(written, tmp_path):
    path, _ = written
    again = tmp_path / "again.ifc"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    subprocess.run([sys.executable, "-c", f"from ifc_host.sample import write_sample_model; "
                    f"write_sample_model({str(again)!r})"], check=True, env=env, timeout=120)
    assert again.read_bytes() == path.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again.ifc"]  # no temp file left behind


def test_building_twice_in_one_process_gives_the_same_text():
    # IfcOpenShell hashes instances by a process-wide counter, so any set-ordered step would show here.
    assert build_sample_model(storeys=2, seed=3).to_string() == build_sample_model(storeys=2, seed=3).to_string()


def test_seed_changes_ids_and_room_functions_but_not_the_building():
    first, second = build_sample_model(storeys=2, seed=0), build_sample_model(storeys=2, seed=1)
    assert {e.GlobalId for e in first.by_type("IfcRoot")}.isdisjoint(e.GlobalId for e in second.by_type("IfcRoot"))
    assert summarize_model(first)["entities"] == summarize_model(second)["entities"]
    assert [s.LongName for s in first.by_type("IfcSpace")] != [s.LongName for s in second.by_type("IfcSpace")]
    assert len({e.GlobalId for e in first.by_type("IfcRoot")}) == len(first.by_type("IfcRoot"))


def test_storeys_are_named_levels_at_rising_elevations(model):
    storeys = sorted(model.by_type("IfcBuildingStorey"), key=lambda s: s.Elevation)
    assert [(s.Name, s.Elevation) for s in storeys] == [("Level 1", 0.0), ("Level 2", 3.5), ("Level 3", 7.0)]
    assert model.schema == "IFC4"


def test_every_storey_has_walls_doors_windows_spaces_and_a_slab(model):
    for storey in model.by_type("IfcBuildingStorey"):
        contained = [e for rel in storey.ContainsElements for e in rel.RelatedElements]
        classes = {e.is_a() for e in contained}
        assert {"IfcWall", "IfcDoor", "IfcWindow", "IfcSlab", "IfcColumn"} <= classes
        spaces = [s for rel in storey.IsDecomposedBy for s in rel.RelatedObjects if s.is_a("IfcSpace")]
        assert len(spaces) == 9  # eight rooms and a corridor


def test_hosted_doors_and_windows_fill_openings_that_void_walls(model):
    fillings = [e for e in model.by_type("IfcDoor") + model.by_type("IfcWindow") if e.FillsVoids]
    assert len(fillings) == len(model.by_type("IfcOpeningElement")) == 54
    for element in fillings:
        opening = element.FillsVoids[0].RelatingOpeningElement
        assert opening.VoidsElements[0].RelatingBuildingElement.is_a("IfcWall")
        assert element.Representation is not None and opening.Representation is not None


def test_spaces_carry_a_number_a_function_and_an_area(model):
    spaces = {s.Name: s for s in model.by_type("IfcSpace")}
    assert {"101", "108", "201", "308", "1C1", "3C1"} <= set(spaces)
    assert spaces["101"].LongName == "Reception" and spaces["1C1"].LongName == "Corridor"
    assert all(s.LongName for s in spaces.values())
    assert element_util.get_aggregate(spaces["205"]).Name == "Level 2"
    area = element_util.get_psets(spaces["101"])["Qto_SpaceBaseQuantities"]["NetFloorArea"]
    assert area == pytest.approx(3.8 * 5.75)


def test_walls_are_centre_line_walls_with_layered_materials_from_their_types(model):
    wall = next(w for w in model.by_type("IfcWall") if element_util.get_type(w).Name.startswith("EXT-300"))
    usage = element_util.get_material(wall)
    assert usage.is_a("IfcMaterialLayerSetUsage")
    assert [layer.Material.Name for layer in usage.ForLayerSet.MaterialLayers] == ["Brick", "Mineral wool",
                                                                                    "Concrete block"]
    assert usage.OffsetFromReferenceLine == pytest.approx(-0.15)  # the axis runs down the middle
    body = wall.Representation.Representations[0].Items[0]
    assert body.Position.Location.Coordinates[1] == pytest.approx(-0.15)
    for ifc_class in ("IfcWall", "IfcDoor", "IfcWindow", "IfcSlab", "IfcColumn"):
        assert all(element_util.get_type(e) is not None for e in model.by_type(ifc_class)), ifc_class
    assert {"Brick", "Concrete", "Timber", "Glass", "Plasterboard"} <= {m.Name for m in model.by_type("IfcMaterial")}
    assert element_util.get_psets(model.by_type("IfcDoor")[0])["Pset_DoorCommon"]["FireRating"] == "EI30"


def test_door_marks_are_tags_with_exactly_one_duplicated_mark(model):
    tags = [d.Tag for d in model.by_type("IfcDoor")]
    assert all(tags)
    duplicates = {t for t in tags if tags.count(t) > 1}
    assert duplicates == {"D203"}
    assert "D202" not in tags and {"D101", "D308", "D1-ENT1"} <= set(tags)


def test_one_door_stands_in_a_wall_without_an_opening(model):
    unhosted = [d for d in model.by_type("IfcDoor") if not d.FillsVoids]
    assert [d.Tag for d in unhosted] == [UNHOSTED_DOOR_TAG]
    door = unhosted[0]
    assert element_util.get_container(door).Name == "Level 1"
    origin = ifcopenshell.util.placement.get_local_placement(door.ObjectPlacement)[:3, 3]
    assert origin[0] == pytest.approx(4.1)  # in the partition between rooms 101 and 102 (x = 4 m)


def test_exactly_one_element_is_in_no_storey_the_orphan_column(model):
    orphans = [e for e in model.by_type("IfcElement")
               if not e.is_a("IfcOpeningElement") and element_util.get_container(e) is None]
    assert [(e.is_a(), e.Tag) for e in orphans] == [("IfcColumn", ORPHAN_COLUMN_TAG)]


def test_summary_counts_the_contents_and_names_the_defects(written, model):
    path, summary = written
    assert summary["path"] == str(path) and summary["bytes"] == path.stat().st_size
    assert summary["storeys"] == 3 and summary["doors"] == 26 and summary["windows"] == 29
    assert summary["spaces"] == 27 and summary["slabs"] == 3 and summary["types"] == 10
    assert summary["entities"] > 4000
    defects = summary["defects"]
    assert model.by_id(defects["door_without_opening"][0]).Tag == UNHOSTED_DOOR_TAG
    assert model.by_id(defects["element_without_storey"][0]).Tag == ORPHAN_COLUMN_TAG
    assert [model.by_id(i).Tag for i in defects["duplicate_door_marks"]["D203"]] == ["D203", "D203"]


def test_a_single_storey_building_keeps_all_three_defects_on_level_1():
    defects = summarize_model(build_sample_model(storeys=1))["defects"]
    assert len(defects["door_without_opening"]) == 1 and len(defects["element_without_storey"]) == 1
    assert list(defects["duplicate_door_marks"]) == ["D103"]


def test_scale_grows_the_plan_and_ten_storeys_at_scale_5_pass_50k_entities():
    small = summarize_model(build_sample_model(storeys=1, scale=1))
    wide = summarize_model(build_sample_model(storeys=1, scale=4))
    assert wide["doors"] > 3 * small["doors"] and wide["spaces"] > 3 * small["spaces"]
    big = summarize_model(build_sample_model(storeys=10, scale=5))
    assert big["entities"] > 50_000 and big["storeys"] == 10


def test_nonsense_sizes_are_refused():
    with pytest.raises(ValueError):
        build_sample_model(storeys=0)
    with pytest.raises(ValueError):
        build_sample_model(scale=0)


def test_writing_the_same_small_building_again_gives_the_same_bytes_and_a_summary_of_its_own(tmp_path: Path):
    first = write_sample_model(tmp_path / "a.ifc", storeys=2, seed=7)
    second = write_sample_model(tmp_path / "b.ifc", storeys=2, seed=7)
    assert (tmp_path / "a.ifc").read_bytes() == (tmp_path / "b.ifc").read_bytes()
    assert second["path"] == str(tmp_path / "b.ifc") and first["path"] == str(tmp_path / "a.ifc")
    first["doors"] = -1  # a caller changing its summary changes nobody else's
    assert write_sample_model(tmp_path / "c.ifc", storeys=2, seed=7)["doors"] == second["doors"] != -1
    other = write_sample_model(tmp_path / "d.ifc", storeys=2, seed=8)
    assert (tmp_path / "d.ifc").read_bytes() != (tmp_path / "a.ifc").read_bytes() and other["path"].endswith("d.ifc")
