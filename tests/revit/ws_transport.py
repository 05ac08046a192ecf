"""A CPython websocket transport (websocket-client) behind the runtime's transport interface.

It stands in for ClientWebSocket when the runtime's plain logic is exercised without the .NET fake;
the interface is documented in NexusAI.extension/lib/nexus_runtime/transport.py.
"""
from __future__ import annotations

import websocket
from nexus_runtime.transport import TransportClosed, TransportError


class WebsocketClientTransport:
    def __init__(self) -> None:
        self._socket: websocket.WebSocket | None = None

    def connect(self, url: str, headers: dict[str, str], timeout_s: float) -> None:
        try:
            self._socket = websocket.create_connection(
                url, header=[f"{k}: {v}" for k, v in headers.items()], timeout=timeout_s)
            self._socket.settimeout(None)
        except Exception as error:
            raise TransportError(f"could not connect to {url}: {error}") from error

    def send_text(self, text: str) -> None:
        try:
            self._socket.send(text)
        except Exception as error:
            raise TransportError(f"send failed: {error}") from error

    def receive_text(self) -> str:
        socket = self._socket
        if socket is None:
            raise TransportClosed("closed")
        try:
            opcode, data = socket.recv_data()
        except websocket.WebSocketConnectionClosedException as error:
            raise TransportClosed("the server closed the connection") from error
        except Exception as error:
            raise TransportError(f"receive failed: {error}") from error
        if opcode == websocket.ABNF.OPCODE_CLOSE:
            code = int.from_bytes(data[:2], "big") if len(data) >= 2 else None
            raise TransportClosed("the server closed the connection", code)
        return data.decode("utf-8") if isinstance(data, bytes) else data

    def close(self) -> None:
        socket, self._socket = self._socket, None
        if socket is not None:
            socket.abort()
            socket.close(timeout=0.2)
