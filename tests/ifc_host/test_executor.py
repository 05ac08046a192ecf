"""Isolated execution and change tracking of the IFC host, on real IfcOpenShell models in real processes,
under both isolation strategies (a forked child per script, and a warm spawned spare per script).

Most tests hold their automation and then discard it, so the module shares one keeper and one model.
"""
from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import ifcopenshell
import pytest

from ifc_host.executor import IsolatedExecutor, execute_command
from ifc_host.keeper_process import ISOLATIONS
from ifc_host.model_file import open_checked
from ifc_host.script import STDOUT_CAP_BYTES
from tests.conformance.ifc_models import write_small_building
from tests.support.processes import child_pids

REPORT = ("import json\n"
          "print(json.dumps({'changes': nexus_changes(), 'deleted': nexus_deleted_info(),"
          " 'geometry': nexus_geometry_changed()}))\n")


@pytest.fixture(scope="module", params=ISOLATIONS)
def isolation(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="module")
def model_path(tmp_path_factory: pytest.TempPathFactory, isolation: str) -> Path:
    return write_small_building(tmp_path_factory.mktemp(f"executor-{isolation}") / "model.ifc")


@pytest.fixture(scope="module")
def executor(model_path: Path, isolation: str) -> Iterator[IsolatedExecutor]:
    runner = IsolatedExecutor(model_path, isolation=isolation)
    assert runner.isolation == isolation
    yield runner
    runner.close()


_counter = iter(range(1_000_000))


def run(executor: IsolatedExecutor, code: str, mode: str = "automate", timeout_s: float = 20, **kwargs) -> dict:
    return executor.execute(execute_command(f"r{next(_counter)}", mode, code, timeout_s, **kwargs))


def tracked(executor: IsolatedExecutor, code: str) -> tuple[dict, dict]:
    """Run an automation, read what the epilogue saw, and discard it (the shared model stays as it was)."""
    request_id = f"r{next(_counter)}"
    result = executor.execute(execute_command(request_id, "automate", code, 20, epilogue_code=REPORT, hold=True))
    assert result["ok"] and result.get("held"), result.get("error")
    discarded = executor.decide(request_id, "discard")
    assert discarded["committed"] is False
    return result, json.loads(result["epilogue_stdout"])


def ids_by_name(executor: IsolatedExecutor) -> dict[str, int]:
    result = run(executor, "import json\nprint(json.dumps({e.Name: e.id() for e in model.by_type('IfcProduct')"
                           " + model.by_type('IfcTypeProduct') if e.Name}))", mode="collect")
    return json.loads(result["stdout"])


def openings_by_door_tag(executor: IsolatedExecutor) -> dict[str, int]:
    code = ("import json\nprint(json.dumps({d.Tag: d.FillsVoids[0].RelatingOpeningElement.id()"
            " for d in model.by_type('IfcDoor')}))")
    return json.loads(run(executor, code, mode="collect")["stdout"])


def test_add_modify_delete_are_reported_exactly(executor: IsolatedExecutor, model_path: Path):
    ids = ids_by_name(executor)
    openings = openings_by_door_tag(executor)
    code = """
byname = {w.Name: w for w in model.by_type('IfcWall')}
byname['W101'].Name = 'renamed'
matrix = ifcopenshell.util.placement.get_local_placement(byname['W104'].ObjectPlacement)
matrix[1, 3] += 0.5
ifcopenshell.api.geometry.edit_object_placement(model, product=byname['W104'], matrix=matrix)
pset = ifcopenshell.api.pset.add_pset(model, product=byname['W103'], name='Pset_WallCommon')
ifcopenshell.api.pset.edit_pset(model, pset=pset, properties={'IsExternal': True})
door = [d for d in model.by_type('IfcDoor') if d.Tag == 'D201'][0]
ifcopenshell.api.root.remove_product(model, product=door)
storey = model.by_type('IfcBuildingStorey')[0]
new = ifcopenshell.api.root.create_entity(model, ifc_class='IfcWall', name='new wall')
ifcopenshell.api.spatial.assign_container(model, relating_structure=storey, products=[new])
print(new.id())
"""
    before = model_path.read_bytes()
    result, seen = tracked(executor, code)
    new_id = int(result["stdout"].split()[-1])

    # The door's opening lost its filling, so it changed too; the storey that gained a wall did not.
    expected = {"added": [new_id], "modified": sorted([ids["W101"], ids["W103"], ids["W104"], openings["D201"]]),
                "deleted": [ids["Door 2.1"]]}
    assert result["changes"] == expected
    assert seen["changes"] == expected
    assert sorted(seen["geometry"]) == sorted([ids["W104"], openings["D201"], ids["Door 2.1"], new_id])
    deleted = seen["deleted"][str(ids["Door 2.1"])]
    assert deleted["class"] == "IfcDoor" and deleted["type"] == "DT-01" and deleted["storey"] == "Level 2"
    assert deleted["name"] == "Door 2.1" and len(deleted["global_id"]) == 22
    assert model_path.read_bytes() == before


