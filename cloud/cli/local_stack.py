"""Orchestrator + IFC host for one machine (`nexus demo`), over a real loopback websocket. The host is a child
process of its own (ifc_host.launcher: scrubbed environment, a host-scoped token kept off its command line),
so no script shares the orchestrator's process, keys or database. `nexus run` uses cloud.embedded instead
(the same host process, runs driven in-process)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cloud.child_host import host_connect_timeout, start_ifc_host, wait_for_host
from cloud.config import Settings

if TYPE_CHECKING:  # imported by the commands that use them, not by every `nexus` command at start
    import requests

    from cloud.store import Store


class LocalStack:
    def __init__(self, store: Store, model_path: str, out_path: str | None, port: int = 0, bind: str = "127.0.0.1",
                 default_model: str | None = None, user: str = "cli", admin: bool = False,
                 isolation: str | None = None):
        from cloud.server import start_server
        from cloud.web.app import create_app

        self.store = store
        self.token = store.create_token(user, admin=admin)
        app = create_app(store, Settings(), default_model=default_model)
        self.hosts = app.extensions["nexus"].hosts
        self.server = start_server(app, bind, port)
        try:
            self.host = start_ifc_host(model_path, self.server.url, store.create_token(user, scope="host"),
                                       out_path, isolation=isolation)
        except Exception:
            self.server.shutdown()
            raise
        try:
            self.host_id = wait_for_host(self.hosts, user, self.host, host_connect_timeout(model_path))
        except Exception:
            self.close()
            raise

    @property
    def url(self) -> str:
        return self.server.url

    def api(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        import requests

        return requests.request(method, self.url + path, headers={"Authorization": f"Bearer {self.token}"}, **kwargs)

    def close(self) -> None:
        self.host.stop()
        self.server.shutdown()
