"""A body that does not fit the view's budget is drawn first as a coarser body of the same element (its
``Body-FallBack``, or a ``Body`` in a sketch or coarser level-of-detail subcontext), counted as simplified; without
one, its Box, the opening it fills, its FootPrint, its Axis follow in that order; with the budget, the real body.

The models are written here with IfcOpenShell's API (IFC4); every body is built by IfcOpenShell's geometry."""
from __future__ import annotations

import time

import ifcopenshell
import ifcopenshell.api
import ifcopenshell.api.project
import ifcopenshell.geom
import numpy as np
import pytest

from ifc_host import render_bodies
from ifc_host.render_axonometric import _title as view_title
from ifc_host.render_axonometric import draw_axonometric
from ifc_host.render_bodies import BodyOptions, tessellate_bodies
from ifc_host.render_scene import resolve_view

HEAVY_CELLS = 80  # a sheet of 80 x 80 cells: 12 800 triangles, over render_bodies.COSTLY_FACES


def _run(usecase: str, model: ifcopenshell.file, **arguments: object) -> ifcopenshell.entity_instance:
    return ifcopenshell.api.run(usecase, model, **arguments)


class _Model:
    """An IFC4 model in metres, with the subcontexts a BIM tool writes (Bonsai's names): Model/Body/MODEL_VIEW,
    Model/Body/SKETCH_VIEW, Model/Box/MODEL_VIEW, Model/FootPrint/MODEL_VIEW and Plan/Axis/GRAPH_VIEW."""

    def __init__(self) -> None:
        self.file = ifcopenshell.api.project.create_file(version="IFC4")
        project = _run("root.create_entity", self.file, ifc_class="IfcProject", name="Simplified")
        _run("unit.assign_unit", self.file, length={"is_metric": True, "raw": "METERS"})
        model = _run("context.add_context", self.file, context_type="Model")
        plan = _run("context.add_context", self.file, context_type="Plan")
        self.body = self._sub("Model", "Body", "MODEL_VIEW", model)
        self.sketch = self._sub("Model", "Body", "SKETCH_VIEW", model)
        self.box = self._sub("Model", "Box", "MODEL_VIEW", model)
        self.footprint = self._sub("Model", "FootPrint", "MODEL_VIEW", model)
        self.axis = self._sub("Plan", "Axis", "GRAPH_VIEW", plan)
        site = _run("root.create_entity", self.file, ifc_class="IfcSite", name="Site")
        _run("aggregate.assign_object", self.file, relating_object=project, products=[site])
        self.storey = _run("root.create_entity", self.file, ifc_class="IfcBuildingStorey", name="Ground")
        _run("aggregate.assign_object", self.file, relating_object=site, products=[self.storey])
        self.placed = 0

    def _sub(self, kind: str, identifier: str, view: str,
             parent: ifcopenshell.entity_instance) -> ifcopenshell.entity_instance:
        return _run("context.add_context", self.file, context_type=kind, context_identifier=identifier,
                    target_view=view, parent=parent)

    def element(self, ifc_class: str = "IfcFurniture", heavy: bool = True) -> ifcopenshell.entity_instance:
        """An element 4 m east of the previous one, with a many-faced Body (a 1 m sheet) when ``heavy``."""
        element = _run("root.create_entity", self.file, ifc_class=ifc_class)
        _run("spatial.assign_container", self.file, relating_structure=self.storey, products=[element])
        matrix = np.eye(4)
        matrix[0, 3] = 4.0 * self.placed
        self.placed += 1
        _run("geometry.edit_object_placement", self.file, product=element, matrix=matrix)
        if heavy:
            self.assign(element, self.sheet(HEAVY_CELLS, self.body))
        return element

    def sheet(self, cells: int, context: ifcopenshell.entity_instance,
              identifier: str = "Body") -> ifcopenshell.entity_instance:
        """A 1 m x 1 m rippled sheet of 2 x cells x cells triangles."""
        xs, ys = np.meshgrid(np.linspace(0, 1, cells + 1), np.linspace(0, 1, cells + 1))
        verts = np.column_stack([xs.ravel(), ys.ravel(), 0.5 + 0.1 * np.sin(7 * xs.ravel())]).tolist()
        faces = []
        for i in range(cells):
            for j in range(cells):
                a = i * (cells + 1) + j
                faces += [[a, a + 1, a + cells + 2], [a, a + cells + 2, a + cells + 1]]
        representation = _run("geometry.add_mesh_representation", self.file, context=context, vertices=[verts],
                              faces=[faces])
        representation.RepresentationIdentifier = identifier
        return representation

    def block(self, context: ifcopenshell.entity_instance, length: float, identifier: str = "Body",
              height: float = 1.0) -> ifcopenshell.entity_instance:
        """An extruded block ``length`` x 1 m x ``height`` from the element's origin."""
        representation = _run("geometry.add_wall_representation", self.file, context=context, length=length,
                              height=height, thickness=1.0)
        representation.RepresentationIdentifier = identifier
        return representation

    def assign(self, product: ifcopenshell.entity_instance, representation: ifcopenshell.entity_instance) -> None:
        _run("geometry.assign_representation", self.file, product=product, representation=representation)


