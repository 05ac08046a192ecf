"""Plan and axonometric views: exact size, visible highlights, clear errors, and a crash-proof child."""
from __future__ import annotations

import io
import sys
import time
from pathlib import Path

import ifcopenshell
import ifcopenshell.api
import ifcopenshell.util.placement
import numpy as np
import pytest
from PIL import Image

from ifc_host import render, render_pool
from ifc_host.render import HIGHLIGHT, RenderError, render_view, render_view_from_bytes
from ifc_host.render_palette import WALL
from ifc_host.sample import write_sample_model


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, ifcopenshell.file]:
    path = tmp_path_factory.mktemp("render") / "office.ifc"
    write_sample_model(path, storeys=3)
    return str(path), ifcopenshell.open(str(path))


def door(model: ifcopenshell.file, tag: str) -> ifcopenshell.entity_instance:
    return next(d for d in model.by_type("IfcDoor") if d.Tag == tag)


def pixels(png: bytes) -> np.ndarray:
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG"
    return np.asarray(image.convert("RGB")).astype(int)


def near(rgb: np.ndarray, colour: tuple[int, int, int], tolerance: int = 12) -> np.ndarray:
    return (np.abs(rgb - np.array(colour)) <= tolerance).all(axis=2)


def orange(rgb: np.ndarray) -> np.ndarray:
    """Shaded variants of the highlight colour (the axonometric view shades faces)."""
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    return (r > 120) & (g > 0.2 * r) & (g < 0.5 * r) & (b < 30)


def test_plan_is_a_png_whose_long_edge_is_exactly_max_px(sample):
    path, _ = sample
    for max_px in (800, 333):
        view = render_view(path, "Level 1", [], max_px)
        image = Image.open(io.BytesIO(view.png))
        assert image.size == (view.width, view.height)
        assert max(view.width, view.height) == max_px and min(view.width, view.height) > max_px // 2
        assert view.view == "Level 1"


def test_highlighted_door_is_coloured_where_the_door_stands(sample):
    path, model = sample
    target = door(model, "D102")
    view = render_view(path, "Level 1", [target.id()], 1000)
    rgb = pixels(view.png)
    lit = near(rgb, HIGHLIGHT)
    assert lit.sum() > 150

    # Locate the building in the image by its walls (exterior wall faces at x = -0.15 and 16.15 m,
    # y = -0.15 and 14.15 m) and check the orange pixels sit at the door (centre x 4.95 m, y 6 m).
    wall_ys, wall_xs = np.nonzero(near(rgb, WALL, 2))
    left, right, top, bottom = wall_xs.min(), wall_xs.max(), wall_ys.min(), wall_ys.max()
    px_per_m = (right - left) / 16.3
    matrix = ifcopenshell.util.placement.get_local_placement(target.ObjectPlacement)
    centre = matrix[:3, 3] + matrix[:3, :3] @ np.array([0.45, 0.1, 0.0])  # middle of the 0.9 x 0.2 m door
    expected_x = left + (centre[0] + 0.15) * px_per_m
    expected_y = bottom - (centre[1] + 0.15) * px_per_m
    lit_ys, lit_xs = np.nonzero(lit)
    assert abs(lit_xs.mean() - expected_x) < 1.0 * px_per_m
    assert abs(lit_ys.mean() - expected_y) < 1.0 * px_per_m
    assert abs((bottom - top) / px_per_m - 14.3) < 0.3  # the plan keeps its proportions


def test_nothing_is_highlight_coloured_without_element_ids(sample):
    path, _ = sample
    for view_name in ("Level 2", "3D"):
        rgb = pixels(render_view(path, view_name, [], 600).png)
        assert near(rgb, HIGHLIGHT, 40).sum() == 0
        assert orange(rgb).sum() == 0


def test_default_view_is_the_storey_of_the_highlighted_element(sample):
    path, model = sample
    assert render_view(path, None, [door(model, "D305").id()], 300).view == "Level 3"
    assert render_view(path, None, [], 300).view == "Level 1"
    assert render_view(path, None, [999_999_999], 300).view == "Level 1"


