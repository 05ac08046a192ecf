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

MCP_PATH = "/mcp"


def token_from(token_file: str | None) -> str | None:
    """The token from --token-file, else NEXUS_TOKEN; never from the command line."""
    if token_file:
        return Path(token_file).read_text(encoding="utf-8").strip() or None
    return os.environ.get("NEXUS_TOKEN") or None


def endpoint(server_url: str) -> str:
    url = server_url.rstrip("/")
    return url if url.endswith(MCP_PATH) else url + MCP_PATH


class Relay:
    """The stdio side's handlers, each answered by the deployment through `remote`."""

    def __init__(self, remote: ClientSession) -> None:
        self.remote = remote
        self._callers: list[ServerRequestContext[Any]] = []  # stdio requests in flight (for elicitations)

    def server(self) -> Server[Any]:
        return Server("NexusAI", on_list_tools=self.list_tools, on_call_tool=self.call_tool,
                      on_list_resources=self.list_resources, on_list_resource_templates=self.list_templates,
                      on_read_resource=self.read_resource, on_list_prompts=self.list_prompts,
                      on_get_prompt=self.get_prompt)

    async def list_tools(self, ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        return await self.remote.list_tools()

    async def call_tool(self, ctx: ServerRequestContext[Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        async def progress(value: float, total: float | None, message: str | None) -> None:
            await ctx.session.report_progress(value, total, message)

        self._callers.append(ctx)
        try:
            return await self.remote.call_tool(params.name, params.arguments or {}, progress_callback=progress)
        finally:
            self._callers.remove(ctx)

    async def list_resources(self, ctx: ServerRequestContext[Any], params: Any) -> types.ListResourcesResult:
        return await self.remote.list_resources()

    async def list_templates(self, ctx: ServerRequestContext[Any],
                             params: Any) -> types.ListResourceTemplatesResult:
        return await self.remote.list_resource_templates()

    async def read_resource(self, ctx: ServerRequestContext[Any],
                            params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        return await self.remote.read_resource(params.uri)

    async def list_prompts(self, ctx: ServerRequestContext[Any], params: Any) -> types.ListPromptsResult:
        return await self.remote.list_prompts()

    async def get_prompt(self, ctx: ServerRequestContext[Any],
                         params: types.GetPromptRequestParams) -> types.GetPromptResult:
        return await self.remote.get_prompt(params.name, params.arguments)

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
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with http, streamable_http_client(endpoint(server_url), http_client=http) as streams:
            relay_holder: list[Relay] = []

            async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult | types.ErrorData:
                return await relay_holder[0].elicit(context, params)

            async with ClientSession(streams[0], streams[1], elicitation_callback=elicit) as remote:
                await remote.initialize()
                relay = Relay(remote)
                relay_holder.append(relay)
                server = relay.server()
                async with stdio_server() as (read, write):
                    await server.run(read, write, server.create_initialization_options())

    try:
        anyio.run(main)
    except Exception as exc:  # the deployment refused or went away: say so on stderr, not in the protocol
        print(f"nexus mcp --server: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        return 1
    return 0
