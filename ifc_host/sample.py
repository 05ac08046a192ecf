"""A realistic, deterministic sample office building (IFC4), for demos, tests and benchmarks.

Layout (units: metres; x east, y north; origin at the south-west wall corner)
    Each storey ("Level 1", "Level 2", ... at 0.0, 3.5, 7.0 m) is one or more *wings* stacked north to
    south. A wing is a double-loaded corridor: a row of rooms (4 m bays, 6 m deep), a 2 m corridor, a
    second row of rooms. Wings share a concrete party wall. ``scale`` K gives ceil(sqrt(K)) wings of
    4 * ceil(K / wings) bays each, so the plan grows in both directions.
    Walls are centre-line walls (``geometry.add_wall_representation``, axis along local x, body centred
    on the axis), split into segments of at most four bays. Every room has a door in the corridor wall;
    rooms on the outside of the building have a window in the exterior wall; corridor ends have windows,
    and on Level 1 an entrance door at the west end. Doors and windows each fill their own
    ``IfcOpeningElement`` voiding the host wall (``feature.add_feature`` + ``feature.add_filling``).
    Concrete columns stand at every bay line of every wall line; each storey has one floor slab.

Names and marks
    Spaces: ``Name`` is the room number ("101", "102", ... or "1001" once a storey has 100+ rooms; the
    first digits are the level), ``LongName`` the function ("Office", "Meeting Room", ...). Corridors
    are named "1C1", "1C2", ... (level, "C", wing) with LongName "Corridor". Spaces are aggregated
    under their storey (IfcRelAggregates), every other element is contained in it.
    Door mark convention: the mark is the door's ``Tag`` attribute (as Revit's IFC exporter writes it):
    "D" + room number ("D101"); entrance doors "D1-ENT1" (level, wing). Windows: ``Tag`` "W" + room
    number, corridor-end windows "W2-C1W" / "W2-C1E" (level, wing, west/east end).
    ``Pset_DoorCommon`` / ``Pset_WindowCommon`` / ``Pset_WallCommon`` etc. live on the *types*
    (``Reference`` is the type code such as "DT-01", plus FireRating, IsExternal); occurrences inherit
    them. Spaces carry ``Qto_SpaceBaseQuantities.NetFloorArea``.

Deliberate defects (fixed positions, independent of ``seed``; ``summarize_model`` returns their ids)
    1. Door without a host opening: on Level 1, ``Tag`` "D101A", a second door to room 101 standing in
       the stud partition between rooms 101 and 102. It fills no opening and voids nothing.
    2. Element not contained in any storey: an ``IfcColumn`` (Tag "C-ORPHAN") in the middle of the
       first room of Level 2 (Level 1 when there is a single storey); no spatial containment at all.
    3. Duplicate door marks: on Level 2 (Level 1 for a single storey) the doors of rooms 202 and 203
       both carry ``Tag`` "D203" ("D2003" when rooms are numbered with three digits).

Determinism
    Same arguments give a byte-identical file: GlobalIds come from a RNG seeded with ``seed`` and the
    header timestamp is fixed. ``seed`` also shuffles room functions; geometry and defects don't move.

Size (entities; build time on a quiet 2-core machine)
    storeys=3, scale=1 (the default): ~4,200, 0.3 s; 52 elements and 9 spaces per storey.
    storeys=10, scale=5: ~56,000 (the smallest setting past 50,000); storeys=10, scale=8: ~82,000, ~3 s.
    storeys=2, scale=25: 860 elements and 205 spaces per storey (the plan-rendering benchmark).
    ``scale`` is coarse: wings and bays are whole numbers, so neighbouring scales can give the same plan.
"""
from __future__ import annotations

import copy
import functools
import json
import math
import os
import random
import tempfile
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ifcopenshell
import ifcopenshell.api.aggregate
import ifcopenshell.api.context
import ifcopenshell.api.feature
import ifcopenshell.api.geometry
import ifcopenshell.api.material
import ifcopenshell.api.project
import ifcopenshell.api.pset
import ifcopenshell.api.root
import ifcopenshell.api.type
import ifcopenshell.api.unit
import ifcopenshell.guid
import ifcopenshell.ifcopenshell_wrapper
import ifcopenshell.util.element

CATALOG_PATH = Path(__file__).with_name("sample_data") / "catalog.json"
HEADER_TIMESTAMP = "2025-01-01T00:00:00+00:00"
MAX_STOREYS = 200
MAX_SCALE = 500  # storeys=200, scale=500 is already millions of entities
ORPHAN_COLUMN_TAG = "C-ORPHAN"
UNHOSTED_DOOR_TAG = "D101A"