def _world_bounds(mesh: render_bodies.Mesh) -> tuple[np.ndarray, np.ndarray]:
    return mesh.verts.min(axis=0), mesh.verts.max(axis=0)


@pytest.fixture()
def built() -> tuple[_Model, dict[str, ifcopenshell.entity_instance]]:
    """Elements with a heavy body and every kind of cheaper representation, one kind each."""
    m = _Model()
    elements: dict[str, ifcopenshell.entity_instance] = {}
    elements["sketch"] = m.element()  # a Body in the SKETCH_VIEW subcontext: a 1.5 m block
    m.assign(elements["sketch"], m.block(m.sketch, 1.5))
    elements["fallback"] = m.element()  # a Body-FallBack (IFC4 Reference View): a 2 m block, in the Body context
    m.assign(elements["fallback"], m.block(m.body, 2.0, "Body-FallBack"))
    elements["fallback_and_box"] = m.element()  # a Body-FallBack goes before a Box
    m.assign(elements["fallback_and_box"], m.block(m.body, 2.5, "Body-FallBack"))
    m.assign(elements["fallback_and_box"], _box(m, 3.0))
    elements["box"] = m.element()
    m.assign(elements["box"], _box(m, 1.0))
    elements["window"] = m.element("IfcWindow")  # fills an extruded opening of a wall
    wall = m.element("IfcWall", heavy=False)
    m.assign(wall, m.block(m.body, 3.0, height=3.0))
    opening = _run("root.create_entity", m.file, ifc_class="IfcOpeningElement")
    _run("geometry.edit_object_placement", m.file, product=opening, matrix=_origin(wall))
    m.assign(opening, m.block(m.body, 1.0))
    _run("feature.add_feature", m.file, feature=opening, element=wall)
    _run("feature.add_filling", m.file, opening=opening, element=elements["window"])
    elements["footprint"] = m.element()
    m.assign(elements["footprint"], _run("geometry.add_footprint_representation", m.file, context=m.footprint,
                                         curves=[m.file.createIfcPolyline([m.file.createIfcCartesianPoint(p) for p in
                                                                           ((0., 0.), (1., 0.), (1., 1.), (0., 0.))])]))
    elements["axis"] = m.element("IfcWall")
    m.assign(elements["axis"], _run("geometry.add_axis_representation", m.file, context=m.axis,
                                    axis=[(0.0, 0.0), (1.0, 0.0)]))
    return m, elements


def _origin(element: ifcopenshell.entity_instance) -> np.ndarray:
    import ifcopenshell.util.placement

    return np.array(ifcopenshell.util.placement.get_local_placement(element.ObjectPlacement), dtype=float)