def test_unknown_view_raises_an_error_listing_the_views(sample):
    path, _ = sample
    with pytest.raises(RenderError) as caught:
        render_view(path, "Roof", [], 300)
    assert str(caught.value).startswith("no storey named 'Roof'; views: Level 1, Level 2, Level 3, 3D")


def test_axonometric_views_show_highlighted_elements_in_orange(sample):
    path, model = sample
    wall = model.by_type("IfcWall")[0]
    whole = render_view(path, "3D", [wall.id()], 700)
    assert whole.view == "3D" and max(whole.width, whole.height) == 700
    assert orange(pixels(whole.png)).sum() > 500
    one_storey = render_view(path, "3d: level 2", [door(model, "D203").id()], 500)
    assert one_storey.view == "3D: Level 2"
    assert orange(pixels(one_storey.png)).sum() > 20


def test_elevations_show_the_facade_seen_from_each_side(sample):
    path, model = sample
    # A window at the west end of the south facade (x 1.2 m of 16 m): left of the middle seen from the south,
    # right of it seen from the north.
    window = next(w for w in model.by_type("IfcWindow")
                  if tuple(ifcopenshell.util.placement.get_local_placement(w.ObjectPlacement)[:2, 3].round(2)) ==
                  (1.2, -0.05))
    south = render_view(path, "south elevation", [window.id()], 600)
    assert south.view == "South elevation" and south.width == 600 and south.height < 450  # wide, not tall
    lit_x = np.nonzero(orange(pixels(south.png)))[1]
    assert len(lit_x) > 100 and lit_x.mean() < 0.3 * south.width
    north = render_view(path, "North elevation", [window.id()], 600)
    assert np.nonzero(orange(pixels(north.png)))[1].mean() > 0.7 * north.width
    plain = pixels(render_view(path, "West elevation", [], 600).png)
    assert orange(plain).sum() == 0 and (plain < 200).any(axis=2).mean() > 0.2


def test_a_model_held_in_memory_renders_the_same_image(sample):
    path, model = sample
    ids = [door(model, "D101").id()]
    from_file = render_view(path, "Level 1", ids, 400)
    from_text = render_view_from_bytes(model.to_string(), "Level 1", ids, 400)
    assert from_text == from_file


def test_a_crashing_renderer_raises_render_error_and_the_caller_survives(sample, monkeypatch):
    path, _ = sample
    monkeypatch.setattr(render, "SERVER_COMMAND", (sys.executable, "-c", "import os; os.abort()"))
    with pytest.raises(RenderError, match=r"crashed .*SIGABRT"):
        render_view(path, "Level 1", [], 300)


def test_a_hanging_renderer_is_stopped_at_the_timeout(sample, monkeypatch):
    path, _ = sample
    monkeypatch.setattr(render, "SERVER_COMMAND", (sys.executable, "-c", "import time; time.sleep(60)"))
    started = time.monotonic()
    with pytest.raises(RenderError, match="timed out after 1 s"):
        render_view(path, "Level 1", [], 300, timeout_s=1)
    assert time.monotonic() - started < 10


def test_a_corrupt_or_missing_model_raises_render_error(tmp_path):
    garbage = tmp_path / "garbage.ifc"
    garbage.write_bytes(b"this is not an IFC file at all\x00\xff")
    with pytest.raises(RenderError, match="cannot read the model"):
        render_view(str(garbage), "Level 1", [], 300)
    with pytest.raises(RenderError, match="no model file"):
        render_view(str(tmp_path / "missing.ifc"), "Level 1", [], 300)


def test_sizes_outside_the_protocol_range_are_refused(sample):
    path, _ = sample
    with pytest.raises(RenderError, match="max_px"):
        render_view(path, "Level 1", [], 8)


def test_a_tiny_image_still_has_the_exact_size(sample):
    path, _ = sample
    view = render_view(path, "Level 1", [], 16)
    assert max(view.width, view.height) == 16 and Image.open(io.BytesIO(view.png)).size == (view.width, view.height)



