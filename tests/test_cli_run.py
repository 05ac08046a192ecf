"""`nexus run` drives the loop in its own process and the IFC host in a child process of its own."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.client import write_script
from tests.support.spine import collect, say

ROOT = Path(__file__).resolve().parents[1]
ANCESTRY = ("import os\n"
            "def parent(pid):\n"
            "    return int(open('/proc/%d/stat' % pid).read().rsplit(')', 1)[1].split()[1])\n"
            "chain = [os.getpid()]\n"
            "while chain[-1] > 1 and len(chain) < 6:\n"
            "    chain.append(parent(chain[-1]))\n"
            "for p in chain:\n"
            "    print(str(p) + ' ' + open('/proc/%d/cmdline' % p).read().replace(chr(0), ' ').strip())\n")


@pytest.fixture(scope="module")
def sample_ifc(tmp_path_factory) -> Path:
    from ifc_host.sample import write_sample_model

    path = tmp_path_factory.mktemp("ifc") / "sample.ifc"
    write_sample_model(path, storeys=1)
    return path


@pytest.mark.skipif(sys.platform != "linux", reason="reads the process tree from /proc")
def test_the_scripts_run_under_a_host_process_that_is_not_the_orchestrator(tmp_path, sample_ifc):
    spec = write_script(tmp_path / "ancestry.json", [collect(ANCESTRY), say("Done.")])
    process = subprocess.Popen(
        [sys.executable, "-m", "cloud.cli", "run", "Who runs you?", "--ifc", str(sample_ifc), "--model", spec,
         "--json", "--out", str(tmp_path / "out.ifc"), "--db", str(tmp_path / "run.db")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=dict(os.environ))
    stdout, stderr = process.communicate(timeout=180)
    assert process.returncode == 0, stdout[-2000:] + stderr[-2000:]
    chunks = [json.loads(line) for line in stdout.splitlines()]
    (result,) = [c for c in chunks if c["type"] == "Metadata" and c["metadata"]["kind"] == "tool_result"]
    lines = result["metadata"]["stdout"].splitlines()
    chain = [int(line.split(" ", 1)[0]) for line in lines]
    assert process.pid in chain  # the script descends from `nexus run` ...
    at = chain.index(process.pid)
    # ... through the IFC host's own process, which is not the orchestrator's
    assert at >= 2 and " ifc-host " in lines[at - 1] and " run " in lines[at]
    assert chunks[-1] == {"type": "Complete", "content": "Done."}
