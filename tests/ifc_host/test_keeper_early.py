"""The host's first call waits for the slower of its two starts, not their sum: the launcher starts the model
keeper before it imports the rest of the host (IfcOpenShell, the renderer), so the keeper imports and opens
the model meanwhile. Real processes, real file."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ifc_host.executor import IsolatedExecutor, execute_command
from ifc_host.keeper_process import start_early
from ifc_host.sample import write_sample_model

DOORS = "print(len(model.by_type('IfcDoor')))"


def test_the_launcher_needs_no_ifcopenshell_to_start_the_keeper():
    probe = "import sys, ifc_host.launcher; print(sorted(m for m in sys.modules if m.startswith('ifcopenshell')))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]", "importing the launcher imported IfcOpenShell before the keeper starts"


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
