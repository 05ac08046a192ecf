"""Plan and axonometric views: exact size, visible highlights, clear errors, and a crash-proof child."""
from __future__ import annotations

import io
import sys
import time

import ifcopenshell
import ifcopenshell.util.placement
import numpy as np
import pytest
from PIL import Image

from ifc_host import render
from ifc_host.render import HIGHLIGHT, RenderError, render_view, render_view_from_bytes
from ifc_host.render_canvas import WALL
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


def test_a_model_held_in_memory_renders_the_same_image(sample):
    path, model = sample
    ids = [door(model, "D101").id()]
    from_file = render_view(path, "Level 1", ids, 400)
    from_text = render_view_from_bytes(model.to_string(), "Level 1", ids, 400)
    assert from_text == from_file


def test_a_crashing_renderer_raises_render_error_and_the_caller_survives(sample, monkeypatch):
    path, _ = sample
    monkeypatch.setattr(render, "CHILD_COMMAND", (sys.executable, "-c", "import os; os.abort()"))
    with pytest.raises(RenderError, match=r"crashed .*SIGABRT"):
        render_view(path, "Level 1", [], 300)


def test_a_hanging_renderer_is_stopped_at_the_timeout(sample, monkeypatch):
    path, _ = sample
    monkeypatch.setattr(render, "CHILD_COMMAND", (sys.executable, "-c", "import time; time.sleep(60)"))
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
