"""Issue 13 H2 for `nexus demo`: the orchestrator and the IFC host are separate processes, and the host's
process carries neither the orchestrator's API keys nor its own token in its command line or environment."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.processes import child_pids, free_port, read_until, stop

REPO_ROOT = Path(__file__).resolve().parents[2]
FAKE_KEY = "fake-anthropic-key-for-the-demo-test"


@pytest.mark.parametrize("isolation", ["fork", "spawn"])
def test_the_demo_runs_its_host_in_a_separate_process_without_keys_or_token(tmp_path: Path, isolation: str):
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "ANTHROPIC_API_KEY": FAKE_KEY,
           "XDG_DATA_HOME": str(tmp_path / "data")}
    demo = subprocess.Popen([sys.executable, "-m", "cloud.cli", "demo", "--port", str(free_port()), "--db",
                             str(tmp_path / "demo.db"), "--model", "scripted:" + str(REPO_ROOT / "cloud" / "demo" /
                                                                                     "renumber_doors.json"),
                             "--isolation", isolation],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=tmp_path)
    try:
        read_until(demo, r"Open the chat:", 180)
        log = Path(read_until(demo, r"IFC host log:\s+(\S+)", 10).group(1))
        hosts = [pid for pid in child_pids(demo.pid)
                 if b"ifc_host.launcher" in Path(f"/proc/{pid}/cmdline").read_bytes()]
        assert len(hosts) == 1, "the IFC host is not a child process of its own"
        host = hosts[0]
        cmdline = Path(f"/proc/{host}/cmdline").read_bytes().decode(errors="replace")
        environ = Path(f"/proc/{host}/environ").read_bytes().decode(errors="replace")
        assert "nx_" not in cmdline and "--token-file\x00-" in cmdline
        assert FAKE_KEY not in environ and "ANTHROPIC_API_KEY" not in environ and "NEXUS_TOKEN" not in environ
        assert "nx_" not in environ
        deadline = time.monotonic() + 30
        while "what they can reach" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert f"scripts run in {isolation} processes" in log.read_text()
    finally:
        stop(demo)
