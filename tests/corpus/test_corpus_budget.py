"""Every view answers within its budget (issue 25, item 3), on a real export (Revit's Office A):

- tessellation stops at the view's deadline; what it did not reach is undrawn and counted apart, and what
  was built before (the mesh cache) is drawn;
- a view that has elements but could draw none of them is a failure saying so, never a blank image.
"""
from __future__ import annotations

import io
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from ifc_host.render_axonometric import draw_axonometric
from ifc_host.render_bodies import BodyOptions, NothingDrawn, has_body, tessellate_bodies
from ifc_host.render_child import render_request
from ifc_host.render_scene import all_elements, open_model, resolve_view
from tests.corpus.corpus_files import corpus_dirs, manifest

FILE = "Office_A_20110811.ifc"
NO_STAND_INS_FILE = "Building-Architecture.ifc"


@pytest.fixture(scope="module")
def office() -> tuple[Path, object]:
    entry = next(e for e in manifest() if e.file == FILE)
    if not entry.present():
        pytest.fail(f"{FILE} is not in {corpus_dirs()} (corpus/SOURCES.md says where it comes from)")
    return entry.location, open_model(str(entry.location))


def test_what_the_deadline_did_not_reach_is_undrawn_counted_apart_and_said_on_the_image(office, tmp_path: Path):
    path, model = office
    elements = [e for e in all_elements(model) if not e.is_a("IfcSpace")]
    with_body = [e for e in elements if has_body(e)]
    doors = [e for e in with_body if e.is_a("IfcDoor")]  # the part an earlier view built
    assert doors and len(with_body) > 2 * len(doors)
    cache = tmp_path / "meshes"
    built = tessellate_bodies(model, doors, BodyOptions(cache_dir=str(cache)))  # an earlier view built the doors
    assert set(built.meshes) == {w.id() for w in doors}

    late = BodyOptions(cache_dir=str(cache), deadline=time.time() - 1)  # the budget is spent before it starts
    bodies = tessellate_bodies(model, elements, late)
    assert bodies.sketched  # out of time, Revit's walls are drawn from their Axis (render_stand_ins.py)
    # and its windows as the opening each fills (Office A has no Box representation anywhere)
    assert set(bodies.boxed) == {e.id() for e in with_body if e.is_a("IfcWindow")}
    assert set(bodies.meshes) == set(built.meshes) | set(bodies.sketched) | set(bodies.boxed)
    rest = {e.id() for e in with_body} - set(built.meshes) - set(bodies.sketched) - set(bodies.boxed)
    assert set(bodies.out_of_time) == rest and set(bodies.undrawn) == rest
    drawing = draw_axonometric(model, resolve_view(model, "3D", []), [], 600, late)
    assert set(drawing.out_of_time) == rest
    image = np.asarray(Image.open(io.BytesIO(drawing.png)).convert("RGB")).astype(int)
    assert (image[40:] < 235).any(axis=2).sum() > 1000  # the doors are drawn


def test_a_view_that_could_draw_nothing_says_so_instead_of_a_blank_image(tmp_path: Path):
    # A file with no Box, FootPrint or Axis to stand in for what the budget did not reach (Office A's walls have an Axis).
    entry = next(e for e in manifest() if e.file == NO_STAND_INS_FILE)
    if not entry.present():
        pytest.fail(f"{NO_STAND_INS_FILE} is not in {corpus_dirs()} (corpus/SOURCES.md says where it comes from)")
    path = entry.location
    request = {"model_path": str(path), "view": "3D", "element_ids": [], "max_px": 300,
               "png_path": str(tmp_path / "v.png"), "result_path": str(tmp_path / "r.json"),
               "deadline": time.time() - 1}
    with pytest.raises(NothingDrawn, match=r"nothing of view '3D' could be drawn: it has \d+ elements with a body, "
                                           r"and \d+ were not reached in the time allowed"):
        render_request(request)
    assert not (tmp_path / "v.png").exists()
