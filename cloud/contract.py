"""The orchestrator's side of the wire contract: shared_contract's validation, plus what only the
orchestrator knows (which host applications have a capability provider here)."""
from __future__ import annotations

from typing import Any

from cloud.hosts.registry import known_host_apps
from shared_contract.validate import (
    HOST_MESSAGE_TYPES,
    ContractError,
    content_hash,
    tool_definitions,
    validate_chunk,
    validate_tool_input,
)
from shared_contract.validate import validate_host_message as validate_wire_message

__all__ = [
    "HOST_MESSAGE_TYPES", "ContractError", "content_hash", "tool_definitions", "validate_chunk",
    "validate_host_message", "validate_tool_input",
]


def validate_host_message(message: Any) -> dict[str, Any]:
    """A valid host-protocol message; a hello must also name a host application this server serves."""
    validate_wire_message(message)
    if message["type"] == "hello" and message["host_app"] not in known_host_apps():
        raise ContractError(f"invalid hello message: host_app: no capability provider for {message['host_app']!r} "
                            f"on this server (known: {', '.join(known_host_apps())})")
    return message