def test_a_millimetre_model_is_cut_above_its_own_storey_level(tmp_path):
    import ifcopenshell.api.aggregate
    import ifcopenshell.api.context
    import ifcopenshell.api.geometry
    import ifcopenshell.api.project
    import ifcopenshell.api.root
    import ifcopenshell.api.spatial
    import ifcopenshell.api.unit

    model = ifcopenshell.api.project.create_file()
    project = ifcopenshell.api.root.create_entity(model, ifc_class="IfcProject")
    ifcopenshell.api.unit.assign_unit(model)  # millimetres
    body = ifcopenshell.api.context.add_context(model, context_type="Model", context_identifier="Body",
                                                target_view="MODEL_VIEW",
                                                parent=ifcopenshell.api.context.add_context(model, "Model"))
    building = ifcopenshell.api.root.create_entity(model, ifc_class="IfcBuilding")
    ifcopenshell.api.aggregate.assign_object(model, products=[building], relating_object=project)
    storey = ifcopenshell.api.root.create_entity(model, ifc_class="IfcBuildingStorey", name="Upper")
    ifcopenshell.api.aggregate.assign_object(model, products=[storey], relating_object=building)
    lifted = np.eye(4)
    lifted[2, 3] = 6.0  # metres; stored as 6000 mm
    ifcopenshell.api.geometry.edit_object_placement(model, product=storey, matrix=lifted)
    wall = ifcopenshell.api.root.create_entity(model, ifc_class="IfcWall")
    ifcopenshell.api.spatial.assign_container(model, products=[wall], relating_structure=storey)
    ifcopenshell.api.geometry.edit_object_placement(model, product=wall, matrix=lifted)
    ifcopenshell.api.geometry.assign_representation(model, product=wall, representation=(
        ifcopenshell.api.geometry.add_wall_representation(model, context=body, length=5, height=3, thickness=0.3)))
    assert storey.ObjectPlacement.RelativePlacement.Location.Coordinates[2] == pytest.approx(6000)
    path = tmp_path / "mm.ifc"
    model.write(str(path))

    rgb = pixels(render_view(str(path), "Upper", [wall.id()], 500).png)
    assert near(rgb, HIGHLIGHT).sum() > 0.6 * rgb.shape[0] * rgb.shape[1] * 0.5  # cut at 7.2 m and filled, not outlined


# --- Files from other tools (issue 12): what broke on real exports, rebuilt here so CI covers it without the
# corpus. Each builder writes a small model with IfcOpenShell's API, shaped like the export that failed.

def _model_with_storeys(names: list[str | None], unit_mm: bool = False) -> tuple[ifcopenshell.file, dict]:
    import ifcopenshell.api.aggregate
    import ifcopenshell.api.context
    import ifcopenshell.api.project
    import ifcopenshell.api.root
    import ifcopenshell.api.unit

    model = ifcopenshell.api.project.create_file()
    project = ifcopenshell.api.root.create_entity(model, ifc_class="IfcProject")
    ifcopenshell.api.unit.assign_unit(model, length={"is_metric": True, "raw": "METRES"})
    body = ifcopenshell.api.context.add_context(model, context_type="Model", context_identifier="Body",
                                                target_view="MODEL_VIEW",
                                                parent=ifcopenshell.api.context.add_context(model, "Model"))
    building = ifcopenshell.api.root.create_entity(model, ifc_class="IfcBuilding", name="B")
    ifcopenshell.api.aggregate.assign_object(model, products=[building], relating_object=project)
    storeys = []
    for level, name in enumerate(names):
        storey = ifcopenshell.api.root.create_entity(model, ifc_class="IfcBuildingStorey", name=name)
        ifcopenshell.api.aggregate.assign_object(model, products=[storey], relating_object=building)
        ifcopenshell.api.geometry.edit_object_placement(model, product=storey, matrix=_at(0, 0, 3.0 * level))
        storeys.append(storey)
    return model, {"body": body, "storeys": storeys}


