"""The view of a change is drawn on the storey the change report names: a door that fills an opening in a wall of
Level 2, and is contained in no storey itself, is on Level 2 for the report, for the view the renderer picks and
for the plan that draws it (the renderer once found no storey for it and fell back to the lowest)."""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from PIL import Image

from cloud.hosts.base import split_epilogue_output
from cloud.hosts.ifc import PROVIDER
from cloud.hosts.registry import stamped_epilogue
from ifc_host.executor import IsolatedExecutor, execute_command
from ifc_host.protocol import execute_result
from ifc_host.render import HIGHLIGHT, render_view
from ifc_host.sample import write_sample_model

# Takes door D203 (Level 2) out of its storey's containment, so only the opening it fills places it, and moves
# it 10 cm along its wall: a change with geometry, whose view the report asks for.
UNHOUSE_AND_MOVE = """
import ifcopenshell.api.spatial
door = next(d for d in model.by_type('IfcDoor') if d.Tag == 'D203')
ifcopenshell.api.spatial.unassign_container(model, products=[door])
location = door.ObjectPlacement.RelativePlacement.Location
x, y, *rest = location.Coordinates
location.Coordinates = (x + 0.1, y, *rest)
print(door.id())
"""


def _door_pixels(png: bytes) -> int:
    rgb = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    return int((np.abs(rgb - np.array(HIGHLIGHT)) <= 12).all(axis=2).sum())


def test_the_view_of_a_door_change_is_the_doors_storey(tmp_path: Path):
    path = tmp_path / "office.ifc"
    write_sample_model(path, storeys=3)
    executor = IsolatedExecutor(path)
    try:
        result = executor.execute(execute_command("door", "automate", UNHOUSE_AND_MOVE, 120,
                                             epilogue_code=stamped_epilogue("ifc").code))
    finally:
        executor.close()
    assert result["ok"] and result["committed"], result.get("error")
    door_id = int(result["stdout"].strip())
    assert result["changes"]["modified"] == [door_id]
    report, directives = split_epilogue_output(result["epilogue_stdout"])
    door_line = next(line for line in report.splitlines() if line.startswith(f"- #{door_id} IfcDoor"))
    assert "| Level 2 |" in door_line, report
    assert directives["view"] == "Level 2" and directives["element_ids"] == [door_id]

    # Without the report's word (it failed, or a render asks for the element alone) the renderer picks the view.
    message = execute_result("door", {**result, "epilogue_stdout": None})  # as the host sends it to the cloud
    undirected = PROVIDER.view_to_capture(message)
    assert undirected is not None and undirected.view is None and undirected.element_ids == [door_id]
    picked = render_view(str(path), undirected.view, undirected.element_ids, 600)
    assert picked.view == "Level 2"
    assert _door_pixels(picked.png) > 100  # the plan draws the door it was picked for
    assert _door_pixels(render_view(str(path), "Level 1", [door_id], 600).png) == 0
