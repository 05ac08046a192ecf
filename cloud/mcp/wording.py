"""The MCP front door's wording and definitions, read from data files (data/)."""
from __future__ import annotations

import json
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).resolve().parent / "data"


@cache
def _json(name: str) -> dict[str, Any]:
    return json.loads((DATA_DIR / name).read_text(encoding="utf-8"))


@cache
def package_version() -> str:
    """NexusAI's version, as the package says (serverInfo.version)."""
    try:
        return metadata.version("nexusai")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def say(key: str, **values: object) -> str:
    return _json("messages.json")[key].format(**values)


def own_tool(name: str) -> dict[str, Any]:
    """list_hosts, run_task, get_run: {description, input_schema}."""
    return _json("tools.json")[name]


def annotations(tool: str) -> dict[str, Any]:
    """The tool's MCP annotations (title, readOnlyHint, destructiveHint, idempotentHint, openWorldHint)."""
    return _json("annotations.json")[tool]


def host_argument() -> str:
    return _json("tools.json")["host_argument"]


def key_argument() -> str:
    """The `idempotency_key` argument's description (also appended to the description of each tool that takes it)."""
    return _json("tools.json")["idempotency_argument"]


def prompts() -> dict[str, dict[str, Any]]:
    return _json("prompts.json")


def prompt_text(name: str) -> str:
    return (DATA_DIR / "prompts" / prompts()[name]["file"]).read_text(encoding="utf-8")
