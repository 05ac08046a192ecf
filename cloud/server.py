"""Serving the app with Werkzeug's threaded server: one thread per stream, fine for an embedded default.

For production, run under gunicorn with the gevent worker (see README): waitress cannot serve websockets.
"""
from __future__ import annotations

import logging
import os
import socket
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from werkzeug.serving import LISTEN_QUEUE, BaseWSGIServer, WSGIRequestHandler, make_server

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIApplication

SHUTDOWN_POLL_S = 0.05


@dataclass
class ServerHandle:
    server: BaseWSGIServer
    thread: threading.Thread

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def shutdown(self) -> None:
        self.server.shutdown()
        self.thread.join(timeout=10)


class NoDelayRequestHandler(WSGIRequestHandler):
    """Werkzeug writes an SSE frame in several small sends; with Nagle on, a real network can hold them back."""

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def _make(app: WSGIApplication, bind: str, port: int) -> BaseWSGIServer:
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request on the terminal
    server = make_server(bind, port, app, threaded=True, request_handler=NoDelayRequestHandler)
    server.daemon_threads = True
    return server


def first_free_port(bind: str, port: int, tries: int = 100) -> int:
    """`port` if nothing listens on it, else the next free one above it (0 stays 0: the OS picks)."""
    if port == 0:
        return 0
    for candidate in range(port, min(port + tries, 65536)):
        with socket.socket(socket.AF_INET6 if ":" in bind else socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind((bind, candidate))
            except OSError:
                continue
            return candidate
    raise OSError(f"no free port between {port} and {port + tries - 1} on {bind}")


def listen(app: WSGIApplication, bind: str, port: int) -> BaseWSGIServer:
    """Bind the address without serving yet; OSError when it is taken (Werkzeug would print two lines of its
    own and exit), so a caller says where it serves only once this worked."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request on the terminal
    with socket.socket(socket.AF_INET6 if ":" in bind else socket.AF_INET, socket.SOCK_STREAM) as sock:
        if os.name != "nt":  # as socketserver does; on Windows the flag would let two servers share a port
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((bind, port))
        sock.listen(LISTEN_QUEUE)
        # Werkzeug serves a duplicate of this descriptor; this one closes with the block.
        server = make_server(bind, sock.getsockname()[1], app, threaded=True, request_handler=NoDelayRequestHandler,
                             fd=sock.fileno())
    server.daemon_threads = True
    return server


def serve_forever(app: WSGIApplication, bind: str, port: int) -> None:
    listen(app, bind, port).serve_forever()


def start_server(app: WSGIApplication, bind: str = "127.0.0.1", port: int = 0) -> ServerHandle:
    """Start serving on a daemon thread (port 0 picks a free port) and return at once."""
    server = _make(app, bind, port)
    # serve_forever checks for shutdown once per poll interval (0.5 s by default): keep stopping quick.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL_S},
                              name="nexus-http", daemon=True)
    thread.start()
    return ServerHandle(server, thread)
