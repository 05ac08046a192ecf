"""Who drives a run: one identity per process, written on its run lease, its session's state and its bus messages.

`<machine>:<pid>:<nonce>`: the nonce tells a restarted process that reused a pid from the one that died. A
forked child (a gunicorn worker, a batch worker) is a process of its own and gets its own identity.
"""
from __future__ import annotations

import os
import socket
import uuid

_identity: tuple[int, str] | None = None


def this_process() -> str:
    global _identity
    if _identity is None or _identity[0] != os.getpid():
        _identity = (os.getpid(), f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}")
    return _identity[1]


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
        return owner != this_process()  # this pid, but an earlier process that had it
    try:
        os.kill(int(pid), 0)  # signal 0: is it there?
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False
