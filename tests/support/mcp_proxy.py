"""Loopback proxies that let a URL-only MCP client (the official conformance suite's `server` command takes
nothing but `--url`) reach NexusAI's two authenticated transports, without any no-auth mode in the product:

- `BearerProxy`: forwards every HTTP request, byte for byte and streaming (SSE), to the deployment's `/mcp`
  endpoint, adding `Authorization: Bearer <token>`. Host and Origin pass through unchanged, so the
  endpoint's own DNS-rebinding check still judges them.
- `StdioBridge`: a minimal streamable HTTP front for `nexus mcp --ifc`: each `initialize` starts one stdio
  server process (one session, `Mcp-Session-Id`), a POSTed request gets an SSE stream of what the process
  writes until its response, notifications and responses get 202, and a GET stream carries what the
  process says while no request is open. It only relays: the scenarios that test HTTP transport features
  (SSE polling, multiple streams, DNS rebinding) are run against the real endpoint, not through it.

Both serve on 127.0.0.1 from a uvicorn thread of the test process, and stop with `close()`.
"""
from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx2 as httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "content-length",
               "proxy-authorization", "proxy-authenticate", "authorization"}
_METHODS = ["GET", "POST", "DELETE"]


class _Served:
    """A Starlette app on a uvicorn thread, on a free loopback port."""

    def __init__(self, app: Starlette) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port: int = sock.getsockname()[1]
        self._server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True,
                                        name=f"mcp-proxy-{self.port}")
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started and self._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        if not self._server.started:
            raise RuntimeError("the loopback proxy did not start")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def close(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=15)


class BearerProxy(_Served):
    """`url` (this proxy's) → `upstream` (the deployment's `/mcp`), with the token added."""

    def __init__(self, upstream: str, token: str) -> None:
        self.upstream = upstream
        self.token = token
        super().__init__(Starlette(routes=[Route("/{path:path}", self._forward, methods=_METHODS)]))

    async def _forward(self, request: Request) -> Response:
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        headers["authorization"] = f"Bearer {self.token}"
        client = httpx.AsyncClient(timeout=httpx.Timeout(300.0, connect=10.0))
        upstream = client.build_request(request.method, self.upstream, headers=headers, content=await request.body())
        answer = await client.send(upstream, stream=True)

        async def body() -> AsyncIterator[bytes]:
            try:
                async for chunk in answer.aiter_raw():
                    yield chunk
            finally:
                await answer.aclose()
                await client.aclose()

        kept = {k: v for k, v in answer.headers.items() if k.lower() not in _HOP_BY_HOP | {"content-encoding", "date", "server"}}
        return StreamingResponse(body(), status_code=answer.status_code, headers=kept)


