"""The real NexusAI Revit runtime inside a fake Revit session, connected to a real server.

`RevitHostLauncher` has the shape of the conformance suite's host launchers (tests/conformance/hosts.py):
launch(workdir, server_url, token, connect=True) -> a host with host_id, dialect, document_bytes(), stop().
By default the runtime talks through its own ClientWebSocket transport (on the fake's real-socket
ClientWebSocket); `transport="websocket-client"` uses the plain CPython transport instead.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.revit.fake_revit import FakeRevit, install, uninstall

REVIT_SCRIPTS = {
    "pick_elements": (
        "import json\n"
        "walls = DB.FilteredElementCollector(doc).OfClass(DB.Wall).ToElementIds()\n"
        "print(json.dumps(sorted(i.Value for i in walls)[:3]))\n"),
    "count_elements": "print(DB.FilteredElementCollector(doc).OfClass(DB.Wall).GetElementCount())\n",
    "add_element": (
        "level = DB.FilteredElementCollector(doc).OfClass(DB.Level).FirstElement()\n"
        "line = DB.Line.CreateBound(DB.XYZ(100, 100, 0), DB.XYZ(120, 100, 0))\n"
        "wall = DB.Wall.Create(doc, line, level.Id, False)\n"
        "print(wall.Id.Value)\n"),
    "fail_after_change": (
        "for wall in DB.FilteredElementCollector(doc).OfClass(DB.Wall):\n"
        "    wall.LookupParameter('Mark').Set('half done')\n"
        "raise RuntimeError('deliberate failure after changing walls')\n"),
    "hang": "while True:\n    pass\n",
}


def rename_script(ids: list[int], name: str) -> str:
    return f"for i in {ids!r}:\n    doc.GetElement(DB.ElementId(i)).LookupParameter('Mark').Set({name!r})\n"


def read_names_script(ids: list[int]) -> str:
    return ("import json\n"
            f"print(json.dumps(dict((i, doc.GetElement(DB.ElementId(i)).LookupParameter('Mark').AsString())"
            f" for i in {ids!r})))\n")


def delete_script(element_id: int) -> str:
    return f"doc.Delete(DB.ElementId({element_id}))\n"


def revit_dialect() -> Any:
    """The conformance suite's ScriptDialect for Revit scripts (marks stand in for names)."""
    from tests.conformance.hosts import ScriptDialect
    return ScriptDialect(
        pick_elements=REVIT_SCRIPTS["pick_elements"], count_elements=REVIT_SCRIPTS["count_elements"],
        rename=rename_script, read_names=read_names_script, add_element=REVIT_SCRIPTS["add_element"],
        delete_element=delete_script, fail_after_change=REVIT_SCRIPTS["fail_after_change"], fail_line=3,
        hang=REVIT_SCRIPTS["hang"], view="Level 1")


@dataclass
class RevitHost:
    session: FakeRevit
    runtime: Any
    dialect: Any = None
    stopped: bool = field(default=False)

    @property
    def host_id(self) -> str:
        return self.runtime.connection.host_id

    def wait_connected(self, timeout: float = 30.0) -> RevitHost:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.runtime.status()["state"] == "connected":
                return self
            time.sleep(0.02)
        raise TimeoutError(f"the Revit runtime did not connect: {self.runtime.status()}")

    def document_bytes(self) -> bytes:
        return self.session.document_bytes()

    def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        from nexus_runtime import registry
        try:
            self.session.run_on_main(self.runtime.shutdown)
            registry.set_runtime(None)
        finally:
            self.session.stop()
            uninstall()


def start_revit_host(server_url: str, token: str, connect: bool = True, transport: str = "clientwebsocket",
                     version: int = 2026, proxy_required: bool = False, **settings: Any) -> RevitHost:
    """A fake Revit session whose main thread ran the runtime's startup, configured for `server_url`.
    proxy_required: a network where only the system proxy with the user's credentials gets out."""
    revit = FakeRevit(version=version)
    revit.proxy_required = proxy_required
    session = install(revit)
    session.start()
    try:
        section = session.user_config.add_section("NexusAI")
        values = {"server_url": server_url, "token": token, "auto_connect": True, "busy_after_s": 20.0}
        values.update(settings)
        for key, value in values.items():
            section.set_option(key, value)

        from nexus_runtime import pane, runtime
        from nexus_runtime.log import RuntimeLog
        if transport == "websocket-client":
            from tests.revit.ws_transport import WebsocketClientTransport
            factory: Any = WebsocketClientTransport
        else:
            from nexus_runtime.transport_clientwebsocket import ClientWebSocketTransport
            factory = ClientWebSocketTransport

        def startup() -> Any:
            pane.register()
            return runtime.start(session.uiapp, transport_factory=factory, log=RuntimeLog())

        started = session.run_on_main(startup)
        session.startup_complete = True
        host = RevitHost(session, started)
    except BaseException:
        session.stop()
        uninstall()
        raise
    if connect:
        try:
            host.wait_connected()
        except BaseException:
            host.stop()
            raise
    return host


@dataclass
class RevitHostLauncher:
    name: str = "revit"
    transport: str = "clientwebsocket"

    def launch(self, workdir: Path, server_url: str, token: str, connect: bool = True, **options: Any) -> RevitHost:
        host = start_revit_host(server_url, token, connect=connect, transport=self.transport, **options)
        host.dialect = revit_dialect()
        return host
