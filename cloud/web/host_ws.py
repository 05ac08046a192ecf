"""The host websocket (`/ws/host`): hello/welcome, then results routed to the waiting runs.

Every inbound message is validated against shared_contract/; a bad one gets an `error` reply naming the
problem and the connection stays up. Authentication happens before the upgrade (see app.py).
"""
from __future__ import annotations

import json
import logging
import time
from typing import Any

from flask import g
from simple_websocket import ConnectionClosed

from cloud.contract import ContractError, validate_host_message
from cloud.grounding.registry import warm as warm_api_index
from cloud.hostlink import HostConnection
from cloud.rendezvous import Delivery
from cloud.web.state import NexusState

log = logging.getLogger(__name__)

HELLO_TIMEOUT_S = 30
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
RESULT_TYPES = ("execute_result", "export_view_result", "context_result", "error")


def _send(ws: Any, message: dict[str, Any]) -> None:
    ws.send(json.dumps(message))


def _parse(raw: Any) -> dict[str, Any]:
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", errors="replace")
    if len(raw) > MAX_MESSAGE_BYTES:
        raise ContractError(f"message larger than {MAX_MESSAGE_BYTES} bytes")
    try:
        message = json.loads(raw)
    except ValueError as exc:
        raise ContractError(f"not valid JSON: {exc}") from exc
    return validate_host_message(message)


def _await_hello(ws: Any) -> dict[str, Any] | None:
    deadline = time.monotonic() + HELLO_TIMEOUT_S
    while time.monotonic() < deadline:
        raw = ws.receive(timeout=max(0.1, deadline - time.monotonic()))
        if raw is None:
            continue
        try:
            message = _parse(raw)
        except ContractError as exc:
            _send(ws, {"type": "error", "message": str(exc)})
            continue
        if message["type"] == "hello":
            return message
        _send(ws, {"type": "error", "request_id": message.get("request_id"),
                   "message": f"expected hello first, got {message['type']}"})
    return None


def serve_host(state: NexusState, ws: Any) -> None:
    user = g.user
    hello = _await_hello(ws)
    if hello is None:
        ws.close(reason=1008, message="no hello")
        return
    connection = state.hosts.register(user.name, hello, lambda m: _send(ws, m))
    warm_api_index(connection.host_app, hello)
    with connection.send_lock:
        _send(ws, {"type": "welcome", "host_id": connection.host_id})
    log.info("host %s connected (%s, user %s)", connection.host_id, connection.host_app, user.name)
    try:
        while True:
            raw = ws.receive()
            if raw is None:
                continue
            connection.last_seen = time.time()
            _handle(state, connection, raw)
    except ConnectionClosed:
        pass
    finally:
        state.hosts.unregister(connection)
        log.info("host %s disconnected", connection.host_id)


def _reply(connection: HostConnection, message: dict[str, Any]) -> None:
    with connection.send_lock:
        connection.send_json(message)


def _handle(state: NexusState, connection: HostConnection, raw: Any) -> None:
    try:
        message = _parse(raw)
    except ContractError as exc:
        request_id = None
        try:
            request_id = json.loads(raw).get("request_id")
        except (ValueError, AttributeError, TypeError):
            pass
        _reply(connection, {"type": "error", "request_id": request_id if isinstance(request_id, str) else None,
                            "message": str(exc)})
        return
    kind = message["type"]
    if kind == "ping":
        _reply(connection, {"type": "pong", **({"nonce": message["nonce"]} if "nonce" in message else {})})
    elif kind == "pong":
        return
    elif kind in RESULT_TYPES and message.get("request_id"):
        delivery = state.channel.deliver_from_host(message["request_id"], connection.host_id, message)
        if delivery is not Delivery.ACCEPTED and kind != "error":
            _reply(connection, {"type": "error", "request_id": message["request_id"],
                                "message": f"request {message['request_id']} is not pending ({delivery.value})"})
    elif kind == "decided":
        decision = {"decision": message["decision"], "by": message.get("by") or "the person in the host"}
        if state.channel.deliver_from_host(message["request_id"], connection.host_id, decision,
                                           kind="approval") is not Delivery.ACCEPTED:
            log.info("host %s decided %s after the cloud stopped waiting", connection.host_id, message["request_id"])
    elif kind == "error":
        log.warning("host %s reported: %s", connection.host_id, message.get("message"))
    else:
        _reply(connection, {"type": "error", "request_id": message.get("request_id"),
                            "message": f"{kind} is not a message a host sends"})
