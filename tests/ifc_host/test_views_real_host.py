"""Views through the REAL IFC host and orchestrator: storeys that share a Name are offered and captured by
`#<step id>` (a plain ambiguous Name is refused with the ids to use), and an element whose body no kernel can
build is counted in the export_view_result and in the person's copy of the capture_view result."""
from __future__ import annotations

import base64
import io
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ifcopenshell
import numpy as np
import pytest
from PIL import Image

from cloud.assembly import run_session
from cloud.hostlink import session_link
from cloud.hosts.registry import stamped_epilogue
from ifc_host.render import HIGHLIGHT
from ifc_host.sample import write_sample_model
from shared_contract.validate import validate_host_message
from tests.support.memory_model import MemoryModel
from tests.support.real_ifc import connected_host
from tests.support.server import RunningServer, running_server
from tests.support.spine import say


class RealHost:
    def __init__(self, server: RunningServer, host_id: str, model: Path) -> None:
        self.server, self.host_id, self.model = server, host_id, model

    def document(self) -> dict[str, Any]:
        connection = self.server.state.hosts.get(self.host_id)
        assert connection is not None
        return dict(connection.hello.document)

    def send(self, message: dict[str, Any], timeout: float = 120) -> dict[str, Any]:
        return validate_host_message(self.server.send_to_host(self.host_id, message, timeout=timeout))

    def view(self, view: str | None, element_ids: list[int] | None = None) -> dict[str, Any]:
        reply = self.send({"type": "export_view", "view": view, "element_ids": element_ids or [], "max_px": 400})
        assert reply["type"] == "export_view_result", reply
        return reply


@pytest.fixture
def real_host(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RealHost]:
    model = tmp_path / "model.ifc"
    request.param(model)
    with (running_server(tmp_path, keepalive_s=0.5, tool_timeout_s=120, script_timeout_s=60) as server,
          connected_host(model, server.url, server.token("alice"), timeout_s=60) as (_, host_id)):
        yield RealHost(server, host_id, model)


def _two_storeys_named_upper(path: Path) -> None:
    write_sample_model(path, storeys=3)
    model = ifcopenshell.open(str(path))
    storeys = sorted(model.by_type("IfcBuildingStorey"), key=lambda s: s.Elevation)
    storeys[1].Name = storeys[2].Name = "Upper"
    model.write(str(path))


def _one_wall_without_a_buildable_body(path: Path) -> None:
    write_sample_model(path, storeys=1)
    model = ifcopenshell.open(str(path))
    wall = _broken_wall(model)
    body = next(r for r in wall.Representation.Representations if r.RepresentationIdentifier == "Body")
    body.Items[0].Depth = 0.0  # an extrusion of zero depth: neither geometry kernel builds a solid from it
    model.write(str(path))


def _broken_wall(model: ifcopenshell.file) -> ifcopenshell.entity_instance:
    return min(model.by_type("IfcWall"), key=lambda w: w.id())


