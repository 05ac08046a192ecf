"""The host's first call waits for the slower of its two starts, not their sum: the launcher starts the model
keeper before it imports the rest of the host, so the keeper imports IfcOpenShell and opens the model
meanwhile; and the host's own process never imports IfcOpenShell at all (only the keeper, its scripts'
processes and the render servers do). Real processes, real file, a real orchestrator."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import ifcopenshell
import pytest

from ifc_host.executor import IsolatedExecutor, execute_command
from ifc_host.keeper_process import start_early
from ifc_host.launcher import HostProcess, host_environment
from ifc_host.sample import write_sample_model
from tests.conformance.hosts import sample_building
from tests.support.server import RunningServer

DOORS = "print(len(model.by_type('IfcDoor')))"


def test_the_launcher_needs_no_ifcopenshell_to_start_the_keeper():
    probe = "import sys, ifc_host.launcher; print(sorted(m for m in sys.modules if m.startswith('ifcopenshell')))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]", "importing the launcher imported IfcOpenShell before the keeper starts"


# The launcher's main, reporting at exit which modules of IfcOpenShell and numpy its process loaded.
LAUNCHER_REPORTING_ITS_MODULES = """
import atexit, json, sys
atexit.register(lambda: print("loaded: " + json.dumps(sorted(
    m for m in sys.modules if m.split(".")[0] in ("ifcopenshell", "numpy"))), flush=True))
from ifc_host.launcher import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_connected_host_that_served_calls_has_no_ifcopenshell_in_its_own_process(server: RunningServer,
                                                                                  tmp_path: Path):
    """The runtime process (websocket, keeper proxy, render client) takes the IfcOpenShell version from the
    keeper's first message: IfcOpenShell and numpy load in the keeper, its scripts and the render servers."""
    model = tmp_path / "model.ifc"
    model.write_bytes(sample_building().read_bytes())
    log_path = tmp_path / "host.log"
    log = log_path.open("ab")
    process = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER_REPORTING_ITS_MODULES, str(model), "--server", server.url, "--token-file", "-",
         "--with-parent", "--isolation", "fork"],
        stdin=subprocess.PIPE, stdout=log, stderr=log, env=host_environment(), start_new_session=True)
    assert process.stdin is not None
    process.stdin.write(server.token("lean").encode() + b"\n")
    process.stdin.flush()
    host = HostProcess(process, log_path, log)
    try:
        host_id = server.wait_for_host("lean", timeout=120)
        (connection,) = [h for h in server.state.hosts.for_user("lean") if h.host_id == host_id]
        assert connection.hello.host_version == ifcopenshell.version  # as the keeper that runs the scripts has it
        calls = [{"type": "execute", "mode": "collect", "code": DOORS, "timeout_s": 60},
                 {"type": "execute", "mode": "automate", "code": "model.by_type('IfcWall')[0].Name = 'lean'\n",
                  "timeout_s": 60},
                 {"type": "context"},
                 {"type": "export_view", "view": "Level 1", "max_px": 256, "element_ids": []}]
        for call in calls:
            reply = server.send_to_host(host_id, call, timeout=180)
            assert reply.get("ok"), reply
    finally:
        host.stop()
    assert process.returncode == 0, host.log_tail(40)
    (report,) = [line for line in log_path.read_text().splitlines() if line.startswith("loaded: ")]
    assert json.loads(report.removeprefix("loaded: ")) == [], "the host's runtime process imported these"


# An executor on each way of starting the keeper and of isolating scripts, in a process of its own.
EXECUTOR_REPORTING_ITS_MODULES = """
import sys
from ifc_host.executor import IsolatedExecutor, execute_command
executor = IsolatedExecutor(sys.argv[1], isolation=sys.argv[2], keeper_launch=sys.argv[3])
try:
    result = executor.execute(execute_command("r1", "collect", "print(len(model.by_type('IfcDoor')))", 60.0))
    assert result["ok"] and int(result["stdout"]) > 0, result
finally:
    executor.close()
print(sorted(m for m in sys.modules if m.split(".")[0] in ("ifcopenshell", "numpy")))
"""


@pytest.mark.parametrize(("isolation", "launch"), [("spawn", "exec"), ("spawn", "multiprocessing")])
def test_the_runtime_side_imports_no_ifcopenshell_with_spares_or_a_keeper_started_by_multiprocessing(
        tmp_path: Path, isolation: str, launch: str):
    """Spawned spares (macOS, Windows) and a keeper started by multiprocessing (Windows) are the keeper's
    business: the process that drives them loads neither IfcOpenShell nor numpy."""
    model = tmp_path / "sample.ifc"
    write_sample_model(str(model), storeys=1)
    out = subprocess.run([sys.executable, "-c", EXECUTOR_REPORTING_ITS_MODULES, str(model), isolation, launch],
                         capture_output=True, text=True, timeout=300, env=host_environment())
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_the_keeper_started_early_is_the_executors_first(tmp_path: Path):
    model = tmp_path / "sample.ifc"
    write_sample_model(str(model), storeys=1)
    launched = start_early(str(model), str(tmp_path / "out.ifc"), "fork")
    assert launched is not None
    executor = IsolatedExecutor(model, tmp_path / "out.ifc", isolation="fork", launched=launched)
    try:
        assert executor.keeper_pid == launched[0].pid, "no second keeper was started"
        assert executor.sandbox.get("environment") == "scrubbed"
        result = executor.execute(execute_command("r1", "collect", DOORS, 60.0))
        assert result["ok"], result
        assert int(result["stdout"]) > 0
    finally:
        executor.close()
    assert launched[0].poll() is not None


def test_an_early_keeper_is_stopped_when_the_executor_refuses_its_arguments(tmp_path: Path):
    model = tmp_path / "sample.ifc"
    write_sample_model(str(model), storeys=1)
    launched = start_early(str(model), None, None)
    assert launched is not None
    with pytest.raises(ValueError, match="isolation must be one of"):
        IsolatedExecutor(model, isolation="thread", launched=launched)
    assert launched[0].wait(timeout=60) is not None


def test_no_early_keeper_for_a_path_the_executor_refuses_in_its_own_words(tmp_path: Path):
    assert start_early(str(tmp_path / "missing.ifc"), None, None) is None
    model = tmp_path / "sample.ifc"
    write_sample_model(str(model), storeys=1)
    assert start_early(str(model), str(tmp_path / "no-such-folder" / "out.ifc"), None) is None
