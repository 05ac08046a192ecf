"""Orchestrator + IFC host for one machine (`nexus run`, `nexus demo`), over a real loopback websocket."""
from __future__ import annotations

import os
from pathlib import Path
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


def allow_scripted(spec: str) -> None:
    """The CLI accepts any scripted path: add its directory to the server's allow-list for this process."""
    if spec.startswith("scripted:"):
        directory = str(Path(spec.split(":", 1)[1]).resolve().parent)
        dirs = [d for d in os.environ.get("NEXUS_SCRIPTED_DIRS", "").split(os.pathsep) if d]
        os.environ["NEXUS_SCRIPTED_DIRS"] = os.pathsep.join([*dirs, directory])
