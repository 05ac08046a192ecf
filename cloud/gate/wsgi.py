"""`/ws/host` as a WSGI application of its own: the checks before the upgrade, then the host's socket.

A host authenticates with a bearer token in the upgrade request (user or host scope; never the browser's cookie),
and an upgrade from a page of another origin is refused, so a page cannot reach this socket with the person's
cookie or token. Every other path answers 404, or goes to the application the gate is mounted in front of.
Refusals are JSON with the same security headers as the chat app's responses.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from simple_websocket import ConnectionClosed, Server

from cloud.gate.host_socket import MAX_MESSAGE_BYTES, serve_host

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

    from cloud.core_state import CoreState

log = logging.getLogger(__name__)

HOST_WS_PATH = "/ws/host"
PING_INTERVAL_S = 25
HOSTS_RETRY_AFTER_S = 30
SECURITY_HEADERS = [
    ("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'"),
    ("X-Content-Type-Options", "nosniff"),
]


class HostGate:
    """WSGI: serves `/ws/host` for `state`; hands every other request to `fallback` (404 without one)."""

    def __init__(self, state: CoreState, fallback: WSGIApplication | None = None) -> None:
        self.state = state
        self.auth = state.store.auth  # of the store, the gate needs only the token check (and host owners)
        self.fallback = fallback

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != HOST_WS_PATH:
            if self.fallback is not None:
                return self.fallback(environ, start_response)
            return _refuse(start_response, 404, f"no route {environ.get('REQUEST_METHOD')} {environ.get('PATH_INFO')}")
        if not _same_origin(environ):
            return _refuse(start_response, 403, "cross-origin websocket connections are refused")
        token = _bearer_token(environ)
        user = self.auth.user_for_token(token) if token else None
        if user is None:
            return _refuse(start_response, 401, "missing or invalid bearer token")
        limit = self.state.settings.quota_hosts
        if limit > 0 and len(self.state.hosts.for_user(user.name)) >= limit:
            return _refuse(start_response, 429, f"quota exceeded: hosts (limit {limit})", quota="hosts", limit=limit,
                           headers=[("Retry-After", str(HOSTS_RETRY_AFTER_S))])
        if environ.get("HTTP_UPGRADE", "").lower() != "websocket":
            return _refuse(start_response, 400, "this is a websocket endpoint: send an upgrade request")
        ws = Server(environ, ping_interval=PING_INTERVAL_S, max_message_size=MAX_MESSAGE_BYTES)
        try:
            serve_host(self.state, ws, user)
        except ConnectionClosed:
            pass
        try:
            ws.close()
        except Exception as exc:  # already closed by the host or by serve_host
            log.debug("closing a host socket: %s", exc)
        return _after_upgrade(ws, start_response)


def _after_upgrade(ws: Server, start_response: StartResponse) -> Iterable[bytes]:
    """What the server expects once the socket was taken over (as flask-sock answers each server)."""
    if ws.mode == "gunicorn":
        raise StopIteration  # gunicorn's worker takes this as "the connection was handled"
    # Werkzeug: without `Connection: close` it keeps the socket for another request, and a host closing its
    # websocket waits (websocket-client: 3 s) for an end of stream that does not come.
    start_response("200 OK", [("Content-Length", "0"), ("Connection", "close")])
    return []


def _bearer_token(environ: WSGIEnvironment) -> str | None:
    scheme, _, token = environ.get("HTTP_AUTHORIZATION", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def _same_origin(environ: WSGIEnvironment) -> bool:
    """False when a browser says the upgrade came from another site. Host runtimes send no Origin (or the one
    they dialled, maybe https behind a TLS proxy): host and port are compared, not the scheme."""
    origin = environ.get("HTTP_ORIGIN")
    fetch_site = environ.get("HTTP_SEC_FETCH_SITE")
    if origin == "null":
        return fetch_site == "same-origin"
    if fetch_site is not None and fetch_site not in ("same-origin", "none"):
        return False
    if origin is not None:
        return urlsplit(origin).netloc == environ.get("HTTP_HOST", "")
    return True


def _refuse(start_response: StartResponse, status: int, message: str,
            headers: list[tuple[str, str]] | None = None, **extra: Any) -> list[bytes]:
    body = json.dumps({"error": message, **extra}).encode()
    reasons = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 429: "Too Many Requests"}
    start_response(f"{status} {reasons[status]}", [("Content-Type", "application/json"),
                                                   ("Content-Length", str(len(body))), *SECURITY_HEADERS,
                                                   *(headers or [])])
    return [body]


