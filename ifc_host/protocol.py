"""The host side of the host protocol: parsing what the cloud sends, shaping what the host answers.

Everything is checked against shared_contract/ in both directions, so a malformed command gets an `error`
reply naming the problem, and the host never sends a message the cloud would reject.
"""
from __future__ import annotations

import dataclasses
import json
import platform
from typing import Any

from shared_contract.host_messages import NO_CHANGES, ExecuteResult, Hello
from shared_contract.validate import ContractError, validate_host_message

RUNTIME_VERSION = "1.0.0"
HOST_APP = "ifc"
CAPABILITIES = ["execute", "export_view", "hold", "decide", "ping", "context", "validate", "abort", "export_scene",
                "refs"]
CLOUD_TO_HOST = ("welcome", "execute", "export_view", "decide", "context", "ping", "pong", "error", "abort",
                 "export_scene")
# What of a keeper result goes on the wire as it is: ExecuteResult's own fields (a field added to the contract
# passes through without being listed here); `details` carries the host-only extras below.
RESULT_FIELDS = tuple(f.name for f in dataclasses.fields(ExecuteResult) if f.name not in ("request_id", "details"))
DETAILS = ("geometry_changed", "epilogue_truncated")


class ProtocolProblem(ValueError):
    """An inbound message the host cannot act on; `request_id` is set when the message carried one."""

    def __init__(self, message: str, request_id: str | None = None) -> None:
        super().__init__(message)
        self.request_id = request_id


def parse_inbound(raw: str | bytes) -> dict[str, Any]:
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", errors="replace")
    try:
        message = json.loads(raw)
    except ValueError as exc:
        raise ProtocolProblem(f"malformed message: not valid JSON ({exc})") from exc
    request_id = message.get("request_id") if isinstance(message, dict) else None
    request_id = request_id if isinstance(request_id, str) and request_id else None
    try:
        validate_host_message(message)
    except ContractError as exc:
        raise ProtocolProblem(f"malformed message: {exc}", request_id) from exc
    if message["type"] not in CLOUD_TO_HOST:
        raise ProtocolProblem(
            f"unexpected message type {message['type']!r}: an IFC host accepts {', '.join(CLOUD_TO_HOST)}", request_id)
    return message


def hello(document: dict[str, Any], host_id: str | None, ifcopenshell_version: str) -> dict[str, Any]:
    """`ifcopenshell_version`: the keeper's (executor.ifcopenshell_version); the runtime does not import it."""
    return checked(Hello(HOST_APP, ifcopenshell_version, RUNTIME_VERSION, platform.python_version(), document,
                         host_id or None, tuple(CAPABILITIES)).to_dict())


def error(message: str, request_id: str | None = None) -> dict[str, Any]:
    return checked({"type": "error", "request_id": request_id, "message": message or "error"})


def aborted(request_id: str, message: str) -> dict[str, Any]:
    """The answer to an abort that found nothing running or held under `request_id`."""
    return checked({"type": "aborted", "request_id": request_id, "state": "none", "message": message})


def pong(ping: dict[str, Any]) -> dict[str, Any]:
    return checked({"type": "pong", **({"nonce": ping["nonce"]} if "nonce" in ping else {})})


def execute_result(request_id: str, result: dict[str, Any]) -> dict[str, Any]:
    """Shape a keeper result into an execute_result (ContractError when it does not fit); host-only extras
    travel in `details`."""
    fields = {key: result[key] for key in RESULT_FIELDS if result.get(key) is not None}
    details = {key: result[key] for key in DETAILS if result.get(key) is not None}
    message = {"type": "execute_result", "request_id": request_id, "stdout": "", "failures": [],
               "changes": NO_CHANGES.to_dict(), "committed": False, "duration_ms": 0, **fields,
               **({"details": details} if details else {})}
    return ExecuteResult.from_dict(message).to_dict()


def export_view_result(request_id: str, *, png_base64: str, width: int, height: int, view: str,
                       undrawn: int | None = None, boxed: int | None = None,
                       sketched: int | None = None, building: int | None = None,
                       simplified: int | None = None) -> dict[str, Any]:
    message = {"type": "export_view_result", "request_id": request_id, "ok": True, "png_base64": png_base64,
               "width": width, "height": height, "view": view}
    if undrawn is not None:
        message["undrawn"] = undrawn
    if simplified is not None:
        message["simplified"] = simplified
    if boxed is not None:
        message["boxed"] = boxed
    if sketched is not None:
        message["sketched"] = sketched
    if building is not None:
        message["building"] = building
    return checked(message)


def export_view_failure(request_id: str, reason: str) -> dict[str, Any]:
    return checked({"type": "export_view_result", "request_id": request_id, "ok": False, "error": reason})


def context_result(request_id: str, context: dict[str, Any]) -> dict[str, Any]:
    return checked({"type": "context_result", "request_id": request_id, "ok": True, "context": context})


def context_failure(request_id: str, reason: str) -> dict[str, Any]:
    return checked({"type": "context_result", "request_id": request_id, "ok": False, "error": reason})


def checked(message: dict[str, Any]) -> dict[str, Any]:
    validate_host_message(message)
    return message
