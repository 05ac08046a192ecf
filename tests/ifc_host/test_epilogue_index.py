"""The change report's two ways of finding an element's type and storey agree: reading each element's own
relationships (few changes, big model) and indexing every relationship once (many changes)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import ifcopenshell
import ifcopenshell.guid
import pytest

from ifc_host.sample import write_sample_model

EPILOGUE = Path(__file__).resolve().parents[2] / "cloud" / "hosts" / "epilogues" / "ifc_epilogue.py"


def _indexes(model: ifcopenshell.file) -> tuple[Any, Any]:
    code = EPILOGUE.read_text(encoding="utf-8")
    assert code.rstrip().endswith("_nx_report()")
    scope: dict[str, Any] = {"model": model, "ifcopenshell": ifcopenshell}
    exec(compile(code.rstrip().removesuffix("_nx_report()"), "<epilogue>", "exec"), scope)  # noqa: S102
    return scope["_NxLazyIndex"](), scope["_NxIndex"]()


def _ifc2x3_model() -> ifcopenshell.file:
    """Storeys sharing a Name, a space contained in a storey (IFC2X3: IfcSpace has no ContainedInStructure),
    a typed wall with an opening and a door filling it, and an assembly whose part is aggregated."""
    model = ifcopenshell.file(schema="IFC2X3")

    def root(ifc_class: str, **attributes: Any) -> ifcopenshell.entity_instance:
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


@pytest.mark.parametrize("source", ["sample", "ifc2x3"])
def test_per_element_lookups_agree_with_the_whole_model_index(source: str, tmp_path: Path):
    if source == "sample":
        write_sample_model(tmp_path / "sample.ifc", storeys=2)
        model = ifcopenshell.open(str(tmp_path / "sample.ifc"))
    else:
        model = _ifc2x3_model()
    lazy, index = _indexes(model)
    elements = [e.id() for e in model.by_type("IfcProduct") + model.by_type("IfcTypeProduct")]
    assert len(elements) > 10
    described = {i: (index.type_of_element(i), index.storey(i)) for i in elements}
    assert {i: (lazy.type_of_element(i), lazy.storey(i)) for i in elements} == described
    assert sum(storey is not None for _, storey in described.values()) >= len(elements) // 2
    if source == "ifc2x3":
        first, second, unnamed = sorted(model.by_type("IfcBuildingStorey"), key=lambda s: s.id())
        by_name = {model.by_id(i).Name: v for i, v in described.items() if model.by_id(i).Name}
        assert by_name["Room"] == (None, f"#{second.id()}")  # a shared Name is named as the views name it
        assert by_name["W1"] == ("Basic 200", f"#{unnamed.id()}")
        assert by_name["D1"][1] == f"#{unnamed.id()}"  # through the opening it fills and the wall it voids
        assert described[model.by_type("IfcBeam")[0].id()][1] == f"#{first.id()}"  # part of an assembly
