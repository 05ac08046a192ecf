"""Out of time, an element without a Box is drawn from its FootPrint or its Axis, counted apart ("sketched"), never
kept as its body; a plan says how many on the image, and the render child's result carries them.

Real files from the shared corpus ($NEXUS_IFC_CORPUS, `. scripts/corpus.sh`; a missing file fails the test):
ArchiCAD 20's FZK-Haus (its 7 spaces carry a FootPrint curve set, its 13 walls an Axis polyline) and Revit 2011's
Office_A (487 walls with an Axis, no Box anywhere)."""
from __future__ import annotations

import json
import time
from pathlib import Path

import ifcopenshell
import numpy as np
import pytest

from ifc_host.render_bodies import BodyOptions, has_body, tessellate_bodies
from ifc_host.render_child import render_request
from ifc_host.render_geometry import footprint
from ifc_host.render_plan import _title as plan_title
from ifc_host.render_plan import draw_plan
from ifc_host.render_scene import resolve_view, storeys_by_elevation, view_names
from ifc_host.render_stand_ins import AXIS_BAR_M, axis_stand_ins, footprint_stand_ins
from ifc_host.spatial import elements_of_storey
from tests.corpus.corpus_files import corpus_dirs

ARCHICAD_FILE = "AC20-FZK-Haus.ifc"
REVIT_FILE = "Office_A_20110811.ifc"


def _corpus_file(name: str) -> Path:
    found = [d / name for d in corpus_dirs() if (d / name).is_file()]
    assert found, f"{name} is in none of the corpus folders {[str(d) for d in corpus_dirs()]}: " \
                  "run `. scripts/corpus.sh` beside ../shared/corpus"
    return found[0]


@pytest.fixture(scope="module")
def archicad_model() -> ifcopenshell.file:
    return ifcopenshell.open(str(_corpus_file(ARCHICAD_FILE)))


@pytest.fixture(scope="module")
def revit_path() -> Path:
    return _corpus_file(REVIT_FILE)


@pytest.fixture(scope="module")
def revit_model(revit_path: Path) -> ifcopenshell.file:
    return ifcopenshell.open(str(revit_path))


def _with(model: ifcopenshell.file, identifier: str) -> list[ifcopenshell.entity_instance]:
    return [e for e in model.by_type("IfcProduct") if has_body(e) and e.Representation is not None
            and any(r.RepresentationIdentifier == identifier for r in e.Representation.Representations)]


def test_a_footprint_stand_in_covers_exactly_what_the_space_body_covers(archicad_model):
    spaces = [e for e in _with(archicad_model, "FootPrint") if e.is_a("IfcSpace")]
    assert len(spaces) == 7
    bodies = tessellate_bodies(archicad_model, spaces, BodyOptions()).meshes
    stand_ins = footprint_stand_ins(archicad_model, spaces)
    assert set(stand_ins) == {e.id() for e in spaces}
    for space in spaces:
        sketch, body = stand_ins[space.id()], bodies[space.id()]
        outline, exact = footprint(sketch), footprint(body)
        assert outline.symmetric_difference(exact).area <= 1e-3 * exact.area, space.id()
        assert sketch.z_range[0] == sketch.z_range[1] == pytest.approx(body.z_range[0], abs=1e-6)  # flat, at its base


def test_an_axis_stand_in_is_a_thin_bar_along_the_wall(archicad_model):
    walls = [e for e in _with(archicad_model, "Axis") if e.is_a("IfcWall")]
    assert len(walls) == 13
    bodies = tessellate_bodies(archicad_model, walls, BodyOptions()).meshes
    bars = axis_stand_ins(archicad_model, walls)
    assert set(bars) == {e.id() for e in walls}
    for wall in walls:
        outline, exact = footprint(bars[wall.id()]), footprint(bodies[wall.id()])
        # The axis may run along a face of the wall and on to the next wall's axis at a corner (a wall's
        # thickness, 0.3 m here, past its body): the bar lies on the wall, within half a metre of its body.
        assert outline.intersects(exact) and outline.within(exact.buffer(0.5)), wall.id()
        length = outline.minimum_rotated_rectangle.length / 2 - AXIS_BAR_M
        assert 0.5 * exact.minimum_rotated_rectangle.length / 2 <= length, wall.id()
        low, high = bars[wall.id()].z_range
        assert high - low == pytest.approx(AXIS_BAR_M, abs=1e-6)


def test_axis_stand_ins_are_only_for_walls_beams_columns_and_members(archicad_model):
    spaces = archicad_model.by_type("IfcSpace")
    assert not axis_stand_ins(archicad_model, spaces)


def test_out_of_time_walls_without_a_box_are_drawn_from_their_axis_counted_apart(revit_model):
    storey = next(s for s in storeys_by_elevation(revit_model)
                  if any(e.is_a("IfcWall") for e in elements_of_storey(s)))
    walls = [e for e in elements_of_storey(storey) if e.is_a("IfcWall") and e in _with(revit_model, "Axis")]
    assert walls and not _with(revit_model, "Box")
    memory: dict = {}
    bodies = tessellate_bodies(revit_model, walls, BodyOptions(deadline=time.time() - 1, memory=memory))
    assert sorted(bodies.sketched) == sorted(w.id() for w in walls)
    assert not bodies.boxed and not bodies.out_of_time and not bodies.undrawn and not bodies.nothing_drawn
    assert not memory  # a stand-in is never kept as the element's body for the views to come

    spec = resolve_view(revit_model, view_names(revit_model)[storeys_by_elevation(revit_model).index(storey)], [])
    drawing = draw_plan(revit_model, spec, [], 800, BodyOptions(deadline=time.time() - 1))
    assert set(w.id() for w in walls) <= set(drawing.sketched)
    assert not set(drawing.sketched) & set(drawing.out_of_time)
    title = plan_title(spec, 0, 0, len(drawing.undrawn), len(drawing.out_of_time), len(drawing.boxed),
                       len(drawing.sketched))
    assert f"{len(drawing.sketched)} drawn as their footprint or axis" in title
    assert drawing.png.startswith(b"\x89PNG")


def test_the_render_child_result_carries_the_sketched_elements(revit_path: Path, revit_model, tmp_path: Path):
    storey = next(s for s in storeys_by_elevation(revit_model)
                  if any(e.is_a("IfcWall") for e in elements_of_storey(s)))
    view = view_names(revit_model)[storeys_by_elevation(revit_model).index(storey)]
    request = {"model_path": str(revit_path), "view": view, "element_ids": [], "max_px": 600,
               "png_path": str(tmp_path / "view.png"), "result_path": str(tmp_path / "result.json"),
               "deadline": time.time() - 1}
    result = render_request(request)
    assert result["ok"] and result["sketched"], result
    walls = {e.id() for e in elements_of_storey(storey) if e.is_a("IfcWall")}
    assert walls <= set(result["sketched"]) | set(result["boxed"]) | set(result["undrawn"])
    assert json.loads(json.dumps(result)) == result
    assert np.frombuffer((tmp_path / "view.png").read_bytes()[:8], dtype=np.uint8).tobytes() == b"\x89PNG\r\n\x1a\n"