@pytest.mark.parametrize("real_host", [_two_storeys_named_upper], indirect=True)
def test_storeys_sharing_a_name_are_offered_and_captured_by_step_id(real_host: RealHost):
    model = ifcopenshell.open(str(real_host.model))
    lowest, first, second = sorted(model.by_type("IfcBuildingStorey"), key=lambda s: s.Elevation)
    offered = [lowest.Name, f"#{first.id()}", f"#{second.id()}"]

    assert real_host.document()["storeys"] == offered
    context = real_host.send({"type": "context"})["context"]
    assert [level["name"] for level in context["levels"]] == offered
    assert [level["id"] for level in context["levels"]] == [lowest.id(), first.id(), second.id()]

    door = next(d for d in model.by_type("IfcDoor")
                if d.ContainedInStructure and d.ContainedInStructure[0].RelatingStructure == second)
    for view in offered[1:]:
        reply = real_host.view(view, [door.id()])
        assert reply["ok"] is True and reply["view"] == view, reply
        rgb = np.asarray(Image.open(io.BytesIO(base64.b64decode(reply["png_base64"]))).convert("RGB")).astype(int)
        orange = (np.abs(rgb - np.array(HIGHLIGHT)).max(axis=2) <= 12).sum()
        assert bool(orange > 20) is (view == f"#{second.id()}")  # the door stands on the second 'Upper' only
    assert real_host.view(f"3D: #{first.id()}")["view"] == f"3D: #{first.id()}"

    for ambiguous in ("Upper", "upper", "3D: Upper"):
        refused = real_host.view(ambiguous)
        assert refused["ok"] is False
        assert f"2 storeys are named {ambiguous.removeprefix('3D: ')!r}; name one by its step id: " \
               f"#{first.id()}, #{second.id()}" in refused["error"], refused

    # The change report's view after a commit names the storey as the views do, so it can be captured.
    moved = real_host.send({"type": "execute", "mode": "automate", "timeout_s": 60,
                            "epilogue": stamped_epilogue("ifc").as_message(), "code": (
                                f"import ifcopenshell.util.placement as p\nwall = model.by_id({door.id()})\n"
                                "m = p.get_local_placement(wall.ObjectPlacement)\nm[0, 3] += 100.0\n"
                                "import ifcopenshell.api.geometry as g\n"
                                "g.edit_object_placement(model, product=wall, matrix=m)\n")})
    assert moved["committed"] is True, moved.get("error")
    directive = json.loads(moved["epilogue_stdout"].splitlines()[-1].removeprefix("@@nexus "))
    assert directive["view"] == f"#{second.id()}" and door.id() in directive["element_ids"]
    assert f"#{second.id()}" in moved["epilogue_stdout"]
    assert real_host.view(directive["view"], directive["element_ids"])["ok"] is True

    # A deleted element keeps the storey it stood on, named the same way.
    other = next(d for d in model.by_type("IfcDoor") if d.id() != door.id() and d.ContainedInStructure
                 and d.ContainedInStructure[0].RelatingStructure == second)
    deleted = real_host.send({"type": "execute", "mode": "automate", "timeout_s": 60,
                              "epilogue": stamped_epilogue("ifc").as_message(), "code": (
                                  "import ifcopenshell.api.root\n"
                                  f"ifcopenshell.api.root.remove_product(model, product=model.by_id({other.id()}))\n")})
    assert deleted["committed"] is True and other.id() in deleted["changes"]["deleted"], deleted.get("error")
    line = next(x for x in deleted["epilogue_stdout"].splitlines() if x.startswith(f"- #{other.id()} IfcDoor"))
    assert f" | #{second.id()} | " in line, deleted["epilogue_stdout"]


@pytest.mark.parametrize("real_host", [_one_wall_without_a_buildable_body], indirect=True)
def test_an_element_that_cannot_be_drawn_is_counted_for_the_person_and_the_contract(real_host: RealHost):
    wall = _broken_wall(ifcopenshell.open(str(real_host.model))).id()
    reply = real_host.view("Level 1", [wall])
    assert reply["ok"] is True and reply["undrawn"] == 1
    assert real_host.view("North elevation")["undrawn"] == 1

    store = real_host.server.state.store
    row = store.get_session(store.create_session("alice", real_host.host_id, "scripted:m", {}))
    model = MemoryModel([[{"tool_call": {"name": "capture_view", "input": {"view": "Level 1"}}}], say("Shown.")])
    link = session_link(real_host.server.state.hosts, real_host.server.state.channel, row)
    produced = list(run_session(store, real_host.server.state.settings, model, link, row, "show", threading.Event()))
    results = [c.metadata for c in produced if c.type == "Metadata" and c.metadata["kind"] == "tool_result"]
    assert len(results) == 1 and results[0]["ok"] is True
    assert results[0]["image"]["undrawn"] == 1 and results[0]["image"]["view"] == "Level 1"
    call_id = results[0]["tool_call_id"]
    saved = store.get_result(row["id"], call_id)
    assert saved is not None and saved["image"]["undrawn"] == 1


@pytest.mark.parametrize("real_host", [lambda path: write_sample_model(path, storeys=1)], indirect=True)
def test_a_view_where_everything_draws_counts_zero_undrawn(real_host: RealHost):
    for view in ("Level 1", "3D"):
        reply = real_host.view(view)
        assert (reply["undrawn"], reply["simplified"], reply["boxed"], reply["sketched"]) == (0, 0, 0, 0), \
            reply.get("error")
