"""Out of time, an element with a Box representation is drawn as that box, counted apart, never kept as its body.

Real file: ArchiCAD 20's FZK-Haus from the shared corpus (107 elements carry an IfcBoundingBox 'Box'); the corpus
folders come from $NEXUS_IFC_CORPUS (`. scripts/corpus.sh`), and a missing file fails the test."""
from __future__ import annotations

import time
from pathlib import Path

import ifcopenshell
import numpy as np
import pytest

from ifc_host.render_bodies import BodyOptions, has_body, tessellate_bodies
from ifc_host.render_plan import _title as plan_title
from ifc_host.render_plan import draw_plan
from ifc_host.render_scene import resolve_view, storeys_by_elevation
from ifc_host.render_stand_ins import box_stand_ins
from ifc_host.spatial import elements_of_storey
from tests.corpus.corpus_files import corpus_dirs

ARCHICAD_FILE = "AC20-FZK-Haus.ifc"


@pytest.fixture(scope="module")
def archicad_model() -> ifcopenshell.file:
    found = [d / ARCHICAD_FILE for d in corpus_dirs() if (d / ARCHICAD_FILE).is_file()]
    assert found, f"{ARCHICAD_FILE} is in none of the corpus folders {[str(d) for d in corpus_dirs()]}: " \
                  "run `. scripts/corpus.sh` beside ../shared/corpus"
    return ifcopenshell.open(str(found[0]))


def _boxed_elements(model: ifcopenshell.file) -> list[ifcopenshell.entity_instance]:
    return [e for e in model.by_type("IfcProduct") if has_body(e) and e.Representation is not None
            and any(r.RepresentationIdentifier == "Box" for r in e.Representation.Representations)]


def test_a_box_stand_in_encloses_the_body_the_kernel_builds(archicad_model):
    elements = _boxed_elements(archicad_model)[:12]
    assert len(elements) == 12
    built = tessellate_bodies(archicad_model, elements, BodyOptions()).meshes
    boxes = box_stand_ins(archicad_model, elements)
    assert set(boxes) == {e.id() for e in elements}
    for element_id, box in boxes.items():
        mesh = built[element_id]
        assert len(box.faces) == 12
        tolerance = 0.02  # metres: the exporter rounds its boxes
        assert np.all(mesh.verts.min(axis=0) >= box.verts.min(axis=0) - tolerance), element_id
        assert np.all(mesh.verts.max(axis=0) <= box.verts.max(axis=0) + tolerance), element_id


def test_out_of_time_the_elements_with_a_box_are_drawn_as_boxes_and_counted_apart(archicad_model):
    elements = _boxed_elements(archicad_model)
    memory: dict = {}
    bodies = tessellate_bodies(archicad_model, elements, BodyOptions(deadline=time.time() - 1, memory=memory))
    assert sorted(bodies.boxed) == sorted(e.id() for e in elements)
    assert set(bodies.meshes) == {e.id() for e in elements}
    assert not bodies.out_of_time and not bodies.undrawn and not bodies.nothing_drawn
    assert not memory  # a stand-in is never kept as the element's body for the views to come


def test_a_plan_out_of_time_draws_boxes_and_says_so_on_the_image(archicad_model, tmp_path: Path):
    storey = storeys_by_elevation(archicad_model)[0]
    spec = resolve_view(archicad_model, _plan_name(archicad_model, storey), [])
    boxed_here = {e.id() for e in _boxed_elements(archicad_model)} & {e.id() for e in elements_of_storey(storey)}
    assert boxed_here
    drawing = draw_plan(archicad_model, spec, [], 800, BodyOptions(deadline=time.time() - 1))
    assert set(drawing.boxed) == boxed_here
    assert not set(drawing.out_of_time) & boxed_here
    title = plan_title(spec, 0, 0, len(drawing.undrawn), len(drawing.out_of_time), len(drawing.boxed))
    assert f"{len(boxed_here)} drawn as boxes" in title
    (tmp_path / "plan.png").write_bytes(drawing.png)
    assert drawing.png.startswith(b"\x89PNG")


def _plan_name(model: ifcopenshell.file, storey: ifcopenshell.entity_instance) -> str:
    from ifc_host.render_scene import view_names

    return view_names(model)[storeys_by_elevation(model).index(storey)]