def _at(x: float, y: float, z: float) -> np.ndarray:
    matrix = np.eye(4)
    matrix[:3, 3] = (x, y, z)
    return matrix


def _box(model, body, storey, ifc_class: str, at: np.ndarray, length: float, height: float, thickness: float,
         **attributes) -> ifcopenshell.entity_instance:
    import ifcopenshell.api.root
    import ifcopenshell.api.spatial

    element = ifcopenshell.api.root.create_entity(model, ifc_class=ifc_class)
    for name, value in attributes.items():
        setattr(element, name, value)
    ifcopenshell.api.spatial.assign_container(model, products=[element], relating_structure=storey)
    ifcopenshell.api.geometry.edit_object_placement(model, product=element, matrix=at)
    ifcopenshell.api.geometry.assign_representation(model, product=element, representation=(
        ifcopenshell.api.geometry.add_wall_representation(model, context=body, length=length, height=height,
                                                          thickness=thickness)))
    return element


def test_unnamed_and_duplicate_named_storeys_are_views_by_their_step_id(tmp_path):
    from ifc_host.render_scene import resolve_view, view_names

    model, parts = _model_with_storeys([None, "Level 1", "Level 1", "Top"])
    unnamed, first, second, top = parts["storeys"]
    for storey in parts["storeys"]:
        _box(model, parts["body"], storey, "IfcWall", _at(0, 0, 3.0 * parts["storeys"].index(storey)), 5, 2.8, 0.3)
    path = tmp_path / "storeys.ifc"
    model.write(str(path))

    assert view_names(model) == [f"#{unnamed.id()}", f"#{first.id()}", f"#{second.id()}", "Top", "3D",
                                 "North elevation", "East elevation", "South elevation", "West elevation"]
    assert resolve_view(model, f"#{second.id()}", []).storey == second
    assert resolve_view(model, f"3D: #{unnamed.id()}", []).name == f"3D: #{unnamed.id()}"
    assert render_view(str(path), f"#{unnamed.id()}", [], 300).view == f"#{unnamed.id()}"
    assert render_view(str(path), f"3d: #{second.id()}", [], 300).view == f"3D: #{second.id()}"
    with pytest.raises(RenderError, match=rf"2 storeys are named 'Level 1'; name one by its step id: "
                                          rf"#{first.id()}, #{second.id()}"):
        render_view(str(path), "Level 1", [], 300)
    with pytest.raises(RenderError, match=rf"no storey named '#999999'; views: #{unnamed.id()}, "):
        render_view(str(path), "#999999", [], 300)


def test_a_sliding_door_is_drawn_in_plan(tmp_path):
    # AC20-FZK-Haus's plan failed on its sliding door ("need at least one array to concatenate").
    model, parts = _model_with_storeys(["Ground"])
    storey, body = parts["storeys"][0], parts["body"]
    _box(model, body, storey, "IfcWall", _at(0, 0, 0), 6, 2.8, 0.3)
    sliding = _box(model, body, storey, "IfcDoor", _at(2, -0.05, 0), 1.8, 2.1, 0.4, OperationType="SLIDING_TO_LEFT",
                   Tag="S1")
    path = tmp_path / "sliding.ifc"
    model.write(str(path))
    view = render_view(str(path), "Ground", [sliding.id()], 500)
    assert near(pixels(view.png), HIGHLIGHT).sum() > 100


