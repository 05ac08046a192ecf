"""Out of time, a window or a door without a Box is drawn as the opening it fills (a plain extrusion through the
wall), counted with the boxes, never kept as its body; a plan says so on the image.

Real files from the shared corpus ($NEXUS_IFC_CORPUS, `. scripts/corpus.sh`; a missing file fails the test):
Revit's duplex (38 windows and doors, each filling an extruded opening, no Box anywhere) and IfcOpenHouse (one of
its 6 windows and doors fills an extruded opening)."""
from __future__ import annotations

import time
from pathlib import Path

import ifcopenshell
import numpy as np
import pytest

from ifc_host.render_bodies import BodyOptions, has_body, tessellate_bodies
from ifc_host.render_geometry import footprint
from ifc_host.render_plan import _title as plan_title
from ifc_host.render_plan import draw_plan
from ifc_host.render_scene import resolve_view, storeys_by_elevation, view_names
from ifc_host.render_stand_ins import opening_stand_ins
from ifc_host.spatial import elements_of_storey
from tests.corpus.corpus_files import corpus_dirs

REVIT_FILE = "duplex.ifc"
IFCOPENHOUSE_FILE = "IfcOpenHouse_IFC4.ifc"


def _open(name: str) -> ifcopenshell.file:
    found = [d / name for d in corpus_dirs() if (d / name).is_file()]
    assert found, f"{name} is in none of the corpus folders {[str(d) for d in corpus_dirs()]}: " \
                  "run `. scripts/corpus.sh` beside ../shared/corpus"
    return ifcopenshell.open(str(found[0]))


@pytest.fixture(scope="module")
def revit_model() -> ifcopenshell.file:
    return _open(REVIT_FILE)


def _fillings(model: ifcopenshell.file) -> list[ifcopenshell.entity_instance]:
    return [e for e in model.by_type("IfcWindow") + model.by_type("IfcDoor") if has_body(e)]


def test_an_opening_stand_in_encloses_the_window_or_door_the_kernel_builds(revit_model):
    elements = _fillings(revit_model)
    assert len(elements) == 38
    built = tessellate_bodies(revit_model, elements, BodyOptions()).meshes
    started = time.process_time()
    stand_ins = opening_stand_ins(revit_model, elements)
    print(f"{len(stand_ins)} opening stand-ins in {time.process_time() - started:.3f} s of CPU")
    assert set(stand_ins) == {e.id() for e in elements}
    for element_id, opening in stand_ins.items():
        mesh = built[element_id]
        assert opening.element_id == element_id and len(opening.faces) >= 12
        # Revit's door casings stand 7.6 cm out of the wall on both sides and above the opening, a few windows'
        # frames 7 cm to the sides: the body lies within the opening grown by 10 cm, and covers a good part of it.
        tolerance = 0.10
        assert np.all(mesh.verts.min(axis=0) >= opening.verts.min(axis=0) - tolerance), element_id
        assert np.all(mesh.verts.max(axis=0) <= opening.verts.max(axis=0) + tolerance), element_id
        area, exact = footprint(opening), footprint(mesh)
        assert area.intersection(exact).area >= 0.4 * exact.area, element_id


def test_only_fillings_of_extruded_openings_get_one():
    model = _open(IFCOPENHOUSE_FILE)
    elements = model.by_type("IfcWindow") + model.by_type("IfcDoor")
    stand_ins = opening_stand_ins(model, elements)
    assert len(elements) == 6 and list(stand_ins) == [e.id() for e in elements if e.FillsVoids]  # 5 fill none
    assert not opening_stand_ins(model, model.by_type("IfcWall"))  # a wall fills no opening


def test_out_of_time_windows_and_doors_are_drawn_as_their_openings_counted_as_boxes(revit_model):
    elements = _fillings(revit_model)
    memory: dict = {}
    bodies = tessellate_bodies(revit_model, elements, BodyOptions(deadline=time.time() - 1, memory=memory))
    assert sorted(bodies.boxed) == sorted(e.id() for e in elements)
    assert not bodies.sketched and not bodies.out_of_time and not bodies.undrawn and not bodies.nothing_drawn
    assert not memory  # a stand-in is never kept as the element's body for the views to come


def test_a_plan_out_of_time_draws_the_openings_and_says_so_on_the_image(revit_model, tmp_path: Path):
    storey = next(s for s in storeys_by_elevation(revit_model)
                  if any(e.is_a("IfcWindow") for e in elements_of_storey(s)))
    here = {e.id() for e in _fillings(revit_model)} & {e.id() for e in elements_of_storey(storey)}
    spec = resolve_view(revit_model, view_names(revit_model)[storeys_by_elevation(revit_model).index(storey)], [])
    drawing = draw_plan(revit_model, spec, [], 800, BodyOptions(deadline=time.time() - 1))
    assert here <= set(drawing.boxed)
    assert not set(drawing.out_of_time) & here
    title = plan_title(spec, 0, 0, len(drawing.undrawn), len(drawing.out_of_time), len(drawing.boxed),
                       len(drawing.sketched))
    assert f"{len(drawing.boxed)} drawn as boxes" in title
    (tmp_path / "plan.png").write_bytes(drawing.png)
    assert drawing.png.startswith(b"\x89PNG")


