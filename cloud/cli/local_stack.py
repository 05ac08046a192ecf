"""Orchestrator + IFC host for one machine (`nexus demo`), over a real loopback websocket. The host is a child
process of its own (ifc_host.launcher: scrubbed environment, a host-scoped token kept off its command line),
so no script shares the orchestrator's process, keys or database. `nexus run` uses cloud.embedded instead
(the same host process, runs driven in-process)."""
from __future__ import annotations

import time
from typing import Any

import requests

from cloud.config import Settings
from cloud.store import Store

HOST_CONNECT_TIMEOUT_S = 60.0


class HostDidNotConnect(RuntimeError):
    pass


class LocalStack:
    def __init__(self, store: Store, model_path: str, out_path: str | None, port: int = 0, bind: str = "127.0.0.1",
                 default_model: str | None = None, user: str = "cli", admin: bool = False,
                 isolation: str | None = None):
        from cloud.server import start_server
        from cloud.web.app import create_app
        from ifc_host.launcher import start_host_process

        self.store = store
        self.token = store.create_token(user, admin=admin)
        app = create_app(store, Settings(), default_model=default_model)
        self.hosts = app.extensions["nexus"].hosts
        self.server = start_server(app, bind, port)
        try:
            self.host = start_host_process(model_path, self.server.url, store.create_token(user, scope="host"),
                                           out_path, isolation=isolation)
        except Exception:
            self.server.shutdown()
            raise
        try:
            self.host_id = self._wait_for_host(user, HOST_CONNECT_TIMEOUT_S)
        except Exception:
            self.close()
            raise

    def _wait_for_host(self, user: str, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            connected = self.hosts.for_user(user)
            if connected:
                return connected[-1].host_id
            if not self.host.alive():
                raise HostDidNotConnect(f"the IFC host stopped before it connected:\n{self.host.log_tail()}")
            time.sleep(0.05)
        raise HostDidNotConnect(f"the IFC host did not connect within {timeout_s:g} s:\n{self.host.log_tail()}")

    @property
    def url(self) -> str:
        return self.server.url

    def api(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        return requests.request(method, self.url + path, headers={"Authorization": f"Bearer {self.token}"}, **kwargs)

    def close(self) -> None:
        self.host.stop()
        self.server.shutdown()