def _box(m: _Model, size: float) -> ifcopenshell.entity_instance:
    box = m.file.createIfcBoundingBox(m.file.createIfcCartesianPoint((0.0, 0.0, 0.0)), size, size, size)
    return m.file.createIfcShapeRepresentation(m.box, "Box", "BoundingBox", [box])


def test_with_the_budget_the_real_body_is_drawn_never_a_coarser_one(built):
    m, elements = built
    bodies = tessellate_bodies(m.file, list(elements.values()), BodyOptions())
    for name, element in elements.items():  # IfcOpenShell's iterator makes the coarse ones too: they are not kept
        assert len(bodies.meshes[element.id()].faces) == 2 * HEAVY_CELLS ** 2, name
    assert not bodies.simplified and not bodies.boxed and not bodies.sketched and not bodies.undrawn


def test_out_of_time_a_coarser_body_is_drawn_counted_as_simplified_before_box_footprint_and_axis(built):
    m, elements = built
    ids = {name: element.id() for name, element in elements.items()}
    memory: dict = {}
    bodies = tessellate_bodies(m.file, list(elements.values()), BodyOptions(deadline=time.time() - 1, memory=memory))
    assert sorted(bodies.simplified) == sorted([ids["sketch"], ids["fallback"], ids["fallback_and_box"]])
    assert sorted(bodies.boxed) == sorted([ids["box"], ids["window"]])  # the window as the opening it fills
    assert sorted(bodies.sketched) == sorted([ids["footprint"], ids["axis"]])
    assert not bodies.out_of_time and not bodies.undrawn and not memory  # a stand-in is never kept as a body
    for name, length in (("sketch", 1.5), ("fallback", 2.0), ("fallback_and_box", 2.5)):
        low, high = _world_bounds(bodies.meshes[ids[name]])
        origin = _origin(elements[name])[:3, 3]
        assert np.allclose(low, origin, atol=1e-6) and np.allclose(high, origin + [length, 1.0, 1.0], atol=1e-6), name
        assert len(bodies.meshes[ids[name]].faces) == 12, name  # the block, not the sheet


def test_without_a_coarser_body_the_stand_ins_follow_in_their_order(built):
    m, elements = built
    bodies = tessellate_bodies(m.file, [elements[n] for n in ("box", "window", "footprint", "axis")],
                               BodyOptions(deadline=time.time() - 1))
    assert not bodies.simplified and sorted(bodies.boxed) == sorted([elements["box"].id(), elements["window"].id()])
    assert sorted(bodies.sketched) == sorted([elements["footprint"].id(), elements["axis"].id()])


def test_a_costly_body_that_does_not_fit_gets_the_most_detailed_coarser_body_that_does(monkeypatch):
    """Over COSTLY_FACES and, by the estimate, past the budget: left for later, and of its two coarser bodies the
    fall-back of 800 triangles fits what is left of the budget, so it is drawn rather than the sketch's block;
    with no time left at all, the cheapest (the block) is."""
    m = _Model()
    element = m.element()
    m.assign(element, m.sheet(20, m.body, "Body-FallBack"))  # 800 triangles
    m.assign(element, m.block(m.sketch, 1.0))
    cheap = m.element(heavy=False)
    m.assign(cheap, m.block(m.body, 1.0))
    # A slower kernel by the estimate: the sheet (12 800 faces) takes 12.8 s, more than the budget, the fall-back
    # 0.8 s, well within it however loaded the machine; the cheap block is built.
    monkeypatch.setattr(render_bodies, "SECONDS_PER_FACE", 1e-3)
    budget_s = 5.0
    bodies = tessellate_bodies(m.file, [element, cheap], BodyOptions(deadline=time.time() + budget_s))
    assert bodies.simplified == [element.id()] and not bodies.boxed and not bodies.undrawn
    assert len(bodies.meshes[element.id()].faces) == 800 and len(bodies.meshes[cheap.id()].faces) == 12
    late = tessellate_bodies(m.file, [element], BodyOptions(deadline=time.time() - 1))
    assert late.simplified == [element.id()] and len(late.meshes[element.id()].faces) == 12


