"""Connected host runtimes and the path that carries a command to the websocket of a host.

In one process this is a dictionary of live connections; with several server processes, `send` would
publish to the process that owns the host's websocket (see shared/notes/scale.md), behind the same methods.
"""
from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


class HostUnavailable(RuntimeError):
    pass


@dataclass
class HostConnection:
    host_id: str
    user_name: str
    hello: dict[str, Any]
    send_json: Callable[[dict[str, Any]], None]
    connected_at: float = field(default_factory=time.time)
    last_seen: float = field(default_factory=time.time)
    send_lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def host_app(self) -> str:
        return self.hello["host_app"]

    def describe(self) -> dict[str, Any]:
        return {"host_id": self.host_id, "user": self.user_name, "host_app": self.host_app,
                "host_version": self.hello.get("host_version"), "runtime_version": self.hello.get("runtime_version"),
                "python_version": self.hello.get("python_version"), "document": self.hello.get("document", {}),
                "connected_at": self.connected_at, "last_seen": self.last_seen}


class HostDirectory:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._hosts: dict[str, HostConnection] = {}
        self._owners: dict[str, str] = {}  # host_id -> user, remembered across reconnects

    def register(self, user_name: str, hello: dict[str, Any], send_json: Callable[[dict[str, Any]], None]) -> HostConnection:
        with self._lock:
            wanted = hello.get("host_id")
            # A reconnecting runtime keeps its id, but only its own user may reclaim it.
            if wanted and self._owners.get(wanted, user_name) == user_name:
                host_id = wanted
            else:
                host_id = "h_" + uuid.uuid4().hex[:12]
            connection = HostConnection(host_id, user_name, hello, send_json)
            self._hosts[host_id] = connection
            self._owners[host_id] = user_name
            return connection

    def unregister(self, connection: HostConnection) -> None:
        with self._lock:
            if self._hosts.get(connection.host_id) is connection:
                del self._hosts[connection.host_id]

    def get(self, host_id: str | None) -> HostConnection | None:
        with self._lock:
            return self._hosts.get(host_id) if host_id else None

    def for_user(self, user_name: str) -> list[HostConnection]:
        with self._lock:
            return [h for h in self._hosts.values() if h.user_name == user_name]

    def all(self) -> list[HostConnection]:
        with self._lock:
            return list(self._hosts.values())

    def owner(self, host_id: str) -> str | None:
        with self._lock:
            return self._owners.get(host_id)

    def send(self, host_id: str, message: dict[str, Any]) -> HostConnection:
        connection = self.get(host_id)
        if connection is None:
            raise HostUnavailable(f"host {host_id} is not connected")
        try:
            with connection.send_lock:
                connection.send_json(message)
        except Exception as exc:  # a dead socket surfaces here
            raise HostUnavailable(f"host {host_id} could not be reached: {exc}") from exc
        return connection
