"""Real MCP clients (the official `mcp` SDK's) against `nexus mcp` over stdio and the HTTP endpoint."""
from __future__ import annotations

import base64
import io
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from PIL import Image

ROOT = Path(__file__).resolve().parents[2]


def nexus_mcp_params(*args: str) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return StdioServerParameters(command=sys.executable, args=["-m", "cloud.cli", "mcp", *args], env=env,
                                 cwd=str(ROOT))


@asynccontextmanager
async def stdio_session(*args: str, errlog: TextIO | None = None, **session_args: Any) -> AsyncIterator[ClientSession]:
    """`errlog`: a file for the server's standard error (default: the test's)."""
    async with stdio_client(nexus_mcp_params(*args), errlog=errlog or sys.stderr) as (read, write):
        async with ClientSession(read, write, **session_args) as session:
            await session.initialize()
            yield session


def text_of(result: Any) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


def decoded_png(result: Any) -> Image.Image:
    images = [c for c in result.content if c.type == "image"]
    assert images, f"no image content in {result.content}"
    assert images[0].mime_type == "image/png"
    image = Image.open(io.BytesIO(base64.b64decode(images[0].data)))
    image.load()
    return image


@asynccontextmanager
async def http_session(url: str, token: str | None, **session_args: Any) -> AsyncIterator[ClientSession]:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"} if token else None)
    async with http, streamable_http_client(url, http_client=http) as streams:
        async with ClientSession(streams[0], streams[1], **session_args) as session:
            await session.initialize()
            yield session
