"""fastmcp 4.1.6's client (PyPI, in its own virtualenv under .cache, installed by scripts/test) against
`nexus mcp --ifc --policy ask`, under both protocol versions: with an elicitation handler the person is
asked (under 2026-07-28, fastmcp's default, through an input_required result) and the change is kept;
without one the call is answered at once as held for review, with the chat page's link."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import ifcopenshell
import pytest

from tests.mcp.support import ROOT

FASTMCP_PYTHON = ROOT / ".cache" / "fastmcp-venv" / "bin" / "python"
CLIENT = Path(__file__).with_name("fastmcp_client.py")


@pytest.fixture(scope="module")
def sample_ifc(tmp_path_factory) -> Path:
    from ifc_host.sample import write_sample_model

    path = tmp_path_factory.mktemp("mcp_fastmcp") / "sample.ifc"
    write_sample_model(str(path), storeys=1)
    return path


def _fastmcp(mode: str, elicit: bool, name: str, model: Path, tmp: Path) -> dict:
    assert FASTMCP_PYTHON.exists(), f"{FASTMCP_PYTHON} is missing: scripts/test installs fastmcp there"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    config = {"python": sys.executable, "cwd": str(ROOT), "env": env, "mode": mode, "elicit": elicit,
              "code": f"model.by_type('IfcDoor')[0].Name = '{name}'\n",
              "args": ["--ifc", str(model), "--out", str(tmp / "out.ifc"), "--db", str(tmp / "db.sqlite"),
                       "--policy", "ask", "--review-timeout", "120"]}
    done = subprocess.run([str(FASTMCP_PYTHON), str(CLIENT)], input=json.dumps(config), capture_output=True,
                          text=True, timeout=400, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("mode", ["legacy", "auto"])  # auto: fastmcp's default, 2026-07-28 with this server
def test_fastmcp_asks_the_person_under_both_protocol_versions(mode, sample_ifc, tmp_path):
    seen = _fastmcp(mode, True, "FASTMCP-KEPT", sample_ifc, tmp_path)
    assert seen["protocol"] == ("2025-11-25" if mode == "legacy" else "2026-07-28"), seen
    assert len(seen["asked"]) == 1 and "FASTMCP-KEPT" in seen["asked"][0], seen
    assert seen["structured"]["committed"] is True and seen["structured"]["review_status"] == "kept", seen
    names = {d.Name for d in ifcopenshell.open(str(tmp_path / "out.ifc")).by_type("IfcDoor")}
    assert "FASTMCP-KEPT" in names


def test_fastmcp_without_elicitation_is_told_where_to_decide(sample_ifc, tmp_path):
    seen = _fastmcp("auto", False, "FASTMCP-HELD", sample_ifc, tmp_path)
    assert seen["structured"]["review_status"] == "pending" and not seen["is_error"], seen
    assert seen["texts"][0].startswith("Held for review: decide at http://127.0.0.1:"), seen
    assert "#session=" in seen["structured"]["decide_at"]
    assert not (tmp_path / "out.ifc").exists()  # nothing kept: nobody decided