def test_added_then_deleted_cancels_and_modified_excludes_added(executor: IsolatedExecutor):
    ids = ids_by_name(executor)
    code = """
storey = model.by_type('IfcBuildingStorey')[0]
kept = ifcopenshell.api.root.create_entity(model, ifc_class='IfcWall', name='kept')
ifcopenshell.api.spatial.assign_container(model, relating_structure=storey, products=[kept])
kept.Name = 'kept, renamed'
kept.Description = 'edited after creation'
gone = ifcopenshell.api.root.create_entity(model, ifc_class='IfcColumn', name='gone')
ifcopenshell.api.spatial.assign_container(model, relating_structure=storey, products=[gone])
ifcopenshell.api.root.remove_product(model, product=gone)
wall = [w for w in model.by_type('IfcWall') if w.Name == 'W102'][0]
wall.Name = 'first'
wall.Name = 'W102'
print(kept.id())
"""
    result, _ = tracked(executor, code)
    # W102 was renamed and renamed back: it did not change (issue 22, item 5)
    assert result["changes"] == {"added": [int(result["stdout"].split()[-1])], "modified": [], "deleted": []}
    assert ids["W102"] not in result["changes"]["modified"]


def test_relationship_changes_touch_only_the_members_that_moved(executor: IsolatedExecutor):
    ids = ids_by_name(executor)
    code = """
storeys = {s.Name: s for s in model.by_type('IfcBuildingStorey')}
wall = [w for w in model.by_type('IfcWall') if w.Name == 'W101'][0]
ifcopenshell.api.spatial.assign_container(model, relating_structure=storeys['Level 2'], products=[wall])
other_type = ifcopenshell.api.root.create_entity(model, ifc_class='IfcWallType', name='WT-300')
moved = [w for w in model.by_type('IfcWall') if w.Name == 'W202'][0]
ifcopenshell.api.type.assign_type(model, related_objects=[moved], relating_type=other_type)
"""
    result, _ = tracked(executor, code)
    # W101's door opening is placed relative to the wall; the API re-bases that placement, so it changed too.
    assert result["changes"]["modified"] == sorted([ids["W101"], openings_by_door_tag(executor)["D101"], ids["W202"]])
    assert len(result["changes"]["added"]) == 1 and result["changes"]["deleted"] == []


def test_renaming_a_type_changes_the_type_not_its_occurrences(executor: IsolatedExecutor):
    ids = ids_by_name(executor)
    result, seen = tracked(executor, "[t for t in model.by_type('IfcWallType') if t.Name == 'WT-200'][0].Name = 'X'")
    assert result["changes"] == {"added": [], "modified": [ids["WT-200"]], "deleted": []}
    assert seen["geometry"] == []


def test_moving_a_storey_moves_what_is_placed_on_it(executor: IsolatedExecutor):
    placed_on = json.loads(run(executor, """
import json
storey = [s for s in model.by_type('IfcBuildingStorey') if s.Name == 'Level 2'][0]
def chain(placement):
    while placement is not None:
        yield placement
        placement = placement.PlacementRelTo
print(json.dumps(sorted(p.id() for p in model.by_type('IfcProduct')
                        if p.ObjectPlacement and storey.ObjectPlacement in chain(p.ObjectPlacement))))
""", mode="collect")["stdout"])
    code = """
storey = [s for s in model.by_type('IfcBuildingStorey') if s.Name == 'Level 2'][0]
storey.ObjectPlacement.RelativePlacement.Location.Coordinates = (0.0, 0.0, 9000.0)
"""
    result, seen = tracked(executor, code)
    assert len(placed_on) >= 5  # the storey, its walls and doors, and the openings in those walls
    assert result["changes"]["modified"] == placed_on
    assert sorted(seen["geometry"]) == placed_on


