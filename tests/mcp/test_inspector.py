"""The MCP Inspector's CLI (`@modelcontextprotocol/inspector` from npm, installed by scripts/test into
.cache/npm) against `nexus mcp --ifc`: a second client no one here wrote."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import ifcopenshell

from tests.mcp.support import ROOT

INSPECTOR = ROOT / ".cache" / "npm" / "node_modules" / ".bin" / "mcp-inspector"


def _inspector(model: Path, db: Path, *method: str) -> dict:
    assert INSPECTOR.exists(), f"{INSPECTOR} is missing: scripts/test installs it (npm install --prefix .cache/npm)"
    # The server answers at once, but starting Python with its imports takes seconds on a busy machine (the
    # Inspector's default is 15 s); tools/call then waits for the IFC host.
    done = subprocess.run([str(INSPECTOR), "--cli", "--connect-timeout", "120000", sys.executable, "-m", "cloud.cli", "mcp", "--ifc", str(model),
                           "--db", str(db), *method], capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_the_inspector_lists_the_tools_and_calls_one(tmp_path):
    from ifc_host.sample import write_sample_model

    model = tmp_path / "sample.ifc"
    write_sample_model(str(model), storeys=1)
    listed = _inspector(model, tmp_path / "db.sqlite", "--method", "tools/list")
    assert {t["name"] for t in listed["tools"]} == {"execute_data_collection", "execute_task_automation",
                                                    "capture_view", "lookup_api", "list_hosts", "run_task",
                                                    "get_run", "find_skill", "run_skill", "review_status"}
    called = _inspector(model, tmp_path / "db.sqlite", "--method", "tools/call", "--tool-name",
                        "execute_data_collection", "--tool-arg", "code=print(len(model.by_type('IfcWall')))")
    walls = len(ifcopenshell.open(str(model)).by_type("IfcWall"))
    assert called["structuredContent"]["stdout"].strip() == str(walls)
    assert not called.get("isError")
