"""Child processes in tests (Linux /proc): free ports, a process's children, reading its output, stopping it."""
from __future__ import annotations

import re
import signal
import socket
import subprocess
import time
from pathlib import Path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listened on a moment ago."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def child_pids(pid: int) -> list[int]:
    """The ids of the processes whose parent is `pid`."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def read_until(process: subprocess.Popen[str], pattern: str, timeout_s: float) -> re.Match[str]:
    """The first line of the process's (text) stdout that matches `pattern`; fails with what it printed."""
    deadline, seen = time.monotonic() + timeout_s, []
    assert process.stdout is not None
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            if process.poll() is not None:
                break
            continue
        seen.append(line)
        found = re.search(pattern, line)
        if found:
            return found
    raise AssertionError(f"no line matching {pattern!r} in the process's output:\n{''.join(seen)}")


def stop(process: subprocess.Popen, signum: int = signal.SIGINT, timeout_s: float = 30) -> None:
    """Ask a process to end with `signum`; kill it if it has not within `timeout_s`."""
    process.send_signal(signum)
    try:
        process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