def test_a_types_mapped_fallback_is_built_once_and_placed_at_each_instance():
    m = _Model()
    furniture_type = _run("root.create_entity", m.file, ifc_class="IfcFurnitureType")
    m.assign(furniture_type, m.sheet(HEAVY_CELLS, m.body))
    m.assign(furniture_type, m.block(m.body, 2.0, "Body-FallBack"))
    instances = [m.element(heavy=False) for _ in range(3)]
    _run("type.assign_type", m.file, related_objects=instances, relating_type=furniture_type)
    bodies = tessellate_bodies(m.file, instances, BodyOptions(deadline=time.time() - 1))
    assert sorted(bodies.simplified) == sorted(e.id() for e in instances)
    first, *others = (bodies.meshes[e.id()] for e in instances)
    assert all(np.shares_memory(first.faces, other.faces) for other in others)  # built once
    for index, instance in enumerate(instances):
        low, high = _world_bounds(bodies.meshes[instance.id()])
        assert np.allclose(low, [4.0 * index, 0, 0], atol=1e-6) and np.allclose(high, [4.0 * index + 2, 1, 1],
                                                                                 atol=1e-6)
    full = tessellate_bodies(m.file, instances, BodyOptions())
    assert all(len(full.meshes[e.id()].faces) == 2 * HEAVY_CELLS ** 2 for e in instances)
    assert np.shares_memory(full.meshes[instances[0].id()].faces, full.meshes[instances[1].id()].faces)


def test_a_3d_view_out_of_time_draws_the_simplified_bodies_and_says_so(built):
    m, elements = built
    spec = resolve_view(m.file, "3D", [])
    drawing = draw_axonometric(m.file, spec, [], 600, BodyOptions(deadline=time.time() - 1))
    assert len(drawing.simplified) == 3 and len(drawing.boxed) == 2 and len(drawing.sketched) == 2
    assert drawing.png.startswith(b"\x89PNG")
    title = view_title(spec, 0, 0, len(drawing.undrawn), len(drawing.out_of_time), len(drawing.boxed),
                       len(drawing.sketched), len(drawing.later), len(drawing.simplified))
    assert "3 drawn simplified" in title and title.index("drawn simplified") < title.index("drawn as boxes")


