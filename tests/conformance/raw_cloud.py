"""A bare websocket endpoint standing in for the cloud, for what the real server cannot do on purpose:
send frames that are not JSON, send a protocol ping, drop a connection and watch the host come back."""
from __future__ import annotations

import json
import queue
import threading
from dataclasses import dataclass, field
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.protocol import State
from websockets.sync.server import Server, ServerConnection, serve


@dataclass
class RawHostConnection:
    """One host connection: the hello it sent, and a way to talk to it frame by frame."""

    ws: ServerConnection
    path: str
    authorization: str | None
    hello: dict[str, Any]
    closed: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)

    def welcome(self, host_id: str) -> None:
        self.send({"type": "welcome", "host_id": host_id})

    def send(self, message: dict[str, Any]) -> None:
        self.ws.send(json.dumps(message))

    def send_raw(self, text: str) -> None:
        self.ws.send(text)

    def recv(self, timeout: float = 10.0, skip_pings: bool = True) -> dict[str, Any]:
        """The next message from the host (its own heartbeat pings are skipped)."""
        while True:
            message = json.loads(self.ws.recv(timeout=timeout))
            if not (skip_pings and message.get("type") == "ping"):
                return message

    def close(self) -> None:
        # The handler returning makes the server close the socket (with a proper close handshake).
        self.closed.set()
        self.finished.wait(15)


class RawCloud:
    def __init__(self) -> None:
        self.connections: queue.Queue[RawHostConnection] = queue.Queue()
        self._all: list[RawHostConnection] = []
        self._server: Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.socket.getsockname()[:2]
        return f"http://{host}:{port}"

    def start(self) -> RawCloud:
        self._server = serve(self._handle, "127.0.0.1", 0, max_size=64 * 1024 * 1024, ping_interval=None)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        for connection in self._all:
            connection.close()
        if self._server is not None:
            self._server.shutdown()

    def accept(self, timeout: float = 30.0) -> RawHostConnection:
        """The next host that connected and said hello."""
        return self.connections.get(timeout=timeout)

    def _handle(self, ws: ServerConnection) -> None:
        try:
            hello = json.loads(ws.recv(timeout=30))
        except (ConnectionClosed, TimeoutError, ValueError):
            return
        connection = RawHostConnection(ws, ws.request.path, ws.request.headers.get("Authorization"), hello)
        self._all.append(connection)
        self.connections.put(connection)
        # Returning closes the socket: keep it open until the test closes it or the host leaves.
        try:
            while not connection.closed.wait(0.05) and ws.state is not State.CLOSED:
                pass
        finally:
            connection.finished.set()