def test_collect_commits_nothing_and_warns_about_its_changes(executor: IsolatedExecutor, model_path: Path):
    before = model_path.read_bytes()
    result = run(executor, "for w in model.by_type('IfcWall'):\n    w.Name = 'x'\nprint('done')", mode="collect")
    assert result["ok"] and not result["committed"] and result["stdout"] == "done\n"
    assert result["changes"] == {"added": [], "modified": [], "deleted": []}
    assert "rolled back" in result["failures"][0]["message"]
    assert model_path.read_bytes() == before
    assert "W101" in run(executor, "print([w.Name for w in model.by_type('IfcWall')])", mode="collect")["stdout"]


def test_stdout_is_captured_in_order_and_capped(executor: IsolatedExecutor):
    ordered = run(executor, "import sys\nprint('a')\nsys.stdout.write('b\\n')\nprint('c', end='')", mode="collect")
    assert ordered["stdout"] == "a\nb\nc" and ordered["stdout_truncated"] is False

    flood = run(executor, "for _ in range(40):\n    print('x' * 100_000)", mode="collect")
    assert flood["ok"] and flood["stdout_truncated"] is True
    assert STDOUT_CAP_BYTES - 100_001 <= len(flood["stdout"]) <= STDOUT_CAP_BYTES


def test_errors_carry_the_script_line_and_only_script_frames(executor: IsolatedExecutor):
    code = "def look(n):\n    return model.by_id(n)\n\nlook(10**8)\n"
    result = run(executor, code)
    error = result["error"]
    assert result["ok"] is False and error["type"] == "RuntimeError" and "not found" in error["message"]
    assert error["line"] == 2
    assert 'File "<script>", line 4' in error["traceback"] and 'File "<script>", line 2' in error["traceback"]
    assert "site-packages" not in error["traceback"] and "inside libraries not shown" in error["traceback"]
    assert "return model.by_id(n)" in error["traceback"]

    syntax = run(executor, "x = 1\nif x\n    pass\n")
    assert syntax["error"]["type"] == "SyntaxError" and syntax["error"]["line"] == 2


def test_exit_zero_is_success_and_other_exits_fail(executor: IsolatedExecutor):
    assert run(executor, "import sys\nprint('early')\nsys.exit(0)\nprint('never')", mode="collect")["stdout"] == "early\n"
    failed = run(executor, "import sys\nsys.exit(3)", mode="collect")
    assert failed["ok"] is False and failed["error"]["type"] == "SystemExit" and failed["error"]["line"] == 2


def test_a_hang_is_stopped_at_its_deadline_with_its_output_so_far(executor: IsolatedExecutor, model_path: Path):
    before = model_path.read_bytes()
    executor.wait_warm()  # under spawn, a spare still loading would count against the deadline check below
    started = time.monotonic()
    result = run(executor, "print('working', flush=True)\nmodel.by_type('IfcWall')[0].Name = 'x'\nwhile True:\n    pass",
                 timeout_s=1.0)
    assert time.monotonic() - started < 5
    assert result["timed_out"] is True and result["error"]["type"] == "Timeout" and result["committed"] is False
    assert result["stdout"] == "working\n"
    assert model_path.read_bytes() == before


@pytest.mark.parametrize("crash", ["import os\nos.abort()", "import os\nos.kill(os.getpid(), 9)",
                                   "import ctypes\nctypes.string_at(0)"])
def test_a_native_crash_is_contained(executor: IsolatedExecutor, model_path: Path, crash: str):
    before = model_path.read_bytes()
    result = run(executor, "model.by_type('IfcWall')[0].Name = 'x'\n" + crash)
    assert result["ok"] is False and result["committed"] is False and result["error"]["type"] == "HostCrash"
    assert "SIG" in result["error"]["message"]
    if "kill" not in crash:  # a SIGKILL leaves no Python traceback to read the line from
        assert result["error"]["line"] == 3
    assert model_path.read_bytes() == before
    assert run(executor, "print(len(model.by_type('IfcWall')))", mode="collect")["stdout"] == "8\n"


def test_epilogue_failure_is_a_warning_and_the_automation_still_commits(tmp_path: Path, isolation: str):
    path = write_small_building(tmp_path / "m.ifc")
    runner = IsolatedExecutor(path, isolation=isolation)
    try:
        result = run(runner, "model.by_type('IfcWall')[0].Name = 'committed'", epilogue_code="print('partial')\n1/0\n")
        assert result["ok"] and result["committed"]
        assert "ZeroDivisionError" in result["failures"][0]["message"]
        assert result["epilogue_stdout"] == "partial\n"
        assert any(w.Name == "committed" for w in open_checked(path).by_type("IfcWall"))

        sneaky = run(runner, "model.by_type('IfcWall')[1].Name = 'never'",
                     epilogue_code="model.by_type('IfcWall')[2].Name = 'epilogue edit'\n")
        assert sneaky["ok"] is False and sneaky["committed"] is False
        assert sneaky["error"]["type"] == "EpilogueModifiedModel"
        assert not any(w.Name == "never" for w in open_checked(path).by_type("IfcWall"))
    finally:
        runner.close()


