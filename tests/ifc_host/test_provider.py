"""The IFC capability provider: prompt fragment, the epilogue run by a real IFC host, and the view policy."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from cloud.hosts.base import ViewRequest, split_epilogue_output
from cloud.hosts.hello import Hello
from cloud.hosts.ifc import PROVIDER
from cloud.hosts.registry import get_provider, stamped_epilogue
from ifc_host.executor import IsolatedExecutor, execute_command
from tests.conformance.hosts import sample_building

HELLO = Hello.parse({"type": "hello", "host_app": "ifc", "host_version": "0.9.0.post1", "runtime_version": "1.0.0",
         "python_version": "3.11.7", "document": {"title": "Sample Office", "schema": "IFC4",
                                                  "storeys": ["Level 1", "Level 2", "Level 3"]}})


@pytest.fixture(scope="module")
def executor(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IsolatedExecutor]:
    path = tmp_path_factory.mktemp("provider") / "sample.ifc"
    path.write_bytes(sample_building().read_bytes())
    runner = IsolatedExecutor(path)
    yield runner
    runner.close()


_ids = iter(range(1_000_000))


def automate(executor: IsolatedExecutor, code: str) -> dict:
    """Run with the provider's epilogue, as the cloud sends it, then discard (the sample stays as it was)."""
    request_id = f"p{next(_ids)}"
    result = executor.execute(execute_command(request_id, "automate", code, 30, hold=True,
                                         epilogue_code=stamped_epilogue("ifc").code))
    assert result["ok"] and result["held"], result.get("error")
    assert not result["failures"], result["failures"]
    executor.decide(request_id, "discard")
    return result


def test_the_registry_serves_this_provider_with_a_version_and_a_stamped_epilogue():
    assert get_provider("ifc") is PROVIDER
    assert PROVIDER.host_app == "ifc" and PROVIDER.capability_version.startswith("ifc-")
    stamped = stamped_epilogue("ifc")
    assert stamped.capability_version == PROVIDER.capability_version and len(stamped.sha256) == 64
    compile(stamped.code, "<epilogue>", "exec")


def test_the_prompt_fragment_says_how_ifc_differs_from_revit():
    fragment = PROVIDER.system_prompt_fragment(HELLO)
    for fact in ("`model`", "ifcopenshell.api", "Sample Office", "IFC4", '"Level 2"', "IfcOpenShell 0.9.0.post1",
                 "add_feature", "add_filling", "storey", "element.id()", "GlobalId", "begin_transaction",
                 "regenerates", "print"):
        assert fact in fragment, fact
    assert "$" not in fragment
    bare = PROVIDER.system_prompt_fragment(Hello.parse({**HELLO.as_message(), "document": {"title": "x"}}))
    assert "storeys (views)" not in bare and "$" not in bare


def test_few_changes_are_named_with_id_class_type_storey_and_globalid(executor: IsolatedExecutor):
    result = automate(executor, """
doors = sorted(model.by_type('IfcDoor'), key=lambda d: d.id())[:2]
for n, door in enumerate(doors):
    door.Tag = f'N-{n}'
column = [c for c in model.by_type('IfcColumn') if c.Tag != 'C-ORPHAN'][0]
ifcopenshell.api.root.remove_product(model, product=column)
""")
    report, directives = split_epilogue_output(result["epilogue_stdout"])
    lines = report.splitlines()
    assert "0 added, 2 modified, 1 deleted element(s)." in report
    door_lines = [line for line in lines if " IfcDoor " in line]
    assert len(door_lines) == 2 and all("mark N-" in line and "| type " in line and "GlobalId " in line
                                        for line in door_lines)
    assert all(f"#{i} IfcDoor" in report for i in result["changes"]["modified"])
    deleted_line = lines[lines.index("Deleted:") + 1]
    assert deleted_line.startswith(f"- #{result['changes']['deleted'][0]} IfcColumn")
    assert "| Level " in deleted_line and "GlobalId " in deleted_line and "(no type)" not in deleted_line
    assert directives["geometry_changed"] is True and directives["element_ids"] == []
    assert directives["view"].startswith("Level ")


def test_many_changes_are_grouped_by_class_and_type_with_an_example(executor: IsolatedExecutor):
    result = automate(executor, """
for door in model.by_type('IfcDoor'):
    door.Tag = 'G-' + str(door.id())
for window in model.by_type('IfcWindow'):
    ifcopenshell.api.root.remove_product(model, product=window)
""")
    report, directives = split_epilogue_output(result["epilogue_stdout"])
    assert f"Modified ({len(result['changes']['modified'])}), by class and type:" in report
    assert f"Deleted ({len(result['changes']['deleted'])}), by class and type:" in report
    assert not any(line.startswith("- #") for line in report.splitlines())
    group_lines = [line for line in report.splitlines() if line.startswith("- ") and " x IfcDoor " in line]
    assert group_lines and all("e.g. #" in line for line in group_lines)
    assert sum(int(line.split()[1]) for line in group_lines) == 26
    assert " x IfcWindow | type " in report and "By storey: " in report
    assert directives["geometry_changed"] is True  # windows were deleted