def _sleepers(cartesian: bool) -> tuple[ifcopenshell.file, list[ifcopenshell.entity_instance]]:
    """An IFC 4.3 railway: an alignment laid out by IfcOpenShell's API (100 m east, an arc of 30 m, 100 m north)
    and six sleepers of one type on IfcLinearPlacement along its axis, with or without the CartesianPosition an
    exporter may write beside a linear placement (here the one IfcOpenShell's geometry evaluates)."""
    import ifcopenshell.api.alignment

    m = ifcopenshell.api.project.create_file(version="IFC4X3_ADD2")
    project = _run("root.create_entity", m, ifc_class="IfcProject", name="Railway")
    _run("unit.assign_unit", m, length={"is_metric": True, "raw": "METERS"})
    body = _run("context.add_context", m, context_type="Model", context_identifier="Body", target_view="MODEL_VIEW",
                parent=_run("context.add_context", m, context_type="Model"))
    railway = _run("root.create_entity", m, ifc_class="IfcRailway", name="Line")
    _run("aggregate.assign_object", m, relating_object=project, products=[railway])
    alignment = ifcopenshell.api.alignment.create_by_pi_method(m, "Axis", [(0.0, 0.0), (100.0, 0.0), (100.0, 100.0)],
                                                             [30.0])
    curve = ifcopenshell.api.alignment.get_basis_curve(alignment)
    sleeper_type = _run("root.create_entity", m, ifc_class="IfcTrackElementType", predefined_type="SLEEPER")
    _run("geometry.assign_representation", m, product=sleeper_type, representation=_run(
        "geometry.add_wall_representation", m, context=body, length=0.26, height=0.2, thickness=2.6))
    settings = ifcopenshell.geom.settings()
    sleepers = []
    for distance in (5.0, 60.0, 110.0, 125.0, 150.0, 180.0):
        sleeper = _run("root.create_entity", m, ifc_class="IfcTrackElement", predefined_type="SLEEPER")
        point = m.createIfcPointByDistanceExpression(m.createIfcLengthMeasure(distance), 0.0, 0.0, 0.0, curve)
        sleeper.ObjectPlacement = m.createIfcLinearPlacement(None, m.createIfcAxis2PlacementLinear(point, None, None))
        if cartesian:
            matrix = np.array(ifcopenshell.geom.create_shape(settings, sleeper.ObjectPlacement).matrix).reshape(4, 4).T
            sleeper.ObjectPlacement.CartesianPosition = m.createIfcAxis2Placement3D(
                m.createIfcCartesianPoint(matrix[:3, 3].tolist()), m.createIfcDirection(matrix[:3, 2].tolist()),
                m.createIfcDirection(matrix[:3, 0].tolist()))
        _run("spatial.assign_container", m, relating_structure=railway, products=[sleeper])
        _run("type.assign_type", m, related_objects=[sleeper], relating_type=sleeper_type)
        sleepers.append(sleeper)
    return m, sleepers


def test_out_of_time_sleepers_on_linear_placements_are_placed_from_the_one_built_geometry():
    """The sleepers share one built geometry (drawn once); a view with no time left places the ones it did not
    build from it, by the CartesianPosition of their linear placements, where the kernel puts each of them along
    the curve, instead of leaving them undrawn. Without a CartesianPosition they stay out of time (evaluating each
    placement by the kernel costs more than building the sleeper)."""
    m, sleepers = _sleepers(cartesian=True)
    full = tessellate_bodies(m, sleepers, BodyOptions())
    assert len(full.meshes) == 6 and not full.undrawn
    assert all(np.shares_memory(full.meshes[sleepers[0].id()].faces, full.meshes[s.id()].faces) for s in sleepers)
    kept: dict = {}
    tessellate_bodies(m, sleepers[:1], BodyOptions(memory=kept))
    late = tessellate_bodies(m, sleepers[1:], BodyOptions(memory=kept, deadline=time.time() - 1))
    assert not late.out_of_time and not late.undrawn and not late.simplified and not late.boxed
    for sleeper in sleepers[1:]:
        assert np.allclose(late.meshes[sleeper.id()].verts, full.meshes[sleeper.id()].verts, atol=1e-6), sleeper.id()
    m, sleepers = _sleepers(cartesian=False)
    kept = {}
    tessellate_bodies(m, sleepers[:1], BodyOptions(memory=kept))
    late = tessellate_bodies(m, sleepers[1:], BodyOptions(memory=kept, deadline=time.time() - 1))
    assert sorted(late.out_of_time) == sorted(s.id() for s in sleepers[1:])


def _rail(m: ifcopenshell.file, curve: ifcopenshell.entity_instance, body: ifcopenshell.entity_instance,
          start: float, end: float, lateral: float) -> ifcopenshell.entity_instance:
    """A rail: a 0.2 m x 0.3 m section swept along the curve from ``start`` to ``end`` metres, ``lateral`` to the left
    and 0.5 m up."""
    profile = m.createIfcRectangleProfileDef("AREA", "rail", m.createIfcAxis2Placement2D(
        m.createIfcCartesianPoint((0.0, 0.15))), 0.2, 0.3)
    positions = [m.createIfcAxis2PlacementLinear(m.createIfcPointByDistanceExpression(
        m.createIfcLengthMeasure(d), lateral, 0.5, None, curve), None, None) for d in (start, end)]
    solid = m.createIfcSectionedSolidHorizontal(curve, [profile, profile], positions)
    rail = _run("root.create_entity", m, ifc_class="IfcRail", predefined_type="RAIL")
    _run("geometry.edit_object_placement", m, product=rail, matrix=np.eye(4))
    rail.Representation = m.createIfcProductDefinitionShape(None, None, [m.createIfcShapeRepresentation(
        body, "Body", "AdvancedSweptSolid", [solid])])
    return rail


