"""Small IFC models built with ifcopenshell.api for the IFC host's tests (fast, exact ids known)."""
from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import ifcopenshell
import ifcopenshell.api.aggregate
import ifcopenshell.api.context
import ifcopenshell.api.feature
import ifcopenshell.api.geometry
import ifcopenshell.api.project
import ifcopenshell.api.pset
import ifcopenshell.api.root
import ifcopenshell.api.spatial
import ifcopenshell.api.type
import ifcopenshell.api.unit
import numpy as np


def small_building(storeys: int = 2, walls_per_storey: int = 4, doors_per_storey: int = 2) -> ifcopenshell.file:
    """Storeys "Level 1".. (3 m apart), each with walls in a row (type "WT-200"), and doors (type "DT-01",
    Tag "D<level><n>") hosted in openings of the first walls."""
    api = ifcopenshell.api
    model = api.project.create_file(version="IFC4")
    project = api.root.create_entity(model, ifc_class="IfcProject", name="Test Building")
    api.unit.assign_unit(model)
    context = api.context.add_context(model, context_type="Model")
    body = api.context.add_context(model, context_type="Model", context_identifier="Body",
                                   target_view="MODEL_VIEW", parent=context)
    site = api.root.create_entity(model, ifc_class="IfcSite", name="Site")
    api.aggregate.assign_object(model, relating_object=project, products=[site])
    building = api.root.create_entity(model, ifc_class="IfcBuilding", name="Building")
    api.aggregate.assign_object(model, relating_object=site, products=[building])
    wall_type = api.root.create_entity(model, ifc_class="IfcWallType", name="WT-200")
    door_type = api.root.create_entity(model, ifc_class="IfcDoorType", name="DT-01")
    for level in range(storeys):
        storey = api.root.create_entity(model, ifc_class="IfcBuildingStorey", name=f"Level {level + 1}")
        storey.Elevation = 3.0 * level
        api.aggregate.assign_object(model, relating_object=building, products=[storey])
        api.geometry.edit_object_placement(model, product=storey, matrix=_at(0, 0, 3.0 * level))
        for n in range(walls_per_storey):
            wall = api.root.create_entity(model, ifc_class="IfcWall", name=f"W{level + 1}{n + 1:02d}")
            api.type.assign_type(model, related_objects=[wall], relating_type=wall_type)
            api.spatial.assign_container(model, relating_structure=storey, products=[wall])
            api.geometry.edit_object_placement(model, product=wall, matrix=_at(0, 4.0 * n, 3.0 * level))
            representation = api.geometry.add_wall_representation(model, context=body, length=5, height=3,
                                                                   thickness=0.2)
            api.geometry.assign_representation(model, product=wall, representation=representation)
            if n < doors_per_storey:
                _add_door(model, body, storey, wall, door_type, level, n)
    return model


def _add_door(model: ifcopenshell.file, body: ifcopenshell.entity_instance, storey: ifcopenshell.entity_instance,
              wall: ifcopenshell.entity_instance, door_type: ifcopenshell.entity_instance, level: int, n: int) -> None:
    api = ifcopenshell.api
    opening = api.root.create_entity(model, ifc_class="IfcOpeningElement", name="Opening")
    api.geometry.edit_object_placement(model, product=opening, matrix=_at(1.0, 4.0 * n - 0.1, 3.0 * level))
    opening_shape = api.geometry.add_wall_representation(model, context=body, length=0.9, height=2.1, thickness=0.4)
    api.geometry.assign_representation(model, product=opening, representation=opening_shape)
    api.feature.add_feature(model, feature=opening, element=wall)
    door = api.root.create_entity(model, ifc_class="IfcDoor", name=f"Door {level + 1}.{n + 1}")
    door.Tag = f"D{level + 1}{n + 1:02d}"
    api.type.assign_type(model, related_objects=[door], relating_type=door_type)
    api.spatial.assign_container(model, relating_structure=storey, products=[door])
    api.geometry.edit_object_placement(model, product=door, matrix=_at(1.0, 4.0 * n, 3.0 * level))
    door_shape = api.geometry.add_door_representation(model, context=body, overall_height=2.1, overall_width=0.9)
    api.geometry.assign_representation(model, product=door, representation=door_shape)
    api.feature.add_filling(model, opening=opening, element=door)


def _at(x: float, y: float, z: float) -> np.ndarray:
    matrix = np.eye(4)
    matrix[:3, 3] = (x, y, z)
    return matrix


def write_small_building(path: str | Path, storeys: int = 2, walls_per_storey: int = 4,
                         doors_per_storey: int = 2) -> Path:
    """Write `small_building(...)` to `path`. It is built once per process for each shape and copied after
    (ifcopenshell.api takes a third of a second or more; the copies share their GlobalIds, as copied files do)."""
    Path(path).write_bytes(_small_building_bytes(storeys, walls_per_storey, doors_per_storey))
    return Path(path)


@functools.lru_cache(maxsize=8)
def _small_building_bytes(storeys: int, walls_per_storey: int, doors_per_storey: int) -> bytes:
    with tempfile.TemporaryDirectory(prefix="nexus-small-building-") as work:
        built = Path(work) / "model.ifc"
        small_building(storeys, walls_per_storey, doors_per_storey).write(str(built))
        return built.read_bytes()