def test_a_wall_clipped_by_an_unbounded_half_space_is_drawn_clipped(tmp_path):
    # AC20-FZK-Haus: walls clipped by the roof plane stood 3 m above the roof in 3D.
    from ifc_host.render_bodies import FIRST_ATTEMPT, tessellate_bodies

    model, parts = _model_with_storeys(["Ground"])
    storey, body = parts["storeys"][0], parts["body"]
    wall = _box(model, body, storey, "IfcWall", _at(0, 0, 0), 6, 6.0, 0.3)
    solid = wall.Representation.Representations[0].Items[0]
    plane = model.createIfcPlane(model.createIfcAxis2Placement3D(
        model.createIfcCartesianPoint((0.0, 0.0, 3.0)), model.createIfcDirection((0.0, 0.0, 1.0)),
        model.createIfcDirection((1.0, 0.0, 0.0))))
    clipped = model.createIfcBooleanClippingResult("DIFFERENCE", solid,
                                                   model.createIfcHalfSpaceSolid(plane, False))
    representation = wall.Representation.Representations[0]
    representation.Items = [clipped]
    representation.RepresentationType = "Clipping"
    path = tmp_path / "clipped.ifc"
    model.write(str(path))

    bodies = tessellate_bodies(model, [wall], FIRST_ATTEMPT)
    assert bodies.meshes[wall.id()].z_range == pytest.approx((0.0, 3.0), abs=0.01)
    # Drawn clipped, the 6 m wall's axonometric is about half as tall as it would be unclipped.
    clipped_view = render_view(str(path), "3D", [wall.id()], 400)
    assert clipped_view.undrawn == () and orange(pixels(clipped_view.png)).sum() > 500


def test_a_column_on_a_grid_placement_stands_at_the_axes_intersection(tmp_path):
    # The buildingSMART grid-placement example: neither geometry kernel places IfcGridPlacement.
    from ifc_host.render_bodies import FIRST_ATTEMPT, tessellate_bodies

    model, parts = _model_with_storeys(["Ground"])
    storey, body = parts["storeys"][0], parts["body"]
    grid_placement = model.createIfcLocalPlacement(storey.ObjectPlacement, model.createIfcAxis2Placement3D(
        model.createIfcCartesianPoint((10.0, 0.0, 0.0))))
    line = model.createIfcPolyline
    point = model.createIfcCartesianPoint
    u_axis = model.createIfcGridAxis("A", line([point((-5.0, 2.0)), point((20.0, 2.0))]), True)
    v_axis = model.createIfcGridAxis("1", line([point((3.0, -5.0)), point((3.0, 20.0))]), True)
    model.createIfcGrid(ifcopenshell.guid.new(), None, "Grid", None, None, grid_placement, None, [u_axis], [v_axis])
    column = _box(model, body, storey, "IfcColumn", _at(0, 0, 0), 0.4, 3.0, 0.4)
    column.ObjectPlacement = model.createIfcGridPlacement(
        model.createIfcVirtualGridIntersection([u_axis, v_axis], [0.0, 0.0, 0.0]), None)
    path = tmp_path / "grid.ifc"
    model.write(str(path))

    mesh = tessellate_bodies(model, [column], FIRST_ATTEMPT).meshes[column.id()]
    low, high = mesh.verts.min(axis=0), mesh.verts.max(axis=0)
    # The box runs 0.4 m along x from the placement, 0.4 m thick: grid origin x 10 + axis "1" at x 3, axis "A" y 2.
    assert (low[0], high[0]) == pytest.approx((13.0, 13.4), abs=0.01)
    assert low[1] >= 1.59 and high[1] <= 2.41 and high[1] - low[1] == pytest.approx(0.4, abs=0.01)
    view = render_view(str(path), "Ground", [column.id()], 300)
    assert view.undrawn == () and near(pixels(view.png), HIGHLIGHT).sum() > 50


@pytest.fixture
def fresh_recipes(monkeypatch):
    """The renderer remembers crash recoveries per model content: start each test without any."""
    from collections import OrderedDict
    monkeypatch.setattr(render, "_recipes", OrderedDict())


# A stand-in for a native crash on one element: the real child, except that it journals "start <library> <id>"
# and aborts while the request would build element TARGET with that library; the count of requests goes to COUNT.
_CRASHING_CHILD = """
import json, os, sys
from ifc_host.render_child import render_request, serve
target, library, count = int(os.environ["TARGET"]), os.environ["LIBRARY"], os.environ["COUNT"]
def handle(request):
    with open(count, "a") as handle:
        handle.write("x")
    building_with = "skip" if target in request["skip"] else "opencascade" if target in request["exact"] else (
        "manifold")
    if building_with == library or (library == "batch" and not request["careful"]):
        with open(request["journal_path"], "a") as journal:
            journal.write("batch\\n" if library == "batch" else f"start {library} {target}\\n")
        os.abort()
    return render_request(request)
sys.exit(serve(handle))
"""


