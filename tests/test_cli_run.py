"""`nexus run` drives the loop in its own process and the IFC host in a child process of its own."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.client import write_script
from tests.support.spine import collect, say

ROOT = Path(__file__).resolve().parents[1]
BUSY = "n = 0\nfor i in range(15000000):\n    n += i\nprint(n)\n"  # a few seconds of work, no imports


def _children(pid: int) -> dict[int, str]:
    """Live child processes of `pid`, with their command lines (Linux /proc)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found[int(entry.name)] = cmdline
    return found


@pytest.fixture(scope="module")
def sample_ifc(tmp_path_factory) -> Path:
    from ifc_host.sample import write_sample_model

    path = tmp_path_factory.mktemp("ifc") / "sample.ifc"
    write_sample_model(path, storeys=1)
    return path


@pytest.mark.skipif(sys.platform != "linux", reason="reads the process tree from /proc")
def test_the_orchestrator_has_one_child_the_ifc_host_and_scripts_run_below_it(tmp_path, sample_ifc):
    spec = write_script(tmp_path / "busy.json", [collect(BUSY), say("Done.")])
    process = subprocess.Popen(
        [sys.executable, "-m", "cloud.cli", "run", "Work a while", "--ifc", str(sample_ifc), "--model", spec,
         "--json", "--out", str(tmp_path / "out.ifc"), "--db", str(tmp_path / "run.db")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=dict(os.environ))
    seen_children: dict[int, str] = {}
    below_host = 0
    while process.poll() is None:
        children = _children(process.pid)
        for pid, cmdline in children.items():  # empty while it forks, execs or exits: keep what it said
            seen_children[pid] = cmdline if cmdline.strip() else seen_children.get(pid, "")
        below_host = max(below_host, sum(len(_children(pid)) for pid in children))
        time.sleep(0.05)
    stdout, stderr = process.communicate(timeout=180)
    assert process.returncode == 0, stdout[-2000:] + stderr[-2000:]
    assert len(seen_children) == 1, seen_children  # the host, and nothing else: no script runs in or under us
    (host_cmdline,) = seen_children.values()  # read while it served
    assert "ifc_host" in host_cmdline or "ifc-host" in host_cmdline
    assert below_host >= 1  # the host's own script process(es)
    chunks = [json.loads(line) for line in stdout.splitlines()]
    (result,) = [c for c in chunks if c["type"] == "Metadata" and c["metadata"]["kind"] == "tool_result"]
    assert result["metadata"]["stdout"] == f"{sum(range(15000000))}\n"
    assert chunks[-1] == {"type": "Complete", "content": "Done."}
    from cloud.store import Store

    (token,) = Store(tmp_path / "run.db").list_tokens()  # the host's own token: host-only, and gone now
    assert token["scope"] == "host" and token["revoked"] is not None