def test_ifcopenshell_transactions_nest_and_undo_is_refused(executor: IsolatedExecutor):
    code = """
model.begin_transaction()
temporary = model.createIfcWall(ifcopenshell.guid.new(), Name='temporary')
model.discard_transaction()
print(len([w for w in model.by_type('IfcWall') if w.Name == 'temporary']))
model.undo()
"""
    result = run(executor, code)
    assert result["stdout"] == "0\n"
    assert result["ok"] is False and result["error"]["line"] == 6 and "undo/redo" in result["error"]["message"]


def test_hold_keep_discard_snapshot_and_expiry(tmp_path: Path, isolation: str):
    path = write_small_building(tmp_path / "m.ifc")
    runner = IsolatedExecutor(path, hold_timeout_s=1.5, isolation=isolation)
    try:
        before = path.read_bytes()
        held = runner.execute(execute_command("h1", "automate", "model.by_type('IfcWall')[0].Name = 'held'", 10, hold=True))
        assert held["ok"] and held["held"] and not held["committed"] and runner.held_request_id == "h1"
        busy = run(runner, "print(1)", mode="collect")
        assert busy["error"]["type"] == "Busy"
        runner.snapshot_held(tmp_path / "preview.ifc")
        assert open_checked(tmp_path / "preview.ifc").by_type("IfcWall")[0].Name == "held"
        assert path.read_bytes() == before

        discarded = runner.decide("h1", "discard")
        assert discarded["committed"] is False and discarded["held"] is False and path.read_bytes() == before

        runner.execute(execute_command("h2", "automate", "model.by_type('IfcWall')[0].Name = 'kept'", 10, hold=True))
        kept = runner.decide("h2", "keep")
        assert kept["committed"] is True and open_checked(path).by_type("IfcWall")[0].Name == "kept"

        runner.execute(execute_command("h3", "automate", "model.by_type('IfcWall')[0].Name = 'late'", 10, hold=True))
        time.sleep(2.0)
        late = runner.decide("h3", "keep")
        assert late.get("unknown") and "1.5 s" in late["message"]
        assert open_checked(path).by_type("IfcWall")[0].Name == "kept"
    finally:
        runner.close()


def test_losing_the_keeper_keeps_what_was_committed_and_stops_its_script(tmp_path: Path, isolation: str):
    path = write_small_building(tmp_path / "m.ifc")
    runner = IsolatedExecutor(path, isolation=isolation)
    script_pids: list[int] = []

    def kill_the_keeper(keeper: int) -> None:
        script_pids.extend(child_pids(keeper))  # the script's process (and a warm spare, under spawn)
        os.kill(keeper, signal.SIGKILL)

    try:
        assert run(runner, "model.by_type('IfcWall')[0].Name = 'survives'")["committed"]
        time.sleep(0.5)
        threading.Timer(1.5, kill_the_keeper, (runner.keeper_pid,)).start()
        lost = run(runner, "while True:\n    pass\n", timeout_s=60)
        assert lost["ok"] is False and lost["error"]["type"] == "HostCrash" and "restarted" in lost["error"]["message"]
        assert script_pids, "the script's process was not found"
        deadline = time.monotonic() + 5
        while any(_alive(pid) for pid in script_pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(pid) for pid in script_pids), "the script outlived its keeper"
        again = run(runner, "print(model.by_type('IfcWall')[0].Name)", mode="collect")
        assert again["stdout"] == "survives\n"
    finally:
        runner.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(")")[-1].split()[0] != "Z"


def test_edits_made_to_the_file_by_another_program_are_adopted(tmp_path: Path, isolation: str):
    path = write_small_building(tmp_path / "m.ifc")
    runner = IsolatedExecutor(path, isolation=isolation)
    try:
        other = ifcopenshell.open(str(path))
        other.by_type("IfcWall")[0].Name = "edited elsewhere"
        other.write(str(path))
        result = run(runner, "print(model.by_type('IfcWall')[0].Name)", mode="collect")
        assert result["stdout"] == "edited elsewhere\n"
        assert "changed on disk" in result["external_changes"]["summary"]
        assert "external_changes" not in run(runner, "print(1)", mode="collect")
    finally:
        runner.close()


