"""`nexus mcp --server URL`: a stdio MCP server that forwards to a deployment's streamable HTTP endpoint.

Everything runs in the deployment (its hosts, policies, audit, usage, users); this process only relays:
tools, resources and prompts as the deployment lists them, progress notifications back to the client,
and the deployment's elicitations (a held automation's Keep/Discard) to the client when it can answer.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared._httpx_utils import create_mcp_http_client

from cloud.mcp.wording import package_version

MCP_PATH = "/mcp"


def token_from(token_file: str | None) -> str | None:
    """The token from --token-file, else NEXUS_TOKEN; never from the command line."""
    if token_file:
        return Path(token_file).read_text(encoding="utf-8").strip() or None
    return os.environ.get("NEXUS_TOKEN") or None


def endpoint(server_url: str) -> str:
    url = server_url.rstrip("/")
    return url if url.endswith(MCP_PATH) else url + MCP_PATH


class Upstream:
    """The connection to the deployment, opened once the stdio client has said who it is: the deployment
    records the real client's name and version (the bridge's own would say `mcp` for every client)."""

    def __init__(self, server_url: str, token: str) -> None:
        self.server_url, self.token = server_url, token
        self._client: types.Implementation | None = None
        self._introduced = anyio.Event()
        self._ready = anyio.Event()
        self._stop = anyio.Event()
        self._session: ClientSession | None = None

    async def session(self, ctx: ServerRequestContext[Any]) -> ClientSession:
        if not self._introduced.is_set():
            params = ctx.session.client_params
            self._client = params.client_info if params is not None else None
            self._introduced.set()
        await self._ready.wait()
        assert self._session is not None
        return self._session

    async def hold(self, elicit: Any) -> None:
        """Connect once introduced, and keep the connection until stop()."""
        await self._introduced.wait()
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {self.token}"})
        async with http, streamable_http_client(endpoint(self.server_url), http_client=http) as streams:
            async with ClientSession(streams[0], streams[1], elicitation_callback=elicit,
                                     client_info=self._client) as remote:
                await remote.initialize()
                self._session = remote
                self._ready.set()
                await self._stop.wait()

    def stop(self) -> None:
        self._stop.set()
        self._introduced.set()  # a client that never called anything: nothing to connect


class Relay:
    """The stdio side's handlers, each answered by the deployment through the upstream connection."""

    def __init__(self, upstream: Upstream) -> None:
        self.upstream = upstream
        self._callers: list[ServerRequestContext[Any]] = []  # stdio requests in flight (for elicitations)

    def server(self) -> Server[Any]:
        return Server("NexusAI", version=package_version(), on_list_tools=self.list_tools, on_call_tool=self.call_tool,
                      on_list_resources=self.list_resources, on_list_resource_templates=self.list_templates,
                      on_read_resource=self.read_resource, on_list_prompts=self.list_prompts,
                      on_get_prompt=self.get_prompt)

    async def list_tools(self, ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        return await (await self.upstream.session(ctx)).list_tools()

    async def call_tool(self, ctx: ServerRequestContext[Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        async def progress(value: float, total: float | None, message: str | None) -> None:
            await ctx.session.report_progress(value, total, message)

        self._callers.append(ctx)
        try:
            remote = await self.upstream.session(ctx)
            return await remote.call_tool(params.name, params.arguments or {}, progress_callback=progress)
        finally:
            self._callers.remove(ctx)

    async def list_resources(self, ctx: ServerRequestContext[Any], params: Any) -> types.ListResourcesResult:
        return await (await self.upstream.session(ctx)).list_resources()

    async def list_templates(self, ctx: ServerRequestContext[Any],
                             params: Any) -> types.ListResourceTemplatesResult:
        return await (await self.upstream.session(ctx)).list_resource_templates()

    async def read_resource(self, ctx: ServerRequestContext[Any],
                            params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        return await (await self.upstream.session(ctx)).read_resource(params.uri)

    async def list_prompts(self, ctx: ServerRequestContext[Any], params: Any) -> types.ListPromptsResult:
        return await (await self.upstream.session(ctx)).list_prompts()

    async def get_prompt(self, ctx: ServerRequestContext[Any],
                         params: types.GetPromptRequestParams) -> types.GetPromptResult:
        return await (await self.upstream.session(ctx)).get_prompt(params.name, params.arguments)

    async def elicit(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult | types.ErrorData:
        """The deployment asks the person (a held automation): relayed to the stdio client when it can
        answer elicitations; otherwise an error, and the deployment leaves the decision to the chat page."""
        caller = self._callers[-1] if self._callers else None
        capabilities = caller.session.client_capabilities if caller is not None else None
        form = params if isinstance(params, types.ElicitRequestFormParams) else None
        if caller is None or capabilities is None or capabilities.elicitation is None or form is None:
            return types.ErrorData(code=types.INVALID_REQUEST, message="this client cannot answer elicitations")
        return await caller.session.elicit_form(form.message, form.requested_schema,
                                                related_request_id=caller.request_id)


def serve_remote(server_url: str, token: str) -> int:
    async def main() -> None:
        upstream = Upstream(server_url, token)
        relay = Relay(upstream)
        server = relay.server()
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(upstream.hold, relay.elicit)
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())
            upstream.stop()

    try:
        anyio.run(main)
    except Exception as exc:  # the deployment refused or went away: say so on stderr, not in the protocol
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]
        print(f"nexus mcp --server: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        return 1
    return 0
