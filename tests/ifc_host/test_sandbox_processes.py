"""Issue 23 M1/M2 (item 4): every process a script starts ends with it, and its deadline always holds.

Real keepers and script processes under both isolations; the test looks at /proc for what the script left.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from ifc_host.executor import IsolatedExecutor, execute_command

_counter = iter(range(1_000_000))

# A double fork with setsid: the grandchild is in no process group or session of the script's, and runs
# `sleep` (its command line is how /proc shows it). It writes its pid as the machine sees it first.
ESCAPE = """
import os
r, w = os.pipe()
child = os.fork()
if child == 0:
    os.setsid()
    if os.fork() == 0:
        os.write(w, (os.readlink("/proc/self") + "\\n").encode())
        os.execv("/bin/sleep", ["sleep", "{marker}"])
    os._exit(0)
os.waitpid(child, 0)
print("escaped", os.read(r, 32).decode().strip())
"""


def run(executor: IsolatedExecutor, code: str, mode: str = "collect", timeout_s: float = 60) -> dict:
    return executor.execute(execute_command(f"p{next(_counter)}", mode, code, timeout_s))


def processes_running(marker: str) -> list[int]:
    """Pids whose command line is `sleep <marker>` (zombies have none)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if Path(f"/proc/{entry}/cmdline").read_bytes() == b"sleep\0" + marker.encode() + b"\0":
                    found.append(int(entry))
            except OSError:
                continue
    return found


def wait_until_gone(marker: str, seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while (left := processes_running(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


@pytest.mark.parametrize("mode", ["collect", "automate"])
def test_a_double_fork_with_setsid_ends_with_the_script(shared_executor: IsolatedExecutor, mode: str):
    marker = f"6{next(_counter)}{os.getpid()}.5"
    reply = run(shared_executor, ESCAPE.format(marker=marker), mode)
    assert reply["ok"], reply.get("error")
    pid = int(reply["stdout"].split()[1])
    assert pid > 1
    # The reply comes after the script's end: by then its tree is being killed; nothing of it may stay.
    assert wait_until_gone(marker, 10) == [], f"the script's grandchild {pid} outlived it"
    assert run(shared_executor, "print('next')")["stdout"].strip() == "next"


def test_a_grandchild_is_killed_at_the_deadline_too(shared_executor: IsolatedExecutor):
    marker = f"7{next(_counter)}{os.getpid()}.5"
    code = ESCAPE.format(marker=marker) + "import sys\nsys.stdout.flush()\nwhile True:\n    pass\n"
    started = time.monotonic()
    reply = run(shared_executor, code, "automate", timeout_s=4)
    assert reply["error"]["type"] == "Timeout" and time.monotonic() - started < 40
    assert wait_until_gone(marker, 10) == []


def test_joining_the_keepers_process_group_does_not_outlive_the_deadline(shared_executor: IsolatedExecutor):
    """M1: the script moves into its parent's (before: the keeper's) process group, then spins."""
    keeper = shared_executor.keeper_pid
    code = f"""
import os
for group in (os.getppid(), {keeper}):
    try:
        os.setpgid(0, group)
    except OSError:
        pass
while True:
    pass
"""
    started = time.monotonic()
    reply = run(shared_executor, code, "automate", timeout_s=4)
    assert reply["ok"] is False and reply["error"]["type"] == "Timeout", reply.get("error")
    assert time.monotonic() - started < 40, "the deadline was not honoured"
    started = time.monotonic()
    after = run(shared_executor, "print(len(model.by_type('IfcWall')))")
    assert after["ok"] and int(after["stdout"]) > 0
    assert time.monotonic() - started < 30, "the next script was not answered promptly"


def test_the_sandbox_report_names_how_the_tree_ends(shared_executor: IsolatedExecutor):
    assert "own PID namespace" in shared_executor.sandbox["processes"]
