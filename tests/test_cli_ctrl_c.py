"""Issue 22, item 4: Ctrl-C on `nexus run` while the host runs a long automation. The first Ctrl-C cancels the
run (the host aborts the script: rolled back), the command exits within 2 s with status 130, the model file
is untouched, and nothing the command started (the host launcher, its keeper, their script processes) is
left running: the process tree is read from /proc, under both isolations."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ifc_host.keeper_process import ISOLATIONS
from tests.support.client import write_script
from tests.support.spine import automate, say

ROOT = Path(__file__).resolve().parents[1]
SLEEP_THEN_RENAME = ("import time\ntime.sleep(15)\n"
                     "for door in model.by_type('IfcDoor'):\n    door.Name = 'Interrupted rename'\n")

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads the process tree from /proc")


def _parents() -> dict[int, int]:
    """Every live (not zombie) process's parent, from /proc."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            found[int(stat.parent.name)] = int(fields[1])
    return found


def _descendants(pid: int) -> set[int]:
    parents, found, frontier = _parents(), set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pids: set[int]) -> set[int]:
    return pids & set(_parents())


def _depth_below(pid: int, pids: set[int]) -> int:
    parents = _parents()
    deepest = 0
    for start in pids:
        depth, current = 0, start
        while current in parents and current != pid and depth < 10:
            current, depth = parents[current], depth + 1
        if current == pid:
            deepest = max(deepest, depth)
    return deepest


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_the_first_ctrl_c_cancels_the_run_and_exits_130_within_2_s_leaving_no_process(tmp_path, isolation):
    from ifc_host.sample import write_sample_model

    model = tmp_path / "model.ifc"
    write_sample_model(model, storeys=1)
    before = model.read_bytes()
    out = tmp_path / "out.ifc"
    spec = write_script(tmp_path / "slow.json", [automate(SLEEP_THEN_RENAME), say("never said")])
    process = subprocess.Popen(
        [sys.executable, "-m", "cloud.cli", "run", "Rename the doors slowly", "--ifc", str(model), "--model", spec,
         "--json", "--out", str(out), "--db", str(tmp_path / "run.db"), "--isolation", isolation],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=dict(os.environ))
    started: set[int] = set()
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(process.stdout), daemon=True)  # type: ignore[arg-type]
    reader.start()
    try:
        # Wait until the run has sent its automation to the host, and the script sleeps in its process.
        deadline = time.monotonic() + 180
        while not any('"type": "ToolCall"' in line for line in list(lines)):
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() < deadline, "the run never reached its tool call"
            time.sleep(0.05)
        time.sleep(2.0)
        started = _descendants(process.pid)
        assert _depth_below(process.pid, started) >= 3  # the host, its keeper, the script's process
        interrupted_at = time.monotonic()
        process.send_signal(signal.SIGINT)
        process.wait(30)
        took = time.monotonic() - interrupted_at
        reader.join(10)
        stdout, stderr = "".join(lines), process.stderr.read() if process.stderr else ""
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, stdout[-2000:] + stderr[-2000:]
    assert took < 2.0, f"nexus run took {took:.2f} s to exit after Ctrl-C"
    deadline = time.monotonic() + 2.0  # a keeper whose host was killed a moment ago is still ending
    while _alive(started) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(started), {pid: Path(f"/proc/{pid}/cmdline").read_bytes() for pid in _alive(started)}
    chunks = [json.loads(line) for line in stdout.splitlines()]
    (result,) = [c for c in chunks if c["type"] == "Metadata" and c["metadata"]["kind"] == "tool_result"]
    assert result["metadata"]["error"]["type"] == "Cancelled", result
    assert "cancelled while running: rolled back" in result["content"]
    assert chunks[-1]["type"] == "Error" and chunks[-1]["metadata"].get("cancelled") is True
    assert model.read_bytes() == before and not out.exists()