def build_sample_model(storeys: int = 3, seed: int = 0, scale: int = 1) -> ifcopenshell.file:
    """Build the sample building in memory (see the module docstring for what it contains)."""
    check_sample_arguments(storeys, seed, scale)
    catalog = json.loads(CATALOG_PATH.read_text(encoding="utf-8"))
    return _BuildingBuilder(catalog, storeys=storeys, seed=seed, scale=scale).build()


def check_sample_arguments(storeys: int, seed: int = 0, scale: int = 1) -> None:
    """A ValueError naming the first argument out of range (each says what it accepts)."""
    for name, value, low, high in (("storeys", storeys, 1, MAX_STOREYS), ("scale", scale, 1, MAX_SCALE)):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ValueError(f"{name} must be a whole number from {low} to {high}, not {value!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be a whole number, not {seed!r}")


def write_sample_model(path: str | Path, storeys: int = 3, seed: int = 0, scale: int = 1) -> dict[str, Any]:
    """Write the sample building to ``path`` (atomically) and return a summary of what it holds."""
    data, summary = _sample_file(storeys, seed, scale) if scale == 1 else _build_file(storeys, seed, scale)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=target.name + ".", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return {"path": str(target), "bytes": len(data), **copy.deepcopy(summary)}


def _build_file(storeys: int, seed: int, scale: int) -> tuple[bytes, dict[str, Any]]:
    model = build_sample_model(storeys=storeys, seed=seed, scale=scale)
    return model.to_string().encode("utf-8"), summarize_model(model)


# The building is a pure function of its arguments (same bytes every time) and takes about a second to build:
# a process that writes the same small one again (the demo's batch folder, a test suite) copies it instead.
_sample_file = functools.lru_cache(maxsize=8)(_build_file)


def summarize_model(model: ifcopenshell.file) -> dict[str, Any]:
    """Counts of what a sample model holds, plus the ids of its deliberate defects."""
    storeys = sorted(model.by_type("IfcBuildingStorey"), key=lambda s: s.Elevation or 0.0)
    doors = model.by_type("IfcDoor")
    tags: dict[str, list[int]] = {}
    for door in doors:
        tags.setdefault(door.Tag or "", []).append(door.id())
    return {
        "schema": model.schema,
        "entities": sum(1 for _ in model),
        "storeys": len(storeys),
        "storey_names": [s.Name for s in storeys],
        "walls": len(model.by_type("IfcWall")),
        "doors": len(doors),
        "windows": len(model.by_type("IfcWindow")),
        "openings": len(model.by_type("IfcOpeningElement")),
        "spaces": len(model.by_type("IfcSpace")),
        "slabs": len(model.by_type("IfcSlab")),
        "columns": len(model.by_type("IfcColumn")),
        "types": len(model.by_type("IfcTypeObject")),
        "materials": len(model.by_type("IfcMaterial")),
        "defects": {
            "door_without_opening": [d.id() for d in doors if not d.FillsVoids],
            "element_without_storey": [
                e.id() for e in model.by_type("IfcElement")
                if not e.is_a("IfcFeatureElement") and ifcopenshell.util.element.get_container(e) is None
            ],
            "duplicate_door_marks": {tag: ids for tag, ids in sorted(tags.items()) if len(ids) > 1},
        },
    }


@dataclass(frozen=True)
class _Grid:
    bay: float
    room_depth: float
    corridor: float
    storey_height: float
    space_height: float
    wall_height: float
    slab_depth: float
    bays_per_wall_segment: int
    wings: int
    bays: int

    @property
    def wing_depth(self) -> float:
        return 2 * self.room_depth + self.corridor

    @property
    def length(self) -> float:
        return self.bays * self.bay

    @property
    def depth(self) -> float:
        return self.wings * self.wing_depth


@dataclass
class _Wall:
    entity: ifcopenshell.entity_instance
    start: tuple[float, float]
    direction: tuple[float, float]
    length: float
    thickness: float
    placement: ifcopenshell.entity_instance


@dataclass
class _Storey:
    entity: ifcopenshell.entity_instance
    level: int
    elevation: float
    contained: list[ifcopenshell.entity_instance] = field(default_factory=list)
    spaces: list[ifcopenshell.entity_instance] = field(default_factory=list)


