"""Orchestrator + IFC host for one machine (`nexus demo`), over a real loopback websocket. The host is a child
process of its own (ifc_host.launcher: scrubbed environment, a host-scoped token kept off its command line),
so no script shares the orchestrator's process, keys or database. `nexus run` uses cloud.embedded instead
(the same host process, runs driven in-process).

The stack's tokens (the person's and the host's) live only as long as the stack: `close` revokes them, so a
stopped demo leaves no working token behind (and each start does not add one more that stays valid)."""
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
        self.token = store.auth.create_token(user, admin=admin)
        host_token = store.auth.create_token(user, scope="host")
        self.token_ids = [i for i in (store.auth.token_id(self.token), store.auth.token_id(host_token)) if i is not None]
        self.host = None
        try:
            app = create_app(store, Settings(), default_model=default_model)
            self.hosts = app.extensions["nexus"].hosts
            self.server = start_server(app, bind, port)
        except BaseException:  # Ctrl-C or SIGTERM while starting too: no token outlives the stack
            self._revoke()
            raise
        try:
            self.host = start_ifc_host(model_path, self.server.url, host_token, out_path, isolation=isolation)
        except BaseException:
            self.server.shutdown()
            self._revoke()
            raise
        try:
            self.host_id = wait_for_host(self.hosts, user, self.host, host_connect_timeout(model_path))
        except BaseException:
            self.close()
            raise

    @property
    def url(self) -> str:
        return self.server.url

    def api(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        import requests

        return requests.request(method, self.url + path, headers={"Authorization": f"Bearer {self.token}"}, **kwargs)

    def _revoke(self) -> None:
        for token_id in self.token_ids:
            self.store.auth.revoke_token(token_id)

    def close(self) -> None:
        try:
            if self.host is not None:
                self.host.stop()
            self.server.shutdown()
        finally:
            self._revoke()
