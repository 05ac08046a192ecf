"""Saving and opening, as other programs see the file: permissions and symlinks kept (issue 13 L7), two
hosts on one file (M6), files other tools open despite dangling references (issue 12 item 3), and the
isolation strategy chosen per platform (issue 12 item 7). Real keepers, real files, both strategies."""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from types import SimpleNamespace

import pytest

from cloud.context import render_context_block
from ifc_host import keeper_process
from ifc_host.executor import IsolatedExecutor, execute_command
from ifc_host.keeper_process import ISOLATIONS, default_isolation
from ifc_host.model_file import BadModelError, open_checked, open_warnings
from ifc_host.runtime import start_host_thread
from tests.conformance.ifc_models import write_small_building
from tests.ifc_host.dangling import write_dangling_model
from tests.support.server import RunningServer

_counter = iter(range(1_000_000))


@pytest.fixture(params=ISOLATIONS)
def isolation(request: pytest.FixtureRequest) -> str:
    return request.param


def run(executor: IsolatedExecutor, code: str, mode: str = "automate") -> dict:
    return executor.execute(execute_command(f"i{next(_counter)}", mode, code, 30))


def test_a_commit_keeps_permissions_and_writes_through_a_symlink(tmp_path: Path, isolation: str):
    real = write_small_building(tmp_path / "real.ifc")
    os.chmod(real, 0o640)
    link = tmp_path / "model.ifc"
    link.symlink_to(real.name)
    runner = IsolatedExecutor(link, isolation=isolation)
    try:
        assert run(runner, "model.by_type('IfcWall')[0].Name = 'through the link'")["committed"]
    finally:
        runner.close()
    assert link.is_symlink() and os.readlink(link) == real.name
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    assert open_checked(real).by_type("IfcWall")[0].Name == "through the link"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.ifc", "real.ifc"]  # no temporary left behind


def test_two_hosts_on_one_file_never_lose_each_others_commits(tmp_path: Path, isolation: str):
    path = write_small_building(tmp_path / "shared.ifc")
    first = IsolatedExecutor(path, isolation=isolation)
    second = IsolatedExecutor(path, isolation=isolation)
    try:
        # Both start their run on the same version; the first commits, the second commits afterwards.
        assert run(first, "model.by_type('IfcWall')[0].Name = 'first host'")["committed"]
        second._adopt_edits_made_on_disk = lambda: None  # as if the first commit landed while the script ran
        refused = run(second, "model.by_type('IfcWall')[1].Name = 'second host'")
        assert refused["committed"] is False and refused["error"]["type"] == "CommitConflict"
        assert "changed on disk" in refused["error"]["message"] and "NOT saved" in refused["error"]["message"]
        names = [w.Name for w in open_checked(path).by_type("IfcWall")]
        assert names[0] == "first host" and "second host" not in names

        del second._adopt_edits_made_on_disk
        again = run(second, "print(model.by_type('IfcWall')[0].Name)\nmodel.by_type('IfcWall')[1].Name = 'second host'")
        assert again["stdout"] == "first host\n" and again["committed"], again.get("error")
        names = [w.Name for w in open_checked(path).by_type("IfcWall")]
        assert names[:2] == ["first host", "second host"]
    finally:
        first.close()
        second.close()