def test_out_path_receives_commits_and_the_input_is_never_written(tmp_path: Path, isolation: str):
    path = write_small_building(tmp_path / "in.ifc")
    out = tmp_path / "out.ifc"
    before = path.read_bytes()
    runner = IsolatedExecutor(path, out, isolation=isolation)
    try:
        assert run(runner, "model.by_type('IfcWall')[0].Name = 'saved elsewhere'")["committed"]
        assert run(runner, "model.by_type('IfcWall')[1].Name = 'second'")["committed"]
        assert runner.committed_path == out.resolve()
    finally:
        runner.close()
    assert path.read_bytes() == before
    names = [w.Name for w in open_checked(out).by_type("IfcWall")]
    assert names[:2] == ["saved elsewhere", "second"]


def test_a_script_cannot_write_over_the_model_file(executor: IsolatedExecutor, model_path: Path, tmp_path: Path):
    before = model_path.read_bytes()
    result = run(executor, f"model.by_type('IfcWall')[0].Name = 'x'\nmodel.write({str(model_path)!r})")
    assert result["ok"] is False and result["error"]["type"] == "PermissionError" and result["error"]["line"] == 2
    assert model_path.read_bytes() == before
    own = run(executor, "import os\nmodel.write('copy.ifc')\nprint(os.path.getsize('copy.ifc') > 1000)", mode="collect")
    assert own["ok"] and own["stdout"] == "True\n", own.get("error")


def test_a_read_only_script_cannot_append_to_the_model_file(executor: IsolatedExecutor, model_path: Path):
    """Issue 13 L6: the script works on the model in memory; the file on disk is out of its reach."""
    before = model_path.read_bytes()
    result = run(executor, f"with open({str(model_path)!r}, 'a') as handle:\n    handle.write('#999=IFCWALL();')",
                 mode="collect")
    assert result["ok"] is False and result["error"]["type"] == "PermissionError", result
    assert model_path.read_bytes() == before
    reading = run(executor, f"open({str(model_path)!r}).read()", mode="collect")
    assert reading["ok"] is False and reading["error"]["type"] == "PermissionError"


def test_a_script_imports_the_scheduling_and_costing_api_the_keeper_leaves_to_scripts(executor: IsolatedExecutor):
    """ifcopenshell.api.sequence, cost and resource (they pull networkx and requests) are not preimported for every
    script; a confined script imports them from the Python installation, which it may read, and uses them."""
    code = ("import sys\nprint('networkx' in sys.modules, 'requests' in sys.modules)\n"
            "import ifcopenshell.api.cost, ifcopenshell.api.resource, ifcopenshell.api.sequence\n"
            "schedule = ifcopenshell.api.sequence.add_work_schedule(model, name='Build')\n"
            "task = ifcopenshell.api.sequence.add_task(model, work_schedule=schedule, name='Walls')\n"
            "budget = ifcopenshell.api.cost.add_cost_schedule(model, name='Budget')\n"
            "crew = ifcopenshell.api.resource.add_resource(model, ifc_class='IfcCrewResource')\n"
            "print(task.is_a(), budget.is_a(), crew.is_a())\n")
    result = run(executor, code, mode="collect", timeout_s=60)
    assert result["ok"], result.get("error")
    assert result["stdout"].splitlines() == ["False False", "IfcTask IfcCostSchedule IfcCrewResource"]
    assert executor.sandbox.get("filesystem", "").startswith("read-only Python"), executor.sandbox


def test_a_forked_script_process_inherits_the_keepers_objects_frozen_out_of_the_collector(executor, isolation):
    """fork: the keeper freezes its objects before forking, so a collection in the script's process does not
    touch (and copy) the pages holding them; it stays so after a commit (the keeper collects, then freezes)."""
    probe = "import gc\nprint(gc.get_freeze_count())\n"
    before = int(run(executor, probe, mode="collect")["stdout"])
    committed = run(executor, "model.by_type('IfcWall')[0].Name = 'frozen'\n")
    assert committed["committed"] is True, committed.get("error")
    after = int(run(executor, probe, mode="collect")["stdout"])
    if isolation == "fork":
        assert before > 10_000 and after > 10_000  # the preimported IfcOpenShell API alone holds more
    else:  # a spawned spare is its own interpreter: nothing of the keeper's is in it
        assert before == after == 0