def test_geometry_change_picks_the_most_affected_storey_and_highlights(executor: IsolatedExecutor):
    result = automate(executor, """
import json
import ifcopenshell.util.element as ue
moved = []
for wall in model.by_type('IfcWall'):
    storey = ue.get_container(wall)
    if storey is not None and storey.Name == 'Level 3':
        m = ifcopenshell.util.placement.get_local_placement(wall.ObjectPlacement)
        m[0, 3] += 100.0
        ifcopenshell.api.geometry.edit_object_placement(model, product=wall, matrix=m)
        moved.append(wall.id())
first = [w for w in model.by_type('IfcWall') if ue.get_container(w).Name == 'Level 1'][0]
first.Name = 'renamed only'
print(json.dumps(moved))
""")
    moved = json.loads(result["stdout"].strip())
    _, directives = split_epilogue_output(result["epilogue_stdout"])
    assert directives["geometry_changed"] is True and directives["view"] == "Level 3"
    assert set(moved) <= set(directives["element_ids"])
    view = PROVIDER.view_to_capture({**result, "held": True})
    assert view == ViewRequest(view="Level 3", element_ids=directives["element_ids"])


def test_no_image_when_only_data_changed(executor: IsolatedExecutor):
    result = automate(executor, "for door in model.by_type('IfcDoor')[:3]:\n    door.Name = 'data only'\n")
    _, directives = split_epilogue_output(result["epilogue_stdout"])
    assert directives["geometry_changed"] is False
    assert PROVIDER.view_to_capture({**result, "committed": True}) is None


def test_view_policy_without_a_directive_falls_back_to_the_hosts_geometry_list():
    base = {"ok": True, "committed": True, "epilogue_stdout": "report only\n",
            "changes": {"added": [5], "modified": [7, 9], "deleted": [3]}}
    assert PROVIDER.view_to_capture({**base, "details": {"geometry_changed": [3, 7]}}) == ViewRequest(None, [7])
    assert PROVIDER.view_to_capture({**base, "details": {"geometry_changed": []}}) is None
    assert PROVIDER.view_to_capture({**base, "ok": False, "committed": False}) is None
    directive = '@@nexus {"geometry_changed": true, "view": "Level 2", "element_ids": [7]}'
    assert PROVIDER.view_to_capture({**base, "epilogue_stdout": directive}) == ViewRequest("Level 2", [7])


def test_epilogue_source_is_a_data_file():
    path = Path(__file__).resolve().parents[2] / "cloud" / "hosts" / "epilogues" / "ifc_epilogue.py"
    assert PROVIDER.build_task_automation_epilogue() == path.read_text(encoding="utf-8")


def test_every_kind_of_view_the_capture_view_description_names_renders_on_the_real_host(tmp_path: Path):
    """What the model is told about views (the provider's data file) is what the IFC host's renderer accepts."""
    import ifcopenshell
    import ifcopenshell.util.element

    from cloud.hosts.registry import host_tool_definitions
    from ifc_host.render import RenderError, render_view

    described = {t["name"]: t for t in host_tool_definitions(HELLO)}["capture_view"]["description"]
    model_path = tmp_path / "sample.ifc"
    model_path.write_bytes(sample_building().read_bytes())
    model = ifcopenshell.open(str(model_path))
    storey = next(s for s in model.by_type("IfcBuildingStorey") if s.Name == "Level 2")
    door = next(d for d in model.by_type("IfcDoor") if ifcopenshell.util.element.get_container(d) == storey)
    kinds = {  # (the description's wording, a view in that form) -> the view the host says it rendered
        ("storey's `Name`", "Level 2"): "Level 2",
        ("without regard to case", "level 2"): "Level 2",
        ("`#<id>`", f"#{storey.id()}"): "Level 2",
        ("`3D`", "3D"): "3D",
        ("`3D: <storey>`", "3D: Level 2"): "3D: Level 2",
        ("a name or `#<id>`", f"3D: #{storey.id()}"): "3D: Level 2",
    }
    for (wording, view), rendered_as in kinds.items():
        assert wording in described, wording
        rendered = render_view(str(model_path), view, [], 400)
        assert rendered.view == rendered_as and rendered.png.startswith(b"\x89PNG"), view
    assert "Without `view`, the plan of the lowest storey holding any of `element_ids`" in described
    assert render_view(str(model_path), None, [door.id()], 400).view == "Level 2"
    with pytest.raises(RenderError, match="Level 1"):
        render_view(str(model_path), "Roof terrace", [], 400)