def test_a_file_with_dangling_references_opens_with_warnings_and_a_truncated_one_is_refused(tmp_path: Path):
    path, pset, removed = write_dangling_model(tmp_path / "dangling.ifc")
    model = open_checked(path)
    warnings = open_warnings(model)
    dangling = [w for w in warnings if "which is not in the file" in w]
    assert len(dangling) == 4 and all(f"#{pset} refers to #" in w for w in dangling)
    assert all(any(f"#{step_id} " in w for w in dangling) for step_id in removed)
    assert model.by_type("IfcProject") and model.by_type("IfcWall")

    data = path.read_bytes()
    truncated = tmp_path / "truncated.ifc"
    truncated.write_bytes(data[: len(data) * 2 // 3])
    with pytest.raises(BadModelError, match="truncated"):
        open_checked(truncated)
    damaged = tmp_path / "damaged.ifc"
    damaged.write_bytes(data.replace(b"IFCWALL('", b"IFCWALL(('", 1))
    with pytest.raises(BadModelError, match="damaged"):
        open_checked(damaged)
    not_ifc = tmp_path / "notes.ifc"
    not_ifc.write_text("ISO-10303-21;\nHEADER;\nENDSEC;\nDATA;\nENDSEC;\nEND-ISO-10303-21;\n")
    with pytest.raises(BadModelError, match="not a readable IFC file"):
        open_checked(not_ifc)


def test_the_warnings_reach_hello_and_scripts_run_on_such_a_file(server: RunningServer, tmp_path: Path,
                                                                 isolation: str):
    path, pset, removed = write_dangling_model(tmp_path / "dangling.ifc")
    token = server.token("dangling")
    handle = start_host_thread(str(path), server.url, token, isolation=isolation)
    try:
        host_id = handle.wait_connected(60)
        hello = server.state.hosts.get(host_id).hello
        warnings = hello["document"]["warnings"]
        assert "4 recoverable problem(s)" in warnings[0]
        assert sum("which is not in the file" in w for w in warnings) == 4
        block = render_context_block(SimpleNamespace(hello=hello), None)  # what the model reads first
        assert "opened with warnings" in block and f"#{pset} refers to #{removed[0]}" in block
        reply = server.send_to_host(host_id, {"type": "execute", "mode": "automate", "timeout_s": 30, "code": (
            "import json\nwalls = model.by_type('IfcWall')\nwalls[0].Name = 'renamed'\nprint(json.dumps(len(walls)))")},
            timeout=90)
        assert reply["ok"] and reply["committed"], reply.get("error")
        assert json.loads(reply["stdout"]) > 0
        assert open_checked(path).by_type("IfcWall")[0].Name == "renamed"
    finally:
        handle.stop()


def test_the_isolation_is_chosen_by_platform_and_can_be_forced(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.delenv("NEXUS_IFC_ISOLATION", raising=False)
    assert default_isolation() == "fork"  # Linux
    monkeypatch.setattr(keeper_process.sys, "platform", "darwin")
    assert default_isolation() == "spawn"
    monkeypatch.setattr(keeper_process.sys, "platform", "win32")
    assert default_isolation() == "spawn"
    monkeypatch.setenv("NEXUS_IFC_ISOLATION", "fork")
    assert default_isolation() == "fork"
    with pytest.raises(ValueError, match="isolation must be one of"):
        IsolatedExecutor(write_small_building(tmp_path / "m.ifc"), isolation="thread")


def test_a_keeper_started_without_exec_serves_scripts_with_the_same_guarantees(tmp_path: Path):
    """Windows starts the keeper with multiprocessing 'spawn' (no fd passing) and runs scripts in spares:
    the same path, driven here."""
    path = write_small_building(tmp_path / "m.ifc")
    runner = IsolatedExecutor(path, isolation="spawn", keeper_launch="multiprocessing")
    try:
        assert runner.sandbox.get("environment") == "scrubbed"
        before = path.read_bytes()
        crashed = run(runner, "model.by_type('IfcWall')[0].Name = 'x'\nimport os\nos.abort()")
        assert crashed["error"]["type"] == "HostCrash" and "SIGABRT" in crashed["error"]["message"]
        hung = runner.execute(execute_command("hang", "automate", "while True:\n    pass\n", 1.0))
        assert hung["timed_out"] is True and path.read_bytes() == before
        assert run(runner, "model.by_type('IfcWall')[0].Name = 'kept'")["committed"]
        assert run(runner, "print(model.by_type('IfcWall')[0].Name)", mode="collect")["stdout"] == "kept\n"
        os.kill(runner.keeper_pid, 9)
        lost = run(runner, "print(1)", mode="collect")
        assert lost["error"]["type"] == "HostCrash" and "restarted" in lost["error"]["message"]
        assert run(runner, "print(model.by_type('IfcWall')[0].Name)", mode="collect")["stdout"] == "kept\n"
    finally:
        runner.close()
    assert open_checked(path).by_type("IfcWall")[0].Name == "kept"