def _many_faced_window(model: ifcopenshell.file, rows: int, columns: int) -> ifcopenshell.entity_instance:
    """The first of the model's windows, its body replaced by a sheet of 2 * rows * columns triangles (in the
    window's frame, across its opening), as Revit writes its detailed windows: an IfcFaceBasedSurfaceModel."""
    window = next(w for w in model.by_type("IfcWindow") if opening_stand_ins(model, [w]))
    body = next(r for r in window.Representation.Representations if r.RepresentationIdentifier == "Body")
    width, height = float(window.OverallWidth or 900), float(window.OverallHeight or 1200)
    grid = [[model.createIfcCartesianPoint((width * i / columns, 0.0, height * j / rows)) for j in range(rows + 1)]
            for i in range(columns + 1)]
    faces = []
    for i in range(columns):
        for j in range(rows):
            for corners in ((grid[i][j], grid[i + 1][j], grid[i + 1][j + 1]), (grid[i][j], grid[i + 1][j + 1], grid[i][j + 1])):
                faces.append(model.createIfcFace([model.createIfcFaceOuterBound(model.createIfcPolyLoop(corners), True)]))
    sheet = model.createIfcFaceBasedSurfaceModel([model.createIfcConnectedFaceSet(faces)])
    window.Representation.Representations = [model.createIfcShapeRepresentation(
        body.ContextOfItems, "Body", "SurfaceModel", [sheet])]
    return window


def test_a_many_faced_body_that_would_not_fit_the_budget_is_left_for_later_and_drawn_as_its_opening(monkeypatch):
    from ifc_host import render_bodies

    model = _open(REVIT_FILE)
    window = _many_faced_window(model, 100, 200)  # 40 000 triangles
    others = [e for e in _fillings(model) if e.id() != window.id()][:8]
    # A slower kernel by the estimate (40 s for this window), so that the budget leaves the others (about 0.2 s of
    # CPU) ample time however loaded the machine, and the window none.
    monkeypatch.setattr(render_bodies, "SECONDS_PER_FACE", 1e-3)
    budget_s = 5.0
    assert 40_000 > render_bodies.COSTLY_FACES and 40_000 * render_bodies.SECONDS_PER_FACE > budget_s
    memory: dict = {}
    bodies = tessellate_bodies(model, [window, *others], BodyOptions(deadline=time.time() + budget_s, memory=memory))
    assert window.id() in bodies.boxed and window.id() not in bodies.undrawn  # deferred: its opening stands in
    assert window.id() not in memory and set(memory) == {e.id() for e in others}  # the others were built
    built = tessellate_bodies(model, [window], BodyOptions())  # no budget: built, however many faces
    assert not built.boxed and len(built.meshes[window.id()].faces) == 40_000


def test_a_first_view_draws_a_costly_body_as_its_stand_in_while_it_is_built_and_the_next_view_draws_it(tmp_path):
    """A render server's first view of a model waits for its costly bodies only within the first-view budget: the
    window of 40 000 triangles is handed to a background build (a fork) and drawn as its opening meanwhile, said as
    being built; the next view (no budget of its own here) waits for that build and draws the window's body,
    read from the mesh cache, without building it again (its journal has no batch of the kernel)."""
    from ifc_host.render_background import BackgroundBuilds

    model = _open(REVIT_FILE)
    window = _many_faced_window(model, 100, 200)  # 40 000 triangles, over COSTLY_FACES
    builds, memory, cache = BackgroundBuilds(), {}, str(tmp_path / "meshes")
    first_journal, next_journal = tmp_path / "first.txt", tmp_path / "next.txt"
    try:
        first = tessellate_bodies(model, [window], BodyOptions(
            deadline=time.time() + 60, costly_deadline=time.time() - 1, memory=memory, cache_dir=cache,
            background=builds, journal_path=str(first_journal)))
        assert first.boxed == [window.id()] and first.later == [window.id()]  # its opening, said as being built
        assert not first.undrawn and not first.out_of_time and window.id() not in memory
        assert window.id() in builds.pending() or window.id() in builds.reported
        later = tessellate_bodies(model, [window], BodyOptions(memory=memory, cache_dir=cache, background=builds,
                                                               journal_path=str(next_journal)))
        assert not later.boxed and not later.later and not later.undrawn
        assert len(later.meshes[window.id()].faces) == 40_000 and len(memory[window.id()].faces) == 40_000
        assert builds.reported == {window.id()} and not builds.failed and not builds.pending()
        journal = "".join(path.read_text() for path in (first_journal, next_journal) if path.exists())
        assert "batch" not in journal  # neither view ran the kernel on it: the build did, once
    finally:
        builds.close()


def test_where_a_fork_is_not_safe_a_first_view_draws_the_costly_body_as_its_stand_in_and_a_later_one_builds_it(
        monkeypatch, tmp_path):
    """Windows and macOS: no background build (render_background.AVAILABLE). The first view's budget still holds:
    the window that does not fit is its opening, not said as being built; the next view builds it itself."""
    from ifc_host import render_background

    monkeypatch.setattr(render_background, "AVAILABLE", False)
    model = _open(REVIT_FILE)
    window = _many_faced_window(model, 100, 200)  # 40 000 triangles, over COSTLY_FACES
    builds, memory, cache = render_background.BackgroundBuilds(), {}, str(tmp_path / "meshes")
    first = tessellate_bodies(model, [window], BodyOptions(
        deadline=time.time() + 60, costly_deadline=time.time() - 1, memory=memory, cache_dir=cache,
        background=builds))
    assert first.boxed == [window.id()] and not first.later and not builds.pending() and not builds.reported
    later = tessellate_bodies(model, [window], BodyOptions(memory=memory, cache_dir=cache, background=builds))
    assert not later.boxed and len(later.meshes[window.id()].faces) == 40_000
