"""The real orchestrator on 127.0.0.1 for tests: real Flask app, real SQLite, real sockets."""
from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cloud.config import Settings
from cloud.server import ServerHandle, start_server
from cloud.web.app import create_app
from cloud.web.state import NexusState
from tests.support.stores import fresh_store


@dataclass
class RunningServer:
    handle: ServerHandle
    state: NexusState
    db_path: Path

    @property
    def url(self) -> str:
        return self.handle.url

    @property
    def ws_url(self) -> str:
        return self.url.replace("http://", "ws://") + "/ws/host"

    def token(self, user: str, admin: bool = False) -> str:
        return self.state.store.create_token(user, admin=admin)

    def wait_for_host(self, user_or_token: str, timeout: float = 10) -> str:
        """The host_id of the (most recently connected) host of a user, once it has said hello and its owner is
        recorded in the store (the socket records it just after listing the host: another instance checks it)."""
        user = self.state.store.user_for_token(user_or_token)
        name = user.name if user else user_or_token
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            hosts = sorted(self.state.hosts.for_user(name), key=lambda h: h.connected_at)
            if hosts and self.state.store.auth.host_owner(hosts[-1].host_id) == name:
                return hosts[-1].host_id
            time.sleep(0.02)
        raise TimeoutError(f"no host of {name} connected within {timeout} s")

    def send_to_host(self, host_id: str, message: dict[str, Any], timeout: float = 30) -> dict[str, Any]:
        """Send a cloud->host command and return the host's reply (matched by request_id)."""
        import threading

        message = {**message}
        message.setdefault("request_id", "t_" + uuid.uuid4().hex[:12])
        session = "direct-" + uuid.uuid4().hex
        self.state.channel.open(session, message["request_id"], message["request_id"], host_id)
        self.state.hosts.send(host_id, message)
        reply = self.state.channel.wait(session, timeout, threading.Event())
        if reply is None:
            raise TimeoutError(f"host {host_id} did not answer {message['type']} within {timeout} s")
        return reply


@contextmanager
def running_server(tmp_path: Path, db_path: Path | None = None, default_model: str | None = None,
                   **settings: Any) -> Iterator[RunningServer]:
    db_path = db_path or Path(tmp_path) / "nexus.db"
    store = fresh_store(db_path)
    app = create_app(store, Settings(**settings), default_model=default_model)
    handle = start_server(app)
    try:
        yield RunningServer(handle, app.extensions["nexus"], db_path)
    finally:
        handle.shutdown()
        app.extensions["nexus"].runs.close()  # its lease renewer, recovery sweep and Redis bus (if any) stop
