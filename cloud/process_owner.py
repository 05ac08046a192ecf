"""Who drives a run: one identity per server instance, written on its run leases, its sessions' state and its
bus messages.

`<machine>:<pid>:<nonce>`. A process that serves one instance (a server worker, `nexus run`, `nexus mcp`) has one
identity; a forked child is a process of its own and gets its own. The nonce tells a later process that reused a
pid from the one that died, and tells apart several instances in one process (tests, embedding).
"""
from __future__ import annotations

import os
import socket
import threading
import uuid

_lock = threading.Lock()
_issued: dict[int, list[str]] = {}  # pid → the identities this process gave out: its own first, then further instances
_own_claimed: set[int] = set()  # pids whose own identity an instance took


def _fresh() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _issued_here() -> list[str]:
    mine = _issued.setdefault(os.getpid(), [])
    if not mine:
        mine.append(_fresh())
    return mine


def this_process() -> str:
    """This process's own identity."""
    with _lock:
        return _issued_here()[0]


def instance_identity() -> str:
    """The identity of a new server instance (a run registry, a bus) in this process: this process's own for the
    first, a fresh one for each further instance."""
    with _lock:
        mine = _issued_here()
        if os.getpid() not in _own_claimed:
            _own_claimed.add(os.getpid())
            return mine[0]
        mine.append(_fresh())
        return mine[-1]


def owner_gone(owner: str | None) -> bool:
    """Whether the process `owner` names has stopped. Only a process on this machine can be checked; one on
    another machine (or a name this module did not write) counts as alive: leases decide for those."""
    if not owner:
        return True  # a run recorded before owners were: nothing can still be driving it
    machine, _, rest = owner.partition(":")
    pid = rest.split(":", 1)[0]
    if machine != socket.gethostname() or not pid.isdigit() or os.name != "posix":
        return False
    if int(pid) == os.getpid():
        with _lock:  # this pid: alive if this process gave the name out, else an earlier process that had the pid
            return owner not in _issued.get(os.getpid(), [])
    try:
        os.kill(int(pid), 0)  # signal 0: is it there?
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False
