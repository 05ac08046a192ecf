"""Render servers: several views of one model from one open model, the committed model after a commit, and a
bounded memory (ifc_host/render_pool.py, render_models.py). Real render servers on real IFC files."""
from __future__ import annotations

from pathlib import Path

import pytest

from ifc_host import render
from ifc_host.executor import IsolatedExecutor, execute_command
from ifc_host.render import render_view
from ifc_host.sample import write_sample_model
from tests.support.waiting import wait_until

MOVE_A_WALL = """
import ifcopenshell.api, ifcopenshell.util.placement, ifcopenshell.util.unit
scale = ifcopenshell.util.unit.calculate_unit_scale(model)
wall = sorted(model.by_type('IfcWall'), key=lambda w: w.id())[0]
matrix = ifcopenshell.util.placement.get_local_placement(wall.ObjectPlacement)
matrix[0, 3] += 3.0 / scale
ifcopenshell.api.geometry.edit_object_placement(model, product=wall, matrix=matrix, is_si=False)
"""


@pytest.fixture
def model_path(tmp_path: Path) -> Path:
    path = tmp_path / "one.ifc"
    write_sample_model(path, storeys=2)
    return path


def test_several_views_of_one_model_are_drawn_from_one_open_model(model_path, pool):
    views = [render_view(str(model_path), name, [], 400) for name in ("Level 1", "3D", "Level 2", "Level 1")]
    assert [v.view for v in views] == ["Level 1", "3D", "Level 2", "Level 1"]
    assert views[3].png == views[0].png
    [server] = pool.servers()
    assert server.served == 4 and server.opens == 1  # the old child opened the file for every view


def test_a_view_after_a_commit_draws_the_committed_model(model_path, pool):
    executor = IsolatedExecutor(model_path)
    try:
        committed = str(executor.committed_path)
        before = render_view(committed, "Level 1", [], 500)
        [server] = pool.servers()
        result = executor.execute(execute_command("move", "automate", MOVE_A_WALL, 120))
        assert result["committed"], result.get("error")
        after = render_view(committed, "Level 1", [], 500)
    finally:
        executor.close()
    [same] = pool.servers()
    assert same.pid == server.pid and same.opens == 2  # the same server, the committed file opened anew
    assert after.png != before.png
    pool.close_all()
    assert render_view(committed, "Level 1", [], 500).png == after.png  # what a new server draws of that file


def test_a_model_rewritten_in_place_is_opened_again(model_path, pool):
    import ifcopenshell

    first = render_view(str(model_path), "Level 1", [], 400)
    model = ifcopenshell.open(str(model_path))
    model.remove(sorted(model.by_type("IfcWall"), key=lambda w: w.id())[0].Representation)
    model.write(str(model_path))
    again = render_view(str(model_path), "Level 1", [], 400)
    assert again.png != first.png and pool.servers()[0].opens == 2


def test_a_server_over_its_memory_limit_leaves_after_answering(model_path, pool, monkeypatch):
    monkeypatch.setenv("NEXUS_RENDER_MEMORY_MB", "1")
    first = render_view(str(model_path), "Level 1", [], 300)
    assert pool.servers() == []  # it said it leaves: not kept
    assert render_view(str(model_path), "Level 1", [], 300).png == first.png  # a new one draws the same


def test_an_idle_server_leaves_by_itself_and_the_next_view_starts_another(model_path, pool, monkeypatch):
    monkeypatch.setenv("NEXUS_RENDER_IDLE_S", "1")
    first = render_view(str(model_path), "Level 1", [], 300)
    [server] = pool.servers()
    wait_until(lambda: not server.alive(), timeout=30, what="the idle server left")
    assert render_view(str(model_path), "Level 1", [], 300).png == first.png
    [other] = pool.servers()
    assert other.pid != server.pid


def test_a_prepared_model_is_open_with_its_meshes_before_its_first_view(model_path, pool, monkeypatch):
    monkeypatch.setenv("NEXUS_RENDER_PREPARE_MB", "0")
    preparing = render.prepare(model_path)
    assert preparing is not None
    preparing.join(timeout=180)
    [server] = pool.servers()
    assert server.opens == 1
    assert list(render._mesh_folders.folder(render._content_key(str(model_path))).glob("*.npz"))
    assert render_view(str(model_path), None, [], 300).view == "Level 1"
    [same] = pool.servers()
    assert same.pid == server.pid and same.opens == 1 and same.served == 2


def test_a_view_asked_while_the_model_is_prepared_waits_for_that_server(model_path, pool, monkeypatch):
    monkeypatch.setenv("NEXUS_RENDER_PREPARE_MB", "0")
    preparing = render.prepare(model_path)
    assert preparing is not None
    wait_until(lambda: pool.busy() == 1, timeout=30, what="the model is being prepared")
    view = render_view(str(model_path), "Level 2", [], 300, timeout_s=300)
    preparing.join(timeout=180)
    assert view.view == "Level 2"
    [server] = pool.servers()
    assert server.opens == 1 and server.served == 2  # not a second server opening the same file


