"""The Revit capability provider: prompt fragment, the epilogue's change report (run by the real
runtime on the fake Revit), and the view-capture policy."""
from __future__ import annotations

import re

import pytest
from nexus_runtime.log import RuntimeLog

from cloud.hosts.base import ViewRequest, split_epilogue_output
from cloud.hosts.hello import Hello
from cloud.hosts.registry import content_hash, get_provider, stamped_epilogue
from cloud.hosts.revit import PROVIDER, python_major
from tests.revit.conftest import make_revit, runtime_module
from tests.revit.fake_revit import uninstall

IRONPYTHON = "2.7.12 (IronPython 2.7.12 (2.7.12.1000) on .NET 4.0.30319.42000 (64-bit))"


def hello(python_version: str = IRONPYTHON) -> Hello:
    return Hello.parse({"type": "hello", "host_app": "revit", "host_version": "2026 (26.0.4.409)",
                        "runtime_version": "0.1.0", "python_version": python_version, "document": {"title": "Tower A"}})


def test_the_registry_serves_the_revit_provider_and_stamps_its_epilogue():
    assert get_provider("revit") is PROVIDER
    stamped = stamped_epilogue("revit")
    assert stamped.host_app == "revit" and stamped.capability_version == PROVIDER.capability_version
    assert stamped.sha256 == content_hash(PROVIDER.build_task_automation_epilogue())


def test_the_prompt_fragment_speaks_ironpython_27_unless_the_host_reports_python_3():
    fragment = PROVIDER.system_prompt_fragment(hello())
    assert "IronPython 2.7" in fragment and "no f-strings" in fragment and "2.7.12)" in fragment
    assert "Never create a `Transaction`" in fragment and "2026 (26.0.4.409)" in fragment
    assert "$" not in fragment
    modern = PROVIDER.system_prompt_fragment(hello("3.4.1 (IronPython 3.4.1 (3.4.1.1000))"))
    assert "Python 3" in modern and "no f-strings" not in modern
    assert python_major("garbage") == 2 and python_major("3.12.1") == 3


@pytest.fixture
def revit():
    session = make_revit()
    yield session
    session.stop()
    uninstall()


def automate_with_report(revit, code: str) -> tuple[dict, str, dict]:
    stamped = stamped_epilogue("revit")
    message = {"type": "execute", "request_id": "r", "mode": "automate", "code": code, "timeout_s": 30,
               "epilogue": stamped.as_message()}
    result = revit.run_on_main(runtime_module("executor").execute, revit.uiapp, message, RuntimeLog())
    assert result["committed"], result.get("error")
    assert "[change report failed]" not in result["epilogue_stdout"], result["epilogue_stdout"]
    report, directives = split_epilogue_output(result["epilogue_stdout"])
    return result, report, directives


def add_walls(level: str, count: int, x0: int = 200) -> str:
    return (f"level = [l for l in DB.FilteredElementCollector(doc).OfClass(DB.Level) if l.Name == {level!r}][0]\n"
            f"for i in range({count}):\n"
            f"    x = {x0} + 10 * i\n"
            "    DB.Wall.Create(doc, DB.Line.CreateBound(DB.XYZ(x, 0, 0), DB.XYZ(x, 8, 0)), level.Id, False)\n")


ROW = re.compile(r"^- #(\d+) (.+)$", re.MULTILINE)


def test_a_small_change_names_each_element_and_points_at_a_view_showing_it(revit):
    result, report, directives = automate_with_report(revit, add_walls("Level 2", 2))
    added = result["changes"]["added"]
    named = {int(i): rest for i, rest in ROW.findall(report)}
    for element_id in added:
        assert named[element_id] == "Walls | Basic Wall : Generic - 200mm | Level: Level 2"
    assert "Committed: 2 added" in report
    assert directives["geometry_changed"] is True and directives["view"] == "Level 2"
    assert sorted(directives["element_ids"]) == sorted(added)
    assert PROVIDER.view_to_capture(result) == ViewRequest(view="Level 2", element_ids=directives["element_ids"])


