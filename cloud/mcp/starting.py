"""The backend of `nexus mcp --ifc`, coming up on a thread of its own.

The embedded core starts an IFC host on the model, which takes a while on a big one (the host opens it
before it connects). MCP clients give a server little time to answer `initialize` and list its tools, so
the server answers those at once; a call that needs the host waits here for it, at most `wait_s`, and
then gets the host's start failure (or the time it waited) in plain words.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from cloud.mcp.calls import Backend, Refused
from cloud.mcp.wording import say

STEP_HEADER = b"ISO-10303-21;"
STEP_TRAILER = b"END-ISO-10303-21;"
_ENDS = 4096  # bytes read at each end of the file


def step_file_problem(path: str) -> str | None:
    """What makes `path` no IFC-SPF file, read from its two ends only (the host parses the whole model)."""
    file_path = Path(path)
    if not file_path.is_file():
        return say("no_such_model", path=file_path)
    size = file_path.stat().st_size
    if size == 0:
        return say("empty_model", path=file_path)
    with file_path.open("rb") as data:
        head = data.read(_ENDS).lstrip(b"\xef\xbb\xbf \t\r\n")
        data.seek(max(0, size - _ENDS))
        tail = data.read()
    if not head.startswith(STEP_HEADER):
        return say("not_step", path=file_path)
    if STEP_TRAILER not in tail:
        return say("truncated_model", path=file_path)
    return None


class Starting:
    def __init__(self, start: Callable[[], Backend], wait_s: float) -> None:
        self.wait_s = wait_s
        self._done = threading.Event()
        self._backend: Backend | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._start, args=(start,), name="mcp-host-start", daemon=True)
        self._thread.start()

    def _start(self, start: Callable[[], Backend]) -> None:
        try:
            self._backend = start()
        except BaseException as exc:  # reported to every call that needs the host
            self._error = exc
        finally:
            self._done.set()

    @property
    def ready(self) -> bool:
        return self._done.is_set() and self._backend is not None

    def get(self) -> Backend:
        if not self._done.wait(self.wait_s):
            raise Refused(say("host_start_timeout", seconds=f"{self.wait_s:g}"))
        if self._backend is None:
            raise Refused(say("host_start_failed", detail=self._error))
        return self._backend

    def join(self) -> None:
        """Until the start has finished one way or the other (before closing what it started)."""
        self._thread.join()
