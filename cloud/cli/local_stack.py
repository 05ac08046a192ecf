"""Orchestrator + IFC host thread for one machine (`nexus demo`), over a real loopback websocket. `nexus run`
uses cloud.embedded instead (the host in its own process, runs driven in-process)."""
from __future__ import annotations

from typing import Any

import requests

from cloud.config import Settings
from cloud.store import Store


class LocalStack:
    def __init__(self, store: Store, model_path: str, out_path: str | None, port: int = 0, bind: str = "127.0.0.1",
                 default_model: str | None = None, user: str = "cli", admin: bool = False):
        from cloud.server import start_server
        from cloud.web.app import create_app
        from ifc_host.runtime import start_host_thread

        self.store = store
        self.token = store.create_token(user, admin=admin)
        self.server = start_server(create_app(store, Settings(), default_model=default_model), bind, port)
        try:
            self.host = start_host_thread(model_path, self.server.url, self.token, out_path=out_path)
        except Exception:
            self.server.shutdown()
            raise
        try:
            self.host.wait_connected(60)
        except Exception:
            self.close()
            raise

    @property
    def url(self) -> str:
        return self.server.url

    def api(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        return requests.request(method, self.url + path, headers={"Authorization": f"Bearer {self.token}"}, **kwargs)

    def close(self) -> None:
        self.host.stop()
        self.server.shutdown()