def test_out_of_time_a_sectioned_solid_is_drawn_as_its_section_swept_along_the_alignment():
    """The manifold kernel builds no IfcSectionedSolidHorizontal (OpenCascade does, one at a time): out of time, a
    rail is drawn as its section's bounding rectangle swept along its alignment, counted with the boxes, where the
    kernel builds it (the curve's arc included), left of the alignment as its offset says."""
    from ifc_host.render_geometry import footprint

    m, sleepers = _sleepers(cartesian=False)
    curve = sleepers[0].ObjectPlacement.RelativePlacement.Location.BasisCurve
    body = next(c for c in m.by_type("IfcGeometricRepresentationSubContext") if c.ContextIdentifier == "Body")
    rails = [_rail(m, curve, body, 20.0, 150.0, 2.0), _rail(m, curve, body, 150.0, 190.0, -2.0)]
    railway = m.by_type("IfcRailway")[0]
    _run("spatial.assign_container", m, relating_structure=railway, products=rails)
    full = tessellate_bodies(m, rails, BodyOptions())
    assert set(full.meshes) == {r.id() for r in rails} and not full.boxed
    late = tessellate_bodies(m, rails, BodyOptions(deadline=time.time() - 1))
    assert sorted(late.boxed) == sorted(r.id() for r in rails) and not late.undrawn and not late.out_of_time
    for rail in rails:
        stand_in, built = late.meshes[rail.id()], full.meshes[rail.id()]
        assert np.allclose(_world_bounds(stand_in)[0], _world_bounds(built)[0], atol=0.05), rail.id()
        assert np.allclose(_world_bounds(stand_in)[1], _world_bounds(built)[1], atol=0.05), rail.id()
        area, exact = footprint(stand_in), footprint(built)
        assert area.intersection(exact).area >= 0.9 * exact.area and area.area <= 1.1 * exact.area, rail.id()


def test_past_the_stand_in_deadline_no_more_stand_ins_are_built_and_the_rest_stays_out_of_time():
    """Stand-ins the kernel builds (swept sections, simplified bodies) stop at ``stand_in_deadline`` (render.py: half
    the drawing reserve past the deadline), so a view still answers before its timeout; what is left is said as out
    of time."""
    m, sleepers = _sleepers(cartesian=False)
    curve = sleepers[0].ObjectPlacement.RelativePlacement.Location.BasisCurve
    body = next(c for c in m.by_type("IfcGeometricRepresentationSubContext") if c.ContextIdentifier == "Body")
    rail = _rail_in_railway(m, curve, body)
    late = tessellate_bodies(m, [rail], BodyOptions(deadline=time.time() - 2, stand_in_deadline=time.time() - 1))
    assert late.out_of_time == [rail.id()] and not late.boxed
    within = tessellate_bodies(m, [rail], BodyOptions(deadline=time.time() - 1, stand_in_deadline=time.time() + 60))
    assert within.boxed == [rail.id()] and not within.out_of_time


def _rail_in_railway(m: ifcopenshell.file, curve: ifcopenshell.entity_instance,
                         body: ifcopenshell.entity_instance) -> ifcopenshell.entity_instance:
    rail = _rail(m, curve, body, 20.0, 150.0, 2.0)
    _run("spatial.assign_container", m, relating_structure=m.by_type("IfcRailway")[0], products=[rail])
    return rail