class _BuildingBuilder:
    def __init__(self, catalog: dict[str, Any], *, storeys: int, seed: int, scale: int) -> None:
        self.catalog = catalog
        self.storey_count = storeys
        self.seed = seed
        self.rng = random.Random(seed)
        wings = math.ceil(math.sqrt(scale))
        self.grid = _Grid(**catalog["grid"], wings=wings, bays=4 * math.ceil(scale / wings))
        self.model = ifcopenshell.api.project.create_file(version="IFC4")
        self.by_type: dict[str, list[ifcopenshell.entity_instance]] = {}
        self.materials: dict[str, ifcopenshell.entity_instance] = {}

    # ---- top level -------------------------------------------------------------------------------
    def build(self) -> ifcopenshell.file:
        self._create_project()
        self._create_materials()
        self._create_types()
        storeys = [self._create_storey(level) for level in range(1, self.storey_count + 1)]
        defect_storey = storeys[1] if len(storeys) > 1 else storeys[0]
        self._add_unhosted_door(storeys[0])
        self._add_orphan_column(defect_storey)
        self._duplicate_a_door_mark(defect_storey)
        for storey in storeys:
            # Placements are already storey-relative; the api.spatial/aggregate calls would recompute
            # every one of them (half the build time at scale), so the relationships are created directly.
            self.model.createIfcRelContainedInSpatialStructure(
                ifcopenshell.guid.new(), None, None, None, storey.contained, storey.entity)
            self.model.createIfcRelAggregates(ifcopenshell.guid.new(), None, None, None, storey.entity, storey.spaces)
        self._assign_types()
        self._sort_set_members()
        self._assign_deterministic_ids()
        self.model.header.file_name.name = "nexus-sample.ifc"
        self.model.header.file_name.time_stamp = HEADER_TIMESTAMP
        return self.model

    def _create_project(self) -> None:
        model = self.model
        api = ifcopenshell.api
        self.project = api.root.create_entity(model, ifc_class="IfcProject", name="NexusAI Sample Office")
        api.unit.assign_unit(model, length={"is_metric": True, "raw": "METERS"})
        model3d = api.context.add_context(model, context_type="Model")
        self.body = api.context.add_context(
            model, context_type="Model", context_identifier="Body", target_view="MODEL_VIEW", parent=model3d)
        self.site = api.root.create_entity(model, ifc_class="IfcSite", name="Site")
        self.building = api.root.create_entity(model, ifc_class="IfcBuilding", name="Office Building")
        self.site.ObjectPlacement = self._placement(None, (0.0, 0.0, 0.0))
        self.building.ObjectPlacement = self._placement(self.site.ObjectPlacement, (0.0, 0.0, 0.0))
        api.aggregate.assign_object(model, products=[self.site], relating_object=self.project)
        api.aggregate.assign_object(model, products=[self.building], relating_object=self.site)

    def _create_materials(self) -> None:
        for spec in self.catalog["materials"]:
            self.materials[spec["name"]] = ifcopenshell.api.material.add_material(
                self.model, name=spec["name"], category=spec["category"])

    # ---- types -----------------------------------------------------------------------------------
    def _create_types(self) -> None:
        api = ifcopenshell.api
        model = self.model
        self.wall_types: dict[str, ifcopenshell.entity_instance] = {}
        self.wall_thickness: dict[str, float] = {}
        for key, spec in self.catalog["wall_types"].items():
            wall_type = api.root.create_entity(model, ifc_class="IfcWallType", predefined_type="STANDARD",
                                               name=spec["name"])
            layer_set = api.material.add_material_set(model, name=spec["name"], set_type="IfcMaterialLayerSet")
            for material_name, thickness in spec["layers"]:
                layer = api.material.add_layer(model, layer_set=layer_set, material=self.materials[material_name])
                api.material.edit_layer(model, layer=layer, attributes={"LayerThickness": thickness})
            api.material.assign_material(model, products=[wall_type], type="IfcMaterialLayerSet",
                                         material=layer_set)
            self._add_common_pset(wall_type, "Pset_WallCommon", spec["name"], {
                "IsExternal": spec["is_external"], "LoadBearing": key in ("exterior", "party"),
                **({"FireRating": spec["fire_rating"]} if spec["fire_rating"] else {})})
            self.wall_types[key] = wall_type
            self.wall_thickness[key] = round(sum(t for _, t in spec["layers"]), 4)

        self.door_types: dict[str, ifcopenshell.entity_instance] = {}
        for key, spec in self.catalog["door_types"].items():
            door_type = api.root.create_entity(model, ifc_class="IfcDoorType", predefined_type="DOOR",
                                               name=spec["name"])
            door_type.OperationType = spec["operation"]
            rep = api.geometry.add_door_representation(
                model, context=self.body, overall_height=spec["height"], overall_width=spec["width"],
                operation_type=spec["operation"], lining_properties={"LiningDepth": spec["lining_depth"]})
            api.geometry.assign_representation(model, product=door_type, representation=rep)
            api.material.assign_material(model, products=[door_type], material=self.materials[spec["material"]])
            self._add_common_pset(door_type, "Pset_DoorCommon", spec["name"], {
                "IsExternal": spec["is_external"], **({"FireRating": spec["fire_rating"]} if spec["fire_rating"] else {})})
            self.door_types[key] = door_type

        self.window_types: dict[str, ifcopenshell.entity_instance] = {}
        for key, spec in self.catalog["window_types"].items():
            window_type = api.root.create_entity(model, ifc_class="IfcWindowType", predefined_type="WINDOW",
                                                 name=spec["name"])
            window_type.PartitioningType = spec["partition"]
            panels = 2 if spec["partition"].startswith("DOUBLE") else 1
            rep = api.geometry.add_window_representation(
                model, context=self.body, overall_height=spec["height"], overall_width=spec["width"],
                partition_type=spec["partition"], lining_properties={"LiningDepth": spec["lining_depth"]},
                panel_properties=[{}] * panels)
            api.geometry.assign_representation(model, product=window_type, representation=rep)
            api.material.assign_material(model, products=[window_type], material=self.materials[spec["material"]])
            self._add_common_pset(window_type, "Pset_WindowCommon", spec["name"], {"IsExternal": spec["is_external"]})
            self.window_types[key] = window_type

        slab_spec = self.catalog["slab_type"]
        self.slab_type = api.root.create_entity(model, ifc_class="IfcSlabType", predefined_type="FLOOR",
                                                name=slab_spec["name"])
        api.material.assign_material(model, products=[self.slab_type], material=self.materials[slab_spec["material"]])
        self._add_common_pset(self.slab_type, "Pset_SlabCommon", slab_spec["name"], {
            "IsExternal": False, "LoadBearing": True, "FireRating": slab_spec["fire_rating"]})

        column_spec = self.catalog["column_type"]
        self.column_type = api.root.create_entity(model, ifc_class="IfcColumnType", predefined_type="COLUMN",
                                                  name=column_spec["name"])
        half = column_spec["size"] / 2
        rep = api.geometry.add_slab_representation(
            model, context=self.body, depth=self.grid.wall_height,
            polyline=[(-half, -half), (half, -half), (half, half), (-half, half)])
        api.geometry.assign_representation(model, product=self.column_type, representation=rep)
        api.material.assign_material(model, products=[self.column_type], material=self.materials[column_spec["material"]])
        self._add_common_pset(self.column_type, "Pset_ColumnCommon", column_spec["name"], {"LoadBearing": True})

    def _add_common_pset(self, product: ifcopenshell.entity_instance, pset_name: str, type_name: str,
                         properties: dict[str, Any]) -> None:
        pset = ifcopenshell.api.pset.add_pset(self.model, product=product, name=pset_name)
        ifcopenshell.api.pset.edit_pset(self.model, pset=pset, properties={"Reference": type_name.split()[0],
                                                                          **properties})

    def _typed(self, type_entity: ifcopenshell.entity_instance, element: ifcopenshell.entity_instance) -> None:
        self.by_type.setdefault(type_entity.GlobalId, []).append(element)

    def _assign_types(self) -> None:
        """What ``type.assign_type`` does, done in a fixed order.

        Given a list, assign_type walks a set of instances whose order depends on the process's history,
        so the file would differ from run to run (and one call per element is quadratic).
        """
        types = {t.GlobalId: t for t in self.model.by_type("IfcTypeObject")}
        for guid, elements in self.by_type.items():
            relating_type = types[guid]
            self.model.createIfcRelDefinesByType(ifcopenshell.guid.new(), None, None, None, elements, relating_type)
            if relating_type.RepresentationMaps:
                for element in elements:
                    ifcopenshell.api.type.map_type_representations(
                            self.model, related_object=element, relating_type=relating_type)
        for key, wall_type in self.wall_types.items():
            walls = self.by_type.get(wall_type.GlobalId, [])
            if walls:
                # One usage shared by the type's walls; their bodies are centred on the axis, so are the layers.
                ifcopenshell.api.material.assign_material(self.model, products=walls, type="IfcMaterialLayerSetUsage")
                ifcopenshell.util.element.get_material(walls[0]).OffsetFromReferenceLine = -self.wall_thickness[key] / 2

    # ---- one storey ------------------------------------------------------------------------------
    def _create_storey(self, level: int) -> _Storey:
        grid = self.grid
        elevation = round((level - 1) * grid.storey_height, 6)
        entity = ifcopenshell.api.root.create_entity(self.model, ifc_class="IfcBuildingStorey", name=f"Level {level}")
        entity.Elevation = elevation
        entity.ObjectPlacement = self._placement(self.building.ObjectPlacement, (0.0, 0.0, elevation))
        ifcopenshell.api.aggregate.assign_object(self.model, products=[entity], relating_object=self.building)
        storey = _Storey(entity=entity, level=level, elevation=elevation)

        ext = self.wall_thickness["exterior"]
        south = self._wall_run(storey, "exterior", y=0.0, x0=-ext / 2, x1=grid.length + ext / 2)
        north = self._wall_run(storey, "exterior", y=grid.depth, x0=-ext / 2, x1=grid.length + ext / 2)
        west = self._wall(storey, "exterior", (0.0, grid.depth), (0.0, -1.0), grid.depth)
        east = self._wall(storey, "exterior", (grid.length, 0.0), (0.0, 1.0), grid.depth)
        party = {w: self._wall_run(storey, "party", y=w * grid.wing_depth, x0=0.0, x1=grid.length)
                 for w in range(1, grid.wings)}

        rooms_per_storey = grid.wings * grid.bays * 2
        digits = 2 if rooms_per_storey < 100 else 3
        room_index = 0
        for wing in range(grid.wings):
            y0 = wing * grid.wing_depth
            corridor_south = self._wall_run(storey, "corridor", y=y0 + grid.room_depth, x0=0.0, x1=grid.length)
            corridor_north = self._wall_run(storey, "corridor", y=y0 + grid.room_depth + grid.corridor,
                                            x0=0.0, x1=grid.length)
            for side in ("south", "north"):
                outer_run = (south if wing == 0 else party[wing]) if side == "south" else \
                    (north if wing == grid.wings - 1 else party[wing + 1])
                outer_key = "exterior" if outer_run in (south, north) else "party"
                corridor_run = corridor_south if side == "south" else corridor_north
                ys = (y0, y0 + grid.room_depth) if side == "south" else \
                    (y0 + grid.room_depth + grid.corridor, y0 + grid.wing_depth)
                for bay in range(grid.bays):
                    room_index += 1
                    number = f"{level}{room_index:0{digits}d}"
                    function = self._room_function(storey.level, room_index, outer_key)
                    self._room(storey, number, function, bay, side, ys, outer_run, outer_key, corridor_run)
            self._corridor(storey, wing, west, east)
        self._columns(storey)
        self._slab(storey)
        return storey

    def _room(self, storey: _Storey, number: str, function: str, bay: int, side: str, ys: tuple[float, float],
              outer_run: list[_Wall], outer_key: str, corridor_run: list[_Wall]) -> None:
        grid = self.grid
        x0, x1 = bay * grid.bay, (bay + 1) * grid.bay
        thick = self.wall_thickness
        outer_t, corridor_t, partition_t = thick[outer_key], thick["corridor"], thick["partition"]
        if bay > 0:
            y_start, y_end = (ys[0] + outer_t / 2, ys[1] - corridor_t / 2) if side == "south" else \
                (ys[0] + corridor_t / 2, ys[1] - outer_t / 2)
            self._wall(storey, "partition", (x0, y_start), (0.0, 1.0), y_end - y_start)

        door_spec = self.catalog["door_types"]["room"]
        door_x = x0 + 0.5 if side == "south" else x1 - 0.5 - door_spec["width"]
        self._door(storey, corridor_run, door_x, "room", f"D{number}", facing_north=side == "north")
        if outer_key == "exterior":
            window_spec = self.catalog["window_types"]["room"]
            window_x = (x0 + x1) / 2 - window_spec["width"] / 2
            self._window(storey, outer_run, window_x, "room", f"W{number}")

        inset_low = (outer_t if side == "south" else corridor_t) / 2
        inset_high = (corridor_t if side == "south" else outer_t) / 2
        inset_west = (thick["exterior"] if bay == 0 else partition_t) / 2
        inset_east = (thick["exterior"] if bay == grid.bays - 1 else partition_t) / 2
        self._space(storey, number, function,
                    (x0 + inset_west, ys[0] + inset_low, x1 - inset_east, ys[1] - inset_high))

    def _room_function(self, level: int, room_index: int, outer_key: str) -> str:
        ground_floor = self.catalog["ground_floor_functions"]
        if level == 1 and room_index <= len(ground_floor):
            return ground_floor[room_index - 1]
        if outer_key != "exterior":
            return self.rng.choice(self.catalog["interior_room_functions"])
        names, weights = zip(*self.catalog["room_functions"], strict=True)
        return self.rng.choices(names, weights=weights)[0]

    def _corridor(self, storey: _Storey, wing: int, west: _Wall, east: _Wall) -> None:
        grid = self.grid
        y_low = wing * grid.wing_depth + grid.room_depth
        y_high = y_low + grid.corridor
        corridor_t, ext = self.wall_thickness["corridor"], self.wall_thickness["exterior"]
        self._space(storey, f"{storey.level}C{wing + 1}", "Corridor",
                    (ext / 2, y_low + corridor_t / 2, grid.length - ext / 2, y_high - corridor_t / 2))
        centre = (y_low + y_high) / 2
        end_window = self.catalog["window_types"]["corridor_end"]
        # Walls run along their local x: west runs north->south, so a world y maps to depth - y.
        west_offset = grid.depth - centre
        if storey.level == 1:
            entrance = self.catalog["door_types"]["entrance"]
            self._door(storey, [west], west_offset - entrance["width"] / 2, "entrance",
                       f"D{storey.level}-ENT{wing + 1}", facing_north=False)
        else:
            self._window(storey, [west], west_offset - end_window["width"] / 2, "corridor_end",
                         f"W{storey.level}-C{wing + 1}W")
        self._window(storey, [east], centre - end_window["width"] / 2, "corridor_end",
                     f"W{storey.level}-C{wing + 1}E")

    def _columns(self, storey: _Storey) -> None:
        grid = self.grid
        lines = sorted({round(w * grid.wing_depth + dy, 6) for w in range(grid.wings)
                        for dy in (0.0, grid.room_depth, grid.room_depth + grid.corridor, grid.wing_depth)})
        for row, y in enumerate(lines):
            for bay in range(grid.bays + 1):
                column = ifcopenshell.api.root.create_entity(self.model, ifc_class="IfcColumn", name="Column")
                column.Tag = f"C{chr(ord('A') + row % 26)}{bay + 1}"
                column.ObjectPlacement = self._placement(storey.entity.ObjectPlacement, (bay * grid.bay, y, 0.0))
                self._typed(self.column_type, column)
                storey.contained.append(column)

    def _slab(self, storey: _Storey) -> None:
        grid = self.grid
        half = self.wall_thickness["exterior"] / 2
        slab = ifcopenshell.api.root.create_entity(self.model, ifc_class="IfcSlab",
                                                   name=f"Floor slab {storey.entity.Name}")
        slab.ObjectPlacement = self._placement(storey.entity.ObjectPlacement, (0.0, 0.0, -grid.slab_depth))
        outline = [(-half, -half), (grid.length + half, -half), (grid.length + half, grid.depth + half),
                   (-half, grid.depth + half)]
        rep = ifcopenshell.api.geometry.add_slab_representation(
            self.model, context=self.body, depth=grid.slab_depth, polyline=outline)
        ifcopenshell.api.geometry.assign_representation(self.model, product=slab, representation=rep)
        self._typed(self.slab_type, slab)
        storey.contained.append(slab)

    def _space(self, storey: _Storey, number: str, function: str, box: tuple[float, float, float, float]) -> None:
        x0, y0, x1, y1 = (round(v, 6) for v in box)
        space = ifcopenshell.api.root.create_entity(self.model, ifc_class="IfcSpace", predefined_type="INTERNAL",
                                                    name=number)
        space.LongName = function
        space.ObjectPlacement = self._placement(storey.entity.ObjectPlacement, (0.0, 0.0, 0.0))
        rep = ifcopenshell.api.geometry.add_slab_representation(
            self.model, context=self.body, depth=self.grid.space_height,
            polyline=[(x0, y0), (x1, y0), (x1, y1), (x0, y1)])
        ifcopenshell.api.geometry.assign_representation(self.model, product=space, representation=rep)
        qto = ifcopenshell.api.pset.add_qto(self.model, product=space, name="Qto_SpaceBaseQuantities")
        ifcopenshell.api.pset.edit_qto(self.model, qto=qto, properties={
            "NetFloorArea": round((x1 - x0) * (y1 - y0), 3), "Height": self.grid.space_height})
        storey.spaces.append(space)

    # ---- walls, openings, fillings ----------------------------------------------------------------
    def _wall_run(self, storey: _Storey, key: str, *, y: float, x0: float, x1: float) -> list[_Wall]:
        """A straight west-to-east line of wall segments, broken at every few bays."""
        step = self.grid.bay * self.grid.bays_per_wall_segment
        breaks = [x0] + [k * step for k in range(1, math.ceil(self.grid.length / step)) if x0 < k * step < x1] + [x1]
        return [self._wall(storey, key, (a, y), (1.0, 0.0), b - a) for a, b in zip(breaks, breaks[1:], strict=False)]

    def _wall(self, storey: _Storey, key: str, start: tuple[float, float], direction: tuple[float, float],
              length: float) -> _Wall:
        thickness = self.wall_thickness[key]
        wall = ifcopenshell.api.root.create_entity(self.model, ifc_class="IfcWall",
                                                   name=self.catalog["wall_types"][key]["name"].split(" ", 1)[1])
        placement = self._placement(storey.entity.ObjectPlacement, (start[0], start[1], 0.0),
                                    (direction[0], direction[1], 0.0))
        wall.ObjectPlacement = placement
        rep = ifcopenshell.api.geometry.add_wall_representation(
            self.model, context=self.body, length=round(length, 6), height=self.grid.wall_height,
            offset=-thickness / 2, thickness=thickness)
        ifcopenshell.api.geometry.assign_representation(self.model, product=wall, representation=rep)
        self._typed(self.wall_types[key], wall)
        storey.contained.append(wall)
        return _Wall(wall, start, direction, length, thickness, placement)

    def _host_for(self, run: Iterable[_Wall], offset: float, width: float) -> tuple[_Wall, float]:
        """The segment of a wall run holding [offset, offset + width] (offsets along the run's axis)."""
        for wall in run:
            along = (offset - wall.start[0]) if wall.direction == (1.0, 0.0) else offset
            if len(list(run)) == 1 or 0.0 <= along and along + width <= wall.length:
                return wall, along
        raise ValueError(f"no wall segment holds an opening at {offset}")

    def _opening(self, host: _Wall, along: float, sill: float, width: float, height: float
                 ) -> ifcopenshell.entity_instance:
        opening = ifcopenshell.api.root.create_entity(self.model, ifc_class="IfcOpeningElement",
                                                      predefined_type="OPENING", name="Opening")
        depth = host.thickness + 0.1
        rep = ifcopenshell.api.geometry.add_wall_representation(
            self.model, context=self.body, length=width, height=height, thickness=depth)
        ifcopenshell.api.geometry.assign_representation(self.model, product=opening, representation=rep)
        # Placed after add_feature, which would otherwise recompute the placement it was just given.
        ifcopenshell.api.feature.add_feature(self.model, feature=opening, element=host.entity)
        opening.ObjectPlacement = self._placement(host.placement, (round(along, 6), -depth / 2, sill))
        return opening

    def _door(self, storey: _Storey, run: list[_Wall], offset: float, key: str, mark: str, *,
              facing_north: bool) -> None:
        spec = self.catalog["door_types"][key]
        host, along = self._host_for(run, offset, spec["width"])
        opening = self._opening(host, along, 0.0, spec["width"], spec["height"])
        door = ifcopenshell.api.root.create_entity(self.model, ifc_class="IfcDoor",
                                                   name="Door")
        door.Tag, door.OverallWidth, door.OverallHeight = mark, spec["width"], spec["height"]
        # The door's lining spans local y [0, lining depth]; it sits flush in the wall, swinging into the room.
        if facing_north:
            door.ObjectPlacement = self._placement(
                host.placement, (round(along, 6), -host.thickness / 2, 0.0))
        else:
            door.ObjectPlacement = self._placement(
                host.placement, (round(along + spec["width"], 6), host.thickness / 2, 0.0), (-1.0, 0.0, 0.0))
        ifcopenshell.api.feature.add_filling(self.model, opening=opening, element=door)
        self._typed(self.door_types[key], door)
        storey.contained.append(door)

    def _window(self, storey: _Storey, run: list[_Wall], offset: float, key: str, mark: str) -> None:
        spec = self.catalog["window_types"][key]
        host, along = self._host_for(run, offset, spec["width"])
        opening = self._opening(host, along, spec["sill"], spec["width"], spec["height"])
        window = ifcopenshell.api.root.create_entity(self.model, ifc_class="IfcWindow",
                                                     name="Window")
        window.Tag, window.OverallWidth, window.OverallHeight = mark, spec["width"], spec["height"]
        window.ObjectPlacement = self._placement(
            host.placement, (round(along, 6), -spec["lining_depth"] / 2, spec["sill"]))
        ifcopenshell.api.feature.add_filling(self.model, opening=opening, element=window)
        self._typed(self.window_types[key], window)
        storey.contained.append(window)

    # ---- deliberate defects -----------------------------------------------------------------------
    def _add_unhosted_door(self, storey: _Storey) -> None:
        grid = self.grid
        spec = self.catalog["door_types"]["room"]
        door = ifcopenshell.api.root.create_entity(self.model, ifc_class="IfcDoor",
                                                   name="Door")
        door.Tag, door.OverallWidth, door.OverallHeight = UNHOSTED_DOOR_TAG, spec["width"], spec["height"]
        # In the partition between rooms 101 and 102 (x = one bay), mid-depth, with no opening behind it.
        door.ObjectPlacement = self._placement(
            storey.entity.ObjectPlacement,
            (grid.bay + spec["lining_depth"] / 2, grid.room_depth / 2 - spec["width"] / 2, 0.0), (0.0, 1.0, 0.0))
        self._typed(self.door_types["room"], door)
        storey.contained.append(door)

    def _add_orphan_column(self, storey: _Storey) -> None:
        grid = self.grid
        column = ifcopenshell.api.root.create_entity(self.model, ifc_class="IfcColumn", name="Column")
        column.Tag = ORPHAN_COLUMN_TAG
        column.ObjectPlacement = self._placement(None, (grid.bay / 2, grid.room_depth / 2, storey.elevation))
        self._typed(self.column_type, column)

    def _duplicate_a_door_mark(self, storey: _Storey) -> None:
        prefix = f"D{storey.level}"
        doors = {d.Tag: d for d in storey.contained if d.is_a("IfcDoor")}
        digits = 2 if f"{prefix}01" in doors else 3
        doors[f"{prefix}{2:0{digits}d}"].Tag = f"{prefix}{3:0{digits}d}"

    # ---- plumbing ---------------------------------------------------------------------------------
    def _placement(self, relative_to: ifcopenshell.entity_instance | None, origin: tuple[float, float, float],
                   x_axis: tuple[float, float, float] = (1.0, 0.0, 0.0)) -> ifcopenshell.entity_instance:
        model = self.model
        return model.createIfcLocalPlacement(relative_to, model.createIfcAxis2Placement3D(
            model.createIfcCartesianPoint([float(v) for v in origin]),
            model.createIfcDirection((0.0, 0.0, 1.0)),
            model.createIfcDirection([float(v) for v in x_axis])))

    def _sort_set_members(self) -> None:
        """Order the members of every SET-typed attribute by id.

        The API builds some of these (units, related objects) from Python sets of instances, whose
        iteration order depends on the process's history; a SET's order carries no meaning in IFC.
        """
        schema = ifcopenshell.ifcopenshell_wrapper.schema_by_name(self.model.schema)
        set_attributes: dict[str, list[int]] = {}
        for entity in self.model:
            ifc_class = entity.is_a()
            indices = set_attributes.get(ifc_class)
            if indices is None:
                indices = set_attributes[ifc_class] = [
                    i for i, attribute in enumerate(schema.declaration_by_name(ifc_class).all_attributes())
                    if (aggregate := attribute.type_of_attribute().as_aggregation_type()) is not None
                    and aggregate.type_of_aggregation_string() == "set"]
            for index in indices:
                members = entity[index]
                if members and isinstance(members[0], ifcopenshell.entity_instance) and len(members) > 1:
                    entity[index] = sorted(members, key=lambda e: e.id())

    def _assign_deterministic_ids(self) -> None:
        rng = random.Random(f"nexus-sample-guids/{self.seed}")
        for entity in sorted(self.model.by_type("IfcRoot"), key=lambda e: e.id()):
            entity.GlobalId = ifcopenshell.guid.compress(uuid.UUID(int=rng.getrandbits(128), version=4).hex)
