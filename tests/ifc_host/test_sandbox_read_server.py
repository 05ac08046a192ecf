"""Reads run in a fresh child of the keeper's read server (read_server.py): every sandbox property holds for
that child, a read can reach neither its server nor anything an earlier read left, and a read that runs out
of time or crashes ends alone. Real keeper process, real server, real children, checked from inside scripts
and from /proc outside them."""
from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ifc_host.executor import IsolatedExecutor, execute_command
from ifc_host.keeper_process import fork_is_safe
from ifc_host.read_server import LANDLOCK_ABI_NEEDED
from ifc_host.sample import write_sample_model
from ifc_host.sandbox import landlock_abi
from tests.ifc_host.test_sandbox_processes import ESCAPE, wait_until_gone

pytestmark = pytest.mark.skipif(not fork_is_safe() or landlock_abi() < LANDLOCK_ABI_NEEDED,
                                reason="the read server needs fork and Landlock ABI 6+")

SERVED = "import os\nassert os.getppid() == 2 and os.path.basename(os.getcwd()).startswith('read-'), 'not served'\n"

LEAVE = SERVED + """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
open("left.txt", "w").write("for the next read")
os.makedirs("deep/er", exist_ok=True)
os.chmod("deep", 0)
os.environ["LEFT_BY_A_READ"] = "1"
import ifcopenshell
ifcopenshell.left_by_a_read = True
shm = libc.shmget(KEY, 4096, 0o1600)
print(json.dumps({"cwd": os.getcwd(), "shm": shm}))
"""

FIND = SERVED + """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
import ifcopenshell
print(json.dumps({"cwd": os.getcwd(), "files": os.listdir("."), "env": "LEFT_BY_A_READ" in os.environ,
                  "patched": hasattr(ifcopenshell, "left_by_a_read"), "shm": libc.shmget(KEY, 0, 0),
                  "earlier": os.path.exists(EARLIER)}))
"""

REACH_THE_SERVER = SERVED + """
import ctypes, errno, os, signal
libc = ctypes.CDLL(None, use_errno=True)
server = os.getppid()
report = {}
for name, pid in (("server", server), ("reaper", 1)):
    try:
        os.kill(pid, 0)
        report[name + "_signal"] = "sent"
    except OSError as exc:
        report[name + "_signal"] = type(exc).__name__
    report[name + "_ptrace"] = "attached" if libc.ptrace(16, pid, 0, 0) == 0 else errno.errorcode[ctypes.get_errno()]
for path in ("/proc/self/status", f"/proc/{server}/environ", "../server-was-here"):
    try:
        with open(path, "a" if path.startswith("..") else "r"):
            report[path] = "opened"
    except OSError as exc:
        report[path] = type(exc).__name__
print(json.dumps(report))
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IsolatedExecutor]:
    model = tmp_path_factory.mktemp("read-server") / "model.ifc"
    write_sample_model(str(model))
    runner = IsolatedExecutor(model, isolation="fork")
    runner.wait_warm()
    if not read(runner, "import os\nprint(os.getppid())")["stdout"].strip() == "2":
        runner.close()
        pytest.skip("no read server here: its sandbox needs user, PID and mount namespaces, Landlock and seccomp")
    yield runner
    runner.close()


def read(executor: IsolatedExecutor, code: str, timeout_s: float = 60) -> dict:
    return executor.execute(execute_command(uuid.uuid4().hex, "collect", "import json\n" + code, timeout_s))


def report_of(executor: IsolatedExecutor, code: str) -> dict:
    reply = read(executor, code)
    assert reply["ok"], reply.get("error")
    return json.loads(reply["stdout"])


def test_a_read_leaves_nothing_for_the_next_one(served: IsolatedExecutor):
    key = 0x4E58 + os.getpid() % 1000
    left = report_of(served, f"KEY = {key}\n" + LEAVE)
    assert left["shm"] >= 0, "the first read could make a System V segment in its own IPC namespace"
    found = report_of(served, f"KEY = {key}\nEARLIER = {left['cwd']!r}\n" + FIND)
    assert found["cwd"] != left["cwd"]
    assert found == {"cwd": found["cwd"], "files": [], "env": False, "patched": False, "shm": -1,
                     "earlier": False}, found


def test_a_read_can_neither_signal_nor_trace_nor_read_its_server(served: IsolatedExecutor):
    report = report_of(served, REACH_THE_SERVER)
    assert report["server_signal"] == "PermissionError" and report["reaper_signal"] == "PermissionError", report
    assert report["server_ptrace"] == "EPERM" and report["reaper_ptrace"] == "EPERM", report
    assert all(report[path] == "PermissionError" for path in
               ("/proc/self/status", "../server-was-here")), report
    assert report[next(p for p in report if p.endswith("/environ"))] == "PermissionError", report
    assert read(served, SERVED + "print('still served')")["stdout"].strip() == "still served"


def test_what_a_read_starts_ends_with_it_and_the_server_lives_on(served: IsolatedExecutor):
    marker = f"8{os.getpid()}{uuid.uuid4().int % 10**6}.5"
    reply = read(served, SERVED + ESCAPE.format(marker=marker))
    assert reply["ok"], reply.get("error")
    assert wait_until_gone(marker, 10) == [], "the read's grandchild outlived it"
    assert read(served, SERVED + "print('next')")["stdout"].strip() == "next"


def test_a_read_past_its_deadline_or_crashing_ends_alone(served: IsolatedExecutor):
    late = read(served, SERVED + "while True:\n    pass\n", timeout_s=2)
    assert late["error"]["type"] == "Timeout", late.get("error")
    served.wait_warm()  # a new server replaced the one stopped with the late read
    crashed = read(served, SERVED + "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    assert not crashed["ok"] and "SIGSEGV" in crashed["error"]["message"], crashed.get("error")
    assert read(served, SERVED + "print(len(model.by_type('IfcDoor')))")["stdout"].strip().isdigit()


def test_a_reads_only_channel_is_its_own_pipe(served: IsolatedExecutor):
    code = SERVED + """
import os, stat
held = {}
for fd in range(1024):
    try:
        held[fd] = stat.S_IFMT(os.fstat(fd).st_mode)
    except OSError:
        pass
print(json.dumps({"pipes": [fd for fd, kind in held.items() if kind == stat.S_IFIFO and fd > 2],
                  "sockets": [fd for fd, kind in held.items() if kind == stat.S_IFSOCK]}))
"""
    seen = [report_of(served, code) for _ in range(3)]
    for report in seen:
        assert report["sockets"] == [], "a read holds no socket: not its server's, nor any other"
        assert len(report["pipes"]) == 1, report


def test_the_model_a_read_sees_is_its_own_copy(served: IsolatedExecutor, tmp_path: Path):
    changed = read(served, SERVED + "for wall in model.by_type('IfcWall'):\n    model.remove(wall)\n"
                                    "print(len(model.by_type('IfcWall')))")
    assert changed["ok"] and changed["stdout"].strip() == "0"
    assert int(read(served, SERVED + "print(len(model.by_type('IfcWall')))")["stdout"]) > 0
