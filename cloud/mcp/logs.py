"""The logging capability: `logging/setLevel` (protocol 2025-11-25; later versions opt in per request) and a
run's progress as `notifications/message` at info, beside the progress notifications, for clients that show
a server's log rather than progress (or send no progress token)."""
from __future__ import annotations

import warnings
from typing import Any, get_args

from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import EmptyResult, LoggingLevel, SetLevelRequestParams

LEVELS: tuple[str, ...] = get_args(LoggingLevel)  # severity ascending (RFC 5424)
DEFAULT_LEVEL = "info"
LOGGER = "nexusai"
STATE_KEY = "nexus_log_level"


def add_logging(server: MCPServer) -> None:
    """Answer `logging/setLevel` (which also declares the logging capability): the level is the connection's."""
    async def set_level(ctx: Any, params: SetLevelRequestParams) -> EmptyResult:
        ctx.session._connection.state[STATE_KEY] = params.level
        return EmptyResult()

    server._lowlevel_server.add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)


async def log(ctx: Context, level: str, text: str) -> None:
    """A log message to the client, if its level (set by `logging/setLevel`, default info) lets it through;
    under 2026-07-28 the SDK delivers it only where the request opted in."""
    wanted = ctx.session._connection.state.get(STATE_KEY, DEFAULT_LEVEL)
    if LEVELS.index(level) < LEVELS.index(wanted):
        return
    with warnings.catch_warnings():  # deprecated from 2026-07-28 on, still the way to log before it
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        await ctx.log(level, text, logger_name=LOGGER)  # type: ignore[arg-type]
