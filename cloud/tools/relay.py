"""A host answer relayed by a browser (POST /tool-results) is checked like one from the host's socket."""
from __future__ import annotations

from typing import Any

from cloud.contract import ContractError, validate_host_message

RELAYABLE = ("execute_result", "export_view_result", "error")


def validate_relayed_result(result: Any) -> dict[str, Any]:
    """A browser-relayed host answer must be a valid execute_result / export_view_result / error message."""
    message_ = validate_host_message(result)
    if message_["type"] not in RELAYABLE:
        raise ContractError(f"invalid result: type: {message_['type']!r} is not a tool result message")
    return message_
