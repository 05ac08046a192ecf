"""The `lookup_api` tool: answered from the connected host's API index, without a host round trip."""
from __future__ import annotations

from typing import Any

from cloud.hosts.api_indexes import NoApiIndex, api_index
from cloud.tools.base import ToolContext, ToolOutput, plain


def lookup_api(ctx: ToolContext, call: dict[str, Any], arguments: dict[str, Any]) -> ToolOutput:
    assert ctx.host is not None
    try:
        answer = api_index(ctx.host.host_app, ctx.host.hello).answer(arguments["query"])
    except NoApiIndex as exc:
        return (yield from plain(call, str(exc)))
    return (yield from plain(call, answer, is_error=False))