def _crashing_child(monkeypatch, tmp_path, target: int, library: str) -> Path:
    count = tmp_path / f"starts-{library}"
    monkeypatch.setenv("TARGET", str(target))
    monkeypatch.setenv("LIBRARY", library)
    monkeypatch.setenv("COUNT", str(count))
    monkeypatch.setattr(render, "SERVER_COMMAND", (sys.executable, "-c", _CRASHING_CHILD))
    return count


def test_a_native_crash_on_one_element_costs_a_retry_not_the_view(tmp_path, monkeypatch, fresh_recipes):
    path = tmp_path / "one.ifc"
    write_sample_model(path, storeys=1)
    wall = ifcopenshell.open(str(path)).by_type("IfcWall")[0].id()
    count = _crashing_child(monkeypatch, tmp_path, wall, "manifold")

    view = render_view(str(path), "Level 1", [wall], 400)
    assert view.undrawn == () and near(pixels(view.png), HIGHLIGHT).sum() > 50  # rebuilt with OpenCascade
    assert count.read_text() == "xx"  # crashed naming the wall, then drawn with the wall rebuilt

    count.write_text("")
    render_view(str(path), "3D: Level 1", [wall], 400)
    assert count.read_text() == "x"  # the same model again: straight to the recipe that works


def test_an_element_that_crashes_every_kernel_is_left_out_and_counted(tmp_path, monkeypatch, fresh_recipes):
    path = tmp_path / "one.ifc"
    write_sample_model(path, storeys=1)
    wall = ifcopenshell.open(str(path)).by_type("IfcWall")[0].id()
    _crashing_child(monkeypatch, tmp_path, wall, "opencascade")
    monkeypatch.setattr(render, "_recipes", render.OrderedDict({render._content_key(str(path)): render._Recipe(
        careful=True, exact={wall})}))

    view = render_view(str(path), "Level 1", [wall], 400)
    assert view.undrawn == (wall,)
    assert near(pixels(view.png), HIGHLIGHT).sum() == 0  # the left-out wall cannot be shown highlighted
    assert render._recipes[render._content_key(str(path))].skip == {wall}


def test_a_crash_inside_the_one_pass_iterator_is_retried_element_by_element(tmp_path, monkeypatch,
                                                                           fresh_recipes):
    path = tmp_path / "one.ifc"
    write_sample_model(path, storeys=1)
    count = _crashing_child(monkeypatch, tmp_path, 0, "batch")
    view = render_view(str(path), "Level 1", [], 300)
    assert view.undrawn == () and count.read_text() == "xx"
    assert render._recipes[render._content_key(str(path))].careful


# The real child with IfcOpenShell's geometry kernel switched off: it can draw only meshes it finds kept.
_NO_KERNEL_CHILD = """
import sys
import ifcopenshell.geom
def refuse(*args, **kwargs):
    raise RuntimeError("the geometry kernel was called")
ifcopenshell.geom.iterator = refuse
ifcopenshell.geom.create_shape = refuse
from ifc_host.render_child import serve
sys.exit(serve())
"""


@pytest.fixture
def fresh_meshes(monkeypatch):
    """No meshes kept from other tests' renders (on disk, or in a render server's memory)."""
    monkeypatch.setattr(render, "_mesh_folders", render._MeshFolders(keep=4))
    pool = render_pool.RenderPool()
    monkeypatch.setattr(render_pool, "pool", pool)
    yield
    pool.close_all()


