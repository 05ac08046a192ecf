"""An IFC host started by a process of ours (nexus run, mcp --ifc, eval, batch) ends with that process, however
it ends: an MCP client killing `nexus mcp`, kill -9, a crash. Before, it kept its model in memory and tried to
reconnect to a server that was gone, forever."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from ifc_host.sample import write_sample_model
from tests.support.waiting import wait_until


def _gone(pid: int) -> bool:
    """Ended (a zombie nobody reaps counts: a container's init may not reap)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _parent(tmp_path: Path) -> tuple[subprocess.Popen, int, Path]:
    model, log = tmp_path / "model.ifc", tmp_path / "host.log"
    write_sample_model(model, storeys=1)
    code = textwrap.dedent(f"""
        import time
        from ifc_host.launcher import start_host_process
        host = start_host_process({str(model)!r}, "http://127.0.0.1:9", "nx_not_a_real_token", log_path={str(log)!r})
        print(host.pid, flush=True)
        time.sleep(600)
    """)
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    host_pid = int(parent.stdout.readline())
    return parent, host_pid, log


def test_a_host_ends_when_the_process_that_started_it_is_killed(tmp_path):
    parent, host_pid, log = _parent(tmp_path)
    # The server does not exist: the host is retrying its connection, as it would after the server went away.
    wait_until(lambda: "connect" in log.read_text(errors="replace").lower(), timeout=120)
    assert not _gone(host_pid)
    parent.send_signal(signal.SIGKILL)
    parent.wait(30)
    wait_until(lambda: _gone(host_pid), timeout=60)
    assert "the process that started this host has ended; stopping" in log.read_text(errors="replace")


def test_a_token_piped_by_a_person_still_works_and_the_host_does_not_stop_at_the_end_of_input(tmp_path):
    """`echo TOKEN | nexus ifc-host --token-file -` reads the first line; only our own launcher asks the host
    to stop when its standard input closes."""
    model, log = tmp_path / "model.ifc", tmp_path / "host.log"
    write_sample_model(model, storeys=1)
    with log.open("wb") as out:
        host = subprocess.Popen([sys.executable, "-m", "ifc_host.launcher", str(model), "--server", "http://127.0.0.1:9",
                                 "--token-file", "-"], stdin=subprocess.PIPE, stdout=out, stderr=out,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})
        assert host.stdin is not None
        host.stdin.write(b"nx_not_a_real_token\n")
        host.stdin.close()
        try:
            wait_until(lambda: "connect" in log.read_text(errors="replace").lower(), timeout=120)
            time.sleep(1.0)
            assert host.poll() is None, log.read_text(errors="replace")
        finally:
            host.terminate()
            host.wait(30)
    assert "has ended; stopping" not in log.read_text(errors="replace")
