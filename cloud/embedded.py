"""The core on one machine, embedded in a command: a store, the host websocket on 127.0.0.1, an IFC host in
a child process of its own, and runs driven in this process through the host seam.

`nexus run` uses it; so does any front door that wants the loop without the chat page (the MCP server, the
evaluator, the batch worker). It serves the host gate alone (cloud/gate), so the host can reach `/ws/host`: no
web framework is loaded and runs never go through HTTP.

`close()` stops everything the core started: the host process, the run registry's lease renewer and
recovery sweep, the gate's server (its listening socket and the host's websocket threads) and the host token.
A command that makes one core after another (the batch worker) ends with the threads it began with.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

from cloud.assembly import run_session
from cloud.child_host import ChildHost, host_connect_timeout, start_ifc_host, wait_for_host
from cloud.chunks import Chunk
from cloud.config import Settings
from cloud.core_state import start_core_state
from cloud.gate.wsgi import HostGate
from cloud.hostlink import WebSocketHostLink, session_link
from cloud.server import start_server
from cloud.store import Store
from cloud.vendors.base import ModelAdapter

log = logging.getLogger(__name__)

THREADS_STOP_TIMEOUT_S = 15.0  # close() waits this long, in all, for the core's threads to end
READERS_STOP_TIMEOUT_S = 2.0  # and this long for websocket reader threads (maybe another core's: see _readers)


class EmbeddedCore:
    """Start with `EmbeddedCore(store, model_path, out_path)`; then `new_session`, `run`, and `close`."""

    def __init__(self, store: Store, model_path: str, out_path: str | None, settings: Settings | None = None,
                 user: str = "cli", connect_timeout_s: float | None = None,
                 isolation: str | None = None) -> None:
        self._threads_before = set(threading.enumerate())
        self._requests: set[threading.Thread] = set()  # this core's HTTP server's request threads
        self._closed = False
        self.store, self.user = store, user
        self.settings = settings or Settings()
        self.state = start_core_state(store, self.settings, warm_api_indexes=False)
        self.server = start_server(HostGate(self.state), "127.0.0.1", 0)
        self._track_requests()
        self.host: ChildHost | None = None
        # A host-only token for this command's host, revoked when the core closes: nothing outlives it.
        token = store.auth.create_token(user, scope="host")
        found = store.auth.user_for_token(token)
        self._token_id = found.token_id if found else None
        try:
            self.host = start_ifc_host(model_path, self.server.url, token, out_path, isolation)
            timeout_s = connect_timeout_s if connect_timeout_s is not None else host_connect_timeout(model_path)
            self.host_id = wait_for_host(self.state.hosts, self.user, self.host, timeout_s)
        except BaseException:
            self.close()
            raise

    def _track_requests(self) -> None:
        """Know this server's request threads (the host's websocket): close() waits for them."""
        server = self.server.server
        serve_one = server.process_request_thread

        def tracked(request: Any, client_address: Any) -> None:
            me = threading.current_thread()
            self._requests.add(me)
            try:
                serve_one(request, client_address)
            finally:
                self._requests.discard(me)

        server.process_request_thread = tracked  # type: ignore[method-assign]

    def _readers(self) -> list[threading.Thread]:
        """Websocket reader threads (simple_websocket) started since this core began: they end with their
        sockets. They cannot be told apart from another core's started meanwhile, hence a short wait."""
        return [t for t in threading.enumerate() if t not in self._threads_before and "simple_websocket" in t.name]

    def new_session(self, model_spec: str, policy: str | None = None) -> dict[str, Any]:
        session_id = self.store.sessions.create_session(self.user, self.host_id, model_spec, {})
        if policy is not None:
            self.store.sessions.update_session(session_id, policy=policy)
        row = self.store.sessions.get_session(session_id)
        assert row is not None
        return row

    def link(self, row: dict[str, Any]) -> WebSocketHostLink | None:
        return session_link(self.state.hosts, self.state.channel, row)

    def run(self, row: dict[str, Any], model: ModelAdapter, text: str,
            cancel: threading.Event | None = None) -> Iterator[Chunk]:
        """One run of the session for the person's message, as stream chunks (driven on this thread)."""
        current = self.store.sessions.get_session(row["id"]) or row
        return run_session(self.store, self.settings, model, self.link(current), current, text,
                           cancel or threading.Event())

    def close(self) -> None:
        """Stop the host, the run registry's background threads and the HTTP server, revoke the host's token,
        and wait (THREADS_STOP_TIMEOUT_S in all) for the threads the core started to end."""
        if self._closed:
            return
        self._closed = True
        try:
            if self.host is not None:
                self.host.stop()  # its websocket closes: the server's threads for it end
        finally:
            self.state.runs.close()  # the lease renewer and the recovery sweep wait on this
            self.server.shutdown()
            self.server.server.server_close()  # the listening socket
            if self._token_id:
                self.store.auth.revoke_token(self._token_id)
        threads = [self.server.thread, *self.state.runs.background, *list(self._requests)]
        for group, wait_s in ((threads, THREADS_STOP_TIMEOUT_S), (self._readers(), READERS_STOP_TIMEOUT_S)):
            deadline = time.monotonic() + wait_s
            for thread in group:
                if thread is not threading.current_thread():
                    _join_by(thread, deadline)
        left = sorted(t.name for t in threads if t.is_alive())
        if left:
            log.warning("threads still running %g s after the embedded core closed: %s", THREADS_STOP_TIMEOUT_S,
                        ", ".join(left))


def _join_by(thread: threading.Thread, deadline: float) -> None:
    """Join `thread` until `deadline`; threading.enumerate() also lists threads whose start() has not yet
    reached their first instruction, and join() refuses those until they have."""
    while True:
        try:
            thread.join(max(0.0, deadline - time.monotonic()))
            return
        except RuntimeError:  # "cannot join thread before it is started"
            if time.monotonic() >= deadline:
                return
            time.sleep(0.005)
