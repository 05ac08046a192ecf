"""Bodies from the one-pass kernel: instances of one representation are built once and placed per element."""
from __future__ import annotations

import ifcopenshell
import ifcopenshell.geom
import numpy as np

from ifc_host.render_bodies import BodyOptions, tessellate_bodies
from ifc_host.render_stand_ins import opening_stand_ins
from ifc_host.sample import write_sample_model


def test_doors_of_one_type_share_one_built_geometry_placed_where_each_door_is(tmp_path):
    path = tmp_path / "one.ifc"
    write_sample_model(path, storeys=1)
    model = ifcopenshell.open(str(path))
    def source(door: ifcopenshell.entity_instance) -> int:
        [item] = door.Representation.Representations[0].Items
        return item.MappingSource.id()

    doors = [d for d in model.by_type("IfcDoor") if source(d) == source(model.by_type("IfcDoor")[0])]
    assert len(doors) >= 3
    meshes = tessellate_bodies(model, doors, BodyOptions()).meshes
    first, *others = (meshes[d.id()] for d in doors)
    assert all(np.shares_memory(first.faces, other.faces) for other in others)  # built once
    settings = ifcopenshell.geom.settings()
    settings.set("use-world-coords", True)
    for door in doors:  # and each placed exactly where the kernel puts it in world coordinates
        shape = ifcopenshell.geom.create_shape(settings, door)
        world = np.frombuffer(shape.geometry.verts_buffer, dtype=np.float64).reshape(-1, 3)
        assert np.allclose(np.sort(meshes[door.id()].verts, axis=0), np.sort(world, axis=0), atol=1e-9)


def test_out_of_time_an_instance_of_a_kept_body_is_placed_instead_of_left_undrawn(tmp_path):
    import time

    path = tmp_path / "two.ifc"
    write_sample_model(path, storeys=2)
    model = ifcopenshell.open(str(path))
    doors = sorted(model.by_type("IfcDoor"), key=lambda d: d.id())
    kept: dict = {}
    first = tessellate_bodies(model, doors[:1], BodyOptions(memory=kept))  # one door built, as a view would
    assert list(first.meshes) == [doors[0].id()]
    late = tessellate_bodies(model, doors[1:], BodyOptions(memory=kept, deadline=time.time() - 1))
    same_type = [d for d in doors[1:] if d.Representation.Representations[0].Items[0].MappingSource
                 == doors[0].Representation.Representations[0].Items[0].MappingSource]
    assert same_type and all(d.id() in late.meshes for d in same_type)
    rest = [d for d in doors[1:] if d not in same_type]
    # The others are out of time, or drawn as the opening they fill (render_stand_ins.py), counted as boxed.
    assert set(late.boxed) == {d.id() for d in rest if opening_stand_ins(model, [d])}
    assert set(late.out_of_time) == {d.id() for d in rest} - set(late.boxed)
    settings = ifcopenshell.geom.settings()
    settings.set("use-world-coords", True)
    for door in same_type:  # placed exactly where the kernel would have built it
        world = np.frombuffer(ifcopenshell.geom.create_shape(settings, door).geometry.verts_buffer,
                              dtype=np.float64).reshape(-1, 3)
        assert np.allclose(np.sort(late.meshes[door.id()].verts, axis=0), np.sort(world, axis=0), atol=1e-6)
