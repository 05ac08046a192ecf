"""The streamable HTTP MCP endpoint of a deployment, at `/mcp` on a port of its own.

The MCP SDK serves streamable HTTP as an ASGI (Starlette) app, and the orchestrator is a Flask (WSGI)
app whose hosts live in this process (the host directory of live websockets, the rendezvous). So the
endpoint runs in the same process, on uvicorn in a thread, sharing the Flask app's state: a bridge of
ASGI into WSGI would have to carry SSE streams and server-to-client requests (elicitation) through a
synchronous server, and a separate process could not reach the hosts connected here.

Bearer tokens are the deployment's own (the store's users); a host-only token is refused. Each user
sees and reaches only their own hosts and runs, as on the rest of the API, under the same quotas. With
NEXUS_REDIS_URL, the state's host directory and rendezvous are the Redis-backed ones: hosts connected to
any instance of the deployment are listed and driven from this endpoint.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

import anyio
import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from starlette.applications import Starlette

from cloud.mcp.calls import Backend
from cloud.mcp.events import RETRY_MS, MemoryEventStore
from cloud.mcp.quotas import DeploymentQuotas
from cloud.mcp.server import NexusMcp
from cloud.store import Store
from cloud.vendors.base import ModelAdapter

START_TIMEOUT_S = 30.0


class StoreTokenVerifier:
    """Bearer tokens checked against the deployment's store, as every API route checks them."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def verify_token(self, token: str) -> AccessToken | None:
        user = await anyio.to_thread.run_sync(self.store.auth.user_for_token, token)
        if user is None or user.scope != "user":
            return None
        return AccessToken(token=token, client_id=user.name, scopes=[], subject=user.name)


def token_user() -> str:
    token = get_access_token()
    if token is None or not token.subject:
        raise PermissionError("no authenticated user on this request")
    return token.subject


def http_models(spec: str) -> ModelAdapter:
    """A model for run_task as the HTTP API allows it (scripted files only from NEXUS_SCRIPTED_DIRS, ...)."""
    from cloud.vendors.registry import check_allowed_for_http, create_model

    check_allowed_for_http(spec)
    return create_model(spec)


def mcp_http_app(state: Any, public_url: str, bind: str = "127.0.0.1", chat_url: str | None = None) -> Starlette:
    """The endpoint for a Flask app's NexusState (`app.extensions["nexus"]`); `chat_url`: the chat page's
    address, where a held change is decided when the client cannot ask the person."""
    quotas = DeploymentQuotas(state.store, state.settings, state.runs, state.request_rate)
    backend = Backend.of(state, quotas, chat_url)  # the chat API's quotas, and its request-rate window
    # The store's tokens are not issued per resource and there is no OAuth server: the verifier is the whole
    # check, and no protected-resource metadata is published (it would name an authorization server that
    # does not exist, and clients would try OAuth). A 401 says `WWW-Authenticate: Bearer`: send a token.
    auth = AuthSettings(issuer_url=public_url, resource_server_url=None, validate_token_resource=False)
    server = NexusMcp(backend, token_user, http_models, default_model=state.default_model).build(
        token_verifier=StoreTokenVerifier(state.store), auth=auth)
    # On 127.0.0.1 the SDK also checks Host/Origin against DNS rebinding; elsewhere the token guards.
    # Resumable streams: a priming event with `retry`, and replay after Last-Event-ID (cloud/mcp/events.py).
    return server.streamable_http_app(host=bind, event_store=MemoryEventStore(), retry_interval=RETRY_MS)


@dataclass
class McpHttpServer:
    server: uvicorn.Server
    thread: threading.Thread
    bind: str
    port: int

    @property
    def url(self) -> str:
        return f"http://{self.bind}:{self.port}/mcp"

    def shutdown(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def start_mcp_http(state: Any, bind: str = "127.0.0.1", port: int = 0,
                   public_url: str | None = None, chat_url: str | None = None) -> McpHttpServer:
    """Serve the endpoint on a daemon thread of this process (port 0: a free one) and return once it listens."""
    import socket

    sock = socket.socket(socket.AF_INET6 if ":" in bind else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((bind, port))
    port = sock.getsockname()[1]
    app = mcp_http_app(state, public_url or f"http://{bind}:{port}", bind, chat_url)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="nexus-mcp-http", daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT_S
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    if not server.started:
        raise RuntimeError(f"the MCP endpoint did not start on {bind}:{port}")
    return McpHttpServer(server, thread, bind, port)