def test_a_second_view_of_the_same_model_is_drawn_from_its_kept_meshes(tmp_path, monkeypatch, fresh_meshes):
    path = tmp_path / "one.ifc"
    write_sample_model(path, storeys=1)
    wall = ifcopenshell.open(str(path)).by_type("IfcWall")[0].id()
    first = render_view(str(path), "Level 1", [wall], 500)
    assert list(render._mesh_folders.folder(render._content_key(str(path))).glob("*.npz"))

    monkeypatch.setattr(render, "SERVER_COMMAND", (sys.executable, "-c", _NO_KERNEL_CHILD))
    again = render_view(str(path), "Level 1", [wall], 500)
    assert again.png == first.png and again.undrawn == ()
    axonometric = render_view(str(path), "3D: Level 1", [wall], 500)  # the plan's elements serve the 3D view
    assert axonometric.undrawn == () and orange(pixels(axonometric.png)).sum() > 50


def test_a_changed_model_is_not_drawn_from_the_meshes_of_its_earlier_content(tmp_path, monkeypatch,
                                                                             fresh_meshes):
    path = tmp_path / "one.ifc"
    write_sample_model(path, storeys=1)
    before = render_view(str(path), "Level 1", [], 500)
    model = ifcopenshell.open(str(path))
    wall = model.by_type("IfcWall")[0]
    matrix = ifcopenshell.util.placement.get_local_placement(wall.ObjectPlacement)
    matrix[0][3] += 2.0
    ifcopenshell.api.run("geometry.edit_object_placement", model, product=wall, matrix=matrix, is_si=True)
    model.write(str(path))

    after = render_view(str(path), "Level 1", [], 500)
    monkeypatch.setattr(render, "_mesh_folders", render._MeshFolders(keep=4))
    render_pool.pool.close_all()
    assert after.png == render_view(str(path), "Level 1", [], 500).png  # what a render with nothing kept draws
    assert after.png != before.png

    monkeypatch.setattr(render, "SERVER_COMMAND", (sys.executable, "-c", _NO_KERNEL_CHILD))
    model.by_type("IfcDoor")[0].Tag = "CHANGED"  # no geometry changed, but the content did: nothing is kept for it
    model.write(str(path))
    with pytest.raises(RenderError, match="the geometry kernel was called"):
        render_view(str(path), "Level 1", [], 500)


def test_an_unreadable_kept_mesh_file_is_ignored(tmp_path, fresh_meshes):
    path = tmp_path / "one.ifc"
    write_sample_model(path, storeys=1)
    first = render_view(str(path), "Level 1", [], 400)
    folder = render._mesh_folders.folder(render._content_key(str(path)))
    for kept in folder.glob("*.npz"):
        kept.write_bytes(kept.read_bytes()[:100])  # truncated
    (folder / "0-garbage.npz").write_bytes(b"not a zip file")
    assert render_view(str(path), "Level 1", [], 400).png == first.png


def test_kept_meshes_round_trip_and_a_full_folder_keeps_no_more(tmp_path, monkeypatch):
    from ifc_host import render_mesh_cache
    from ifc_host.render_mesh_cache import MeshCache
    from ifc_host.render_scene import Mesh

    square = Mesh(7, "IfcSlab", np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], dtype=float),
                  np.array([[0, 1, 2], [0, 2, 3]]), np.array([5, 5], dtype=np.int32))
    post = Mesh(9, "IfcColumn", np.array([[0, 0, 0], [0, 0, 3], [0.2, 0, 0]]), np.array([[0, 1, 2]]),
                np.array([6], dtype=np.int32))
    cache = MeshCache(tmp_path / "kept")
    cache.store([square, post])
    found = cache.load({9, 7, 11})
    assert set(found) == {7, 9}
    for mesh in (square, post):
        again = found[mesh.element_id]
        assert again.ifc_class == mesh.ifc_class
        assert np.array_equal(again.verts, mesh.verts) and np.array_equal(again.faces, mesh.faces)
        assert np.array_equal(again.items, mesh.items)

    monkeypatch.setattr(render_mesh_cache, "MAX_FOLDER_BYTES", 1)
    cache.store([Mesh(11, "IfcWall", post.verts, post.faces, post.items)])
    assert set(cache.load({11})) == set() and len(list((tmp_path / "kept").glob("*.npz"))) == 1