class _StdioSession:
    """One stdio server process; a reader thread hands its messages to the bridge's event loop."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.loop: asyncio.AbstractEventLoop | None = None
        # Where the process's next message goes: the open request streams (newest last), else the GET stream.
        self.request_streams: list[asyncio.Queue[dict[str, Any] | None]] = []
        self.standalone: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._early: list[dict[str, Any] | None] = []  # said before the bridge took the process (a spare)
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True, name=f"stdio-bridge-{process.pid}").start()

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        with self._lock:
            self.loop = loop
            early, self._early = self._early, []
        for message in early:
            self._deliver(message)

    async def send(self, message: Any) -> None:
        assert self.process.stdin is not None
        data = json.dumps(message).encode() + b"\n"
        await asyncio.to_thread(self._write, data)

    def _write(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.strip():
                self._hand_over(json.loads(line))
        self._hand_over(None)

    def _hand_over(self, message: dict[str, Any] | None) -> None:
        with self._lock:
            if self.loop is None:
                self._early.append(message)
                return
        try:
            self.loop.call_soon_threadsafe(self._deliver, message)
        except RuntimeError:  # the bridge's loop has closed
            pass

    def _deliver(self, message: dict[str, Any] | None) -> None:
        if message is None:
            for queue in (*self.request_streams, self.standalone):
                queue.put_nowait(None)
        else:
            (self.request_streams[-1] if self.request_streams else self.standalone).put_nowait(message)

    def stop(self) -> None:
        """Standard input closed, as a client ends a stdio server (it stops its IFC host); killed if it lingers."""
        if self.process.stdin is not None:
            try:
                self.process.stdin.close()
            except OSError:
                pass
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=30)
        if self.process.stdout is not None:
            self.process.stdout.close()


class StdioBridge(_Served):
    """Streamable HTTP at `url` in front of one `command` stdio process per session. While `spares` is true, one
    spare process is kept started, so a session's `initialize` does not wait for a Python process to import its
    modules; set it false before the last session, so that no process is started for nothing."""

    def __init__(self, command: Sequence[str], env: dict[str, str] | None = None, cwd: str | None = None) -> None:
        self.command = list(command)
        self.env = env
        self.cwd = cwd
        self.sessions: dict[str, _StdioSession] = {}
        self.spares = True
        self.ended = 0  # sessions stopped by end_sessions
        self._spare: _StdioSession | None = self._spawn()
        super().__init__(Starlette(routes=[Route("/{path:path}", self._handle, methods=_METHODS)]))

    def _spawn(self) -> _StdioSession:
        return _StdioSession(subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                              env=self.env, cwd=self.cwd))

    def end_sessions(self) -> None:
        """Stop every open session's process, all at once (a client that exits without DELETE leaves its
        session open; each idle process holds a core and an IFC host)."""
        sessions = list(self.sessions.values())
        self.sessions.clear()
        _stop_all(sessions)
        self.ended += len(sessions)

    def close(self) -> None:
        super().close()
        self.end_sessions()
        _stop_all([self._spare] if self._spare else [])
        self._spare = None

    async def _start(self) -> tuple[str, _StdioSession]:
        session, self._spare = self._spare or self._spawn(), None
        session.attach(asyncio.get_running_loop())
        if self.spares:
            self._spare = await asyncio.to_thread(self._spawn)
        session_id = uuid.uuid4().hex
        self.sessions[session_id] = session
        return session_id, session

    async def _handle(self, request: Request) -> Response:
        session_id = request.headers.get("mcp-session-id")
        if request.method == "DELETE":
            session = self.sessions.pop(session_id or "", None)
            if session is None:
                return Response(status_code=404)
            await asyncio.to_thread(session.stop)
            return Response(status_code=200)
        if request.method == "GET":
            session = self.sessions.get(session_id or "")
            if session is None:
                return Response(status_code=404 if session_id else 400)
            return StreamingResponse(self._sse(session.standalone, None), media_type="text/event-stream",
                                     headers={"mcp-session-id": session_id or ""})
        try:
            message = json.loads(await request.body())
        except ValueError as exc:
            return Response(json.dumps({"jsonrpc": "2.0", "id": None,
                                        "error": {"code": -32700, "message": f"parse error: {exc}"}}),
                            status_code=400, media_type="application/json")
        if isinstance(message, dict) and message.get("method") == "initialize":
            session_id, session = await self._start()
        else:
            session = self.sessions.get(session_id or "")
            if session is None:
                return Response(status_code=404 if session_id else 400)
        assert session_id is not None
        if not (isinstance(message, dict) and "method" in message and "id" in message):
            await session.send(message)  # a notification or a response to the process's own request
            return Response(status_code=202)
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        session.request_streams.append(queue)
        await session.send(message)
        return StreamingResponse(self._sse(queue, message["id"], session), media_type="text/event-stream",
                                 headers={"mcp-session-id": session_id})

    @staticmethod
    async def _sse(queue: asyncio.Queue[dict[str, Any] | None], request_id: Any,
                   session: _StdioSession | None = None) -> AsyncIterator[bytes]:
        try:
            while (message := await queue.get()) is not None:
                yield b"event: message\ndata: " + json.dumps(message).encode() + b"\n\n"
                if request_id is not None and message.get("id") == request_id and "method" not in message:
                    return  # the request's own response ends its stream
        finally:
            if session is not None and queue in session.request_streams:
                session.request_streams.remove(queue)


def _stop_all(sessions: list[_StdioSession]) -> None:
    """Stop the sessions' processes in parallel: each may take a second or two to stop its IFC host."""
    threads = [threading.Thread(target=session.stop, daemon=True) for session in sessions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
