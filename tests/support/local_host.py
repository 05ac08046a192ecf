"""The test host's document served in-process (no socket), behind an InProcessHostLink.

It answers with the same primitives as `TestHost` (scripts against a copy of the document, commit only on
success, exact change sets, the stamped epilogue, real PNGs), so a test can drive the loop and each tool
directly, with no server.
"""
from __future__ import annotations

import sys
import threading
from typing import Any

from cloud.hostlink import InProcessHostLink
from tests.support.test_host import TestHost


class LocalTestHost:
    """A host runtime object for InProcessHostLink: `hello` and one reply per command."""

    def __init__(self, capabilities: tuple[str, ...] = ("hold", "context"), delay_s: float = 0.0,
                 silent: bool = False) -> None:
        self.core = TestHost("", "", capabilities=capabilities)  # never started: its primitives only
        self.delay_s, self.silent = delay_s, silent
        self.received: list[dict[str, Any]] = []
        self.release = threading.Event()  # a silent host answers once this is set
        self.hello = {"type": "hello", "host_app": "test", "host_version": "test-1", "runtime_version": "1.0",
                      "python_version": sys.version.split()[0], "document": {"title": "Test document"},
                      "capabilities": list(capabilities)}

    @property
    def document(self):
        return self.core.document

    def handle(self, command: dict[str, Any]) -> dict[str, Any]:
        self.received.append(command)
        kind = command["type"]
        if kind == "execute":
            if self.silent:
                self.release.wait()
            if self.delay_s:
                self.release.wait(self.delay_s)
            return self.core.execute(command)
        if kind == "export_view":
            return self.core.export_view(command)
        if kind == "decide":
            return self.core.decide(command)
        if kind == "context":
            return {"type": "context_result", "request_id": command["request_id"], "ok": True,
                    "context": {"document": "Test document", "levels": [{"name": "Level 1", "elevation": 0.0}],
                                "active_view": "Level 1", "selection": [],
                                "counts": {c: len(self.document.by_class(c)) for c in ("Door", "Wall")}}}
        return {"type": "error", "request_id": command["request_id"], "message": f"unknown command {kind}"}


def local_link(user_name: str = "alice", **knobs: Any) -> tuple[InProcessHostLink, LocalTestHost]:
    host = LocalTestHost(**knobs)
    return InProcessHostLink(host, user_name, host_id="h_local"), host