def test_parameter_only_changes_are_named_but_need_no_image(revit):
    code = ("doors = DB.FilteredElementCollector(doc).OfCategory(DB.BuiltInCategory.OST_Doors)"
            ".WhereElementIsNotElementType()\n"
            "for n, d in enumerate(doors):\n"
            "    d.get_Parameter(DB.BuiltInParameter.ALL_MODEL_MARK).Set('D-' + str(n + 1).zfill(2))\n")
    result, report, directives = automate_with_report(revit, code)
    assert len(result["changes"]["modified"]) == 6
    assert report.count("Doors | Single-Flush : 0915 x 2134mm | Level: Level") == 6
    assert directives["geometry_changed"] is False
    assert PROVIDER.view_to_capture(result) is None


def test_a_bulk_change_is_grouped_and_regeneration_is_kept_apart(revit):
    result, report, directives = automate_with_report(revit, add_walls("Level 3", 20))
    assert "Added (20), grouped:" in report
    assert re.search(r"^- 20x Walls \| Basic Wall : Generic - 200mm \| Level: Level 3 \| e\.g\. #\d+$", report,
                     re.MULTILINE)
    regeneration = next(line for line in report.splitlines() if line.startswith("Also modified"))
    assert "by Revit's regeneration" in regeneration and "2 Views" in regeneration
    assert "3 InternalElement" in regeneration  # no category: named by its API class
    assert len(ROW.findall(report)) == 0  # nothing named one by one
    assert len(report.splitlines()) < 12
    assert directives["view"] == "Level 3" and len(directives["element_ids"]) == 20


def test_few_additions_stay_named_among_many_modifications(revit):
    code = add_walls("Level 1", 2) + (
        "for e in DB.FilteredElementCollector(doc).WhereElementIsNotElementType():\n"
        "    p = e.LookupParameter('Mark')\n"
        "    if p is not None:\n"
        "        p.Set('M')\n")
    result, report, _directives = automate_with_report(revit, code)
    assert "Added (2):" in report and len(ROW.findall(report)) == 2
    assert "Modified model elements (18), grouped:" in report
    assert "- 12x Walls | Basic Wall : Generic - 200mm" not in report  # grouped per level too
    assert re.search(r"^- 4x Walls \| Basic Wall : Generic - 200mm \| Level: Level 2 \| e\.g\. #\d+$", report,
                     re.MULTILINE)


def test_deletions_are_counted_with_their_ids(revit):
    wall = next(e for e in revit.doc._elements.values() if type(e).__name__ == "Wall" and e._dependents())
    doors = [d.Id.Value for d in wall._dependents()]
    result, report, directives = automate_with_report(revit, f"doc.Delete(DB.ElementId({wall.Id.Value}))\n")
    assert sorted(result["changes"]["deleted"]) == sorted([wall.Id.Value] + doors)
    assert f"Deleted ({1 + len(doors)}): #" in report and f"#{wall.Id.Value}" in report
    assert directives["geometry_changed"] is True
    assert PROVIDER.view_to_capture(result) == ViewRequest(view=None, element_ids=[])  # the active view


def test_the_report_works_on_revit_2023_ids():
    session = make_revit(version=2023)
    try:
        result, report, directives = automate_with_report(session, add_walls("Level 1", 1))
        assert f"- #{result['changes']['added'][0]} Walls" in report and directives["view"] == "Level 1"
    finally:
        session.stop()
        uninstall()


@pytest.mark.parametrize("result, expected", [
    ({"committed": False, "changes": {"added": [1], "modified": [], "deleted": []}}, None),
    ({"committed": True, "epilogue_stdout": 'report\n@@nexus {"geometry_changed": false, "view": "L1"}',
      "changes": {"added": [1], "modified": [], "deleted": []}}, None),
    ({"committed": True, "epilogue_stdout": '@@nexus {"geometry_changed": true, "view": null, "element_ids": [4, 5]}'},
     ViewRequest(view=None, element_ids=[4, 5])),
    ({"committed": True, "epilogue_stdout": "[change report failed] Traceback...",
      "changes": {"added": [7], "modified": [8], "deleted": []}}, ViewRequest(view=None, element_ids=[7, 8])),
    ({"committed": True, "epilogue_stdout": None, "changes": {"added": [], "modified": [], "deleted": []}}, None),
    ({"held": True, "epilogue_stdout": '@@nexus {"geometry_changed": true, "view": "{3D}", "element_ids": [1]}'},
     ViewRequest(view="{3D}", element_ids=[1])),
])
def test_view_capture_policy(result, expected):
    assert PROVIDER.view_to_capture(result) == expected