def test_small_models_are_not_prepared_and_preparing_can_be_turned_off(model_path, pool, monkeypatch):
    assert render.prepare(model_path) is None  # under 8 MB: it opens in about a second anyway
    monkeypatch.setenv("NEXUS_RENDER_PREPARE_MB", "off")
    assert render.prepare(model_path) is None
    assert pool.servers() == [] and pool.busy() == 0


def test_a_second_prepare_of_the_same_file_joins_the_one_under_way(model_path, pool, monkeypatch):
    # The host prepares its model before its keeper opens it (both opens at once) and again once connected.
    monkeypatch.setenv("NEXUS_RENDER_PREPARE_MB", "0")
    first = render.prepare(model_path)
    again = render.prepare(model_path)
    assert first is not None and again is first
    first.join(timeout=180)
    [server] = pool.servers()
    assert server.opens == 1 and server.served == 1  # one prepare request, not two


def test_a_prepared_plan_leaves_its_sections_for_the_first_view(model_path):
    from ifc_host.render_child import render_request
    from ifc_host.render_geometry import _memo
    from ifc_host.render_models import OpenModels
    from ifc_host.render_scene import resolve_view

    models = OpenModels()
    request = {"kind": "prepare", "model_path": str(model_path), "view": "Level 1", "element_ids": [],
               "result_path": str(model_path.parent / "prepared.json")}
    assert render_request(request, models)["ok"]
    kept = models.get(str(model_path))
    assert models.opens == 1 and kept.meshes
    cut_z = resolve_view(kept.model, "Level 1", []).cut_z
    assert all(_memo.get(mesh, ("cut", cut_z))[0] for mesh in kept.meshes.values())  # the view recomputes none


def _with_a_costly_storey(path: Path, rows: int = 100, columns: int = 200) -> int:
    """Adds to the model at ``path`` a storey "Costly" holding one proxy only: a body of 2 * rows * columns triangles
    (an IfcFaceBasedSurfaceModel, as Revit writes its detailed windows; a level sheet, drawn as an outline below the
    cut) and a Box beside it, upright (cut by the plan). Its id."""
    import ifcopenshell
    import ifcopenshell.api.aggregate
    import ifcopenshell.api.root
    import ifcopenshell.api.spatial
    import ifcopenshell.util.placement

    model = ifcopenshell.open(str(path))
    building = model.by_type("IfcBuilding")[0]
    body_context = next(c for c in model.by_type("IfcGeometricRepresentationSubContext")
                        if c.ContextIdentifier == "Body")
    storey = ifcopenshell.api.root.create_entity(model, ifc_class="IfcBuildingStorey", name="Costly")
    storey.Elevation = 20.0
    ifcopenshell.api.aggregate.assign_object(model, products=[storey], relating_object=building)
    proxy = ifcopenshell.api.root.create_entity(model, ifc_class="IfcBuildingElementProxy", name="Many faces")
    ifcopenshell.api.spatial.assign_container(model, products=[proxy], relating_structure=storey)
    origin = model.createIfcAxis2Placement3D(model.createIfcCartesianPoint((0.0, 0.0, 20.0)))
    proxy.ObjectPlacement = model.createIfcLocalPlacement(None, origin)
    width, height = 2.0, 2.0
    grid = [[model.createIfcCartesianPoint((width * i / columns, width * j / rows, 0.5)) for j in range(rows + 1)]
            for i in range(columns + 1)]
    faces = [model.createIfcFace([model.createIfcFaceOuterBound(model.createIfcPolyLoop(corners), True)])
             for i in range(columns) for j in range(rows)
             for corners in ((grid[i][j], grid[i + 1][j], grid[i + 1][j + 1]),
                             (grid[i][j], grid[i + 1][j + 1], grid[i][j + 1]))]
    sheet = model.createIfcFaceBasedSurfaceModel([model.createIfcConnectedFaceSet(faces)])
    box = model.createIfcBoundingBox(model.createIfcCartesianPoint((0.0, 0.0, 0.0)), width, width, height)
    proxy.Representation = model.createIfcProductDefinitionShape(None, None, [
        model.createIfcShapeRepresentation(body_context, "Body", "SurfaceModel", [sheet]),
        model.createIfcShapeRepresentation(body_context, "Box", "BoundingBox", [box])])
    model.write(str(path))
    return proxy.id()


def test_a_first_view_draws_a_costly_body_as_its_stand_in_and_the_next_view_draws_it_in_full(model_path, pool,
                                                                                            monkeypatch):
    """The first view of a model waits for its costly bodies only within the first-view budget (here none): the
    body of 40 000 triangles is drawn as its Box, said as being built; the render server builds it meanwhile, and
    the next view (its normal timeout) draws it in full, from the same server."""
    proxy = _with_a_costly_storey(model_path)
    monkeypatch.setenv(render.FIRST_VIEW_ENV, "0")
    first = render_view(str(model_path), "Costly", [], 300)
    assert first.boxed == (proxy,) and first.later == (proxy,) and not first.undrawn
    after = render_view(str(model_path), "Costly", [], 300)
    assert not after.boxed and not after.later and not after.undrawn
    assert after.png != first.png
    [server] = pool.servers()
    assert server.opens == 1 and server.served == 2
