"""An IFC host in a child process of this command (`nexus run`, `demo`, `mcp --ifc`, `eval`, `batch`): start
it, and wait for it to connect, for as long as opening a model of its size can take. The host is the one that
reads the model: a command need not open it first to learn whether it is usable (IfcOpenShell's import and a
second parse of the model, in the orchestrator), since a host that cannot open it says why (HostStartFailed.reason).
"""
from __future__ import annotations

import os
import time
from typing import Any, Protocol

# Opening is most of a host's start: a real 53 MB Revit export parses in about 20 s here, longer on a slow or
# busy laptop. A host that dies is noticed at once; these bound only one that hangs.
HOST_CONNECT_BASE_S = 120.0
HOST_CONNECT_S_PER_MB = 3.0
HOST_SAYS = "nexus: "  # how an IFC host that gives up (a model it cannot open, a token refused) says why


class HostStartFailed(RuntimeError):
    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason  # the host's own one line, when it said why it stopped (e.g. its model is truncated)


class ChildHost(Protocol):
    def alive(self) -> bool: ...

    def log_tail(self, lines: int = 20) -> str: ...

    def stop(self) -> None: ...


def host_connect_timeout(model_path: str) -> float:
    """How long a host may take to open `model_path` and connect."""
    try:
        megabytes = os.path.getsize(model_path) / 1e6
    except OSError:  # the host says what is wrong with the path, and exits
        megabytes = 0.0
    return HOST_CONNECT_BASE_S + HOST_CONNECT_S_PER_MB * megabytes


def start_ifc_host(model_path: str, server_url: str, token: str, out_path: str | None,
                   isolation: str | None = None) -> ChildHost:
    """The IFC host as a child process: scrubbed environment, token kept off its command line; `isolation`
    ("fork" | "spawn", None: the platform's default) is how it gives each script its own process."""
    from ifc_host.launcher import start_host_process

    return start_host_process(model_path, server_url, token, out_path, isolation=isolation)


def wait_for_host(hosts: Any, user: str, host: ChildHost, timeout_s: float) -> str:
    """The id of `user`'s newest host in the directory `hosts`, once `host` has connected."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        connected = hosts.for_user(user)
        if connected:
            return connected[-1].host_id
        if not host.alive():
            tail = host.log_tail()
            said = [line[len(HOST_SAYS):] for line in tail.splitlines() if line.startswith(HOST_SAYS)]
            raise HostStartFailed(f"the IFC host stopped before it connected:\n{tail}", said[-1] if said else None)
        time.sleep(0.05)
    raise HostStartFailed(f"the IFC host did not connect within {timeout_s:g} s:\n{host.log_tail()}")
