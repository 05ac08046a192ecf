"""The host websocket (`/ws/host`): hello/welcome, then results routed to the waiting runs.

Every inbound message is validated against shared_contract/; a bad one gets an `error` reply naming the
problem and the connection stays up. Authentication happens before the upgrade (cloud/gate/wsgi.py): a bearer
token (user or host scope), never the browser's cookie, and no cross-origin upgrade.

A host id belongs for good to the first user who connected with it (kept in the store, so a restart
changes nothing): another user asking for it gets a fresh id. When a newer connection of the owner
takes an id over, the older socket is closed; a socket whose token is revoked is closed too.
"""
from __future__ import annotations

import json
import logging
import re
import time
from typing import TYPE_CHECKING, Any

from simple_websocket import ConnectionClosed

from cloud.contract import ContractError, validate_host_message
from cloud.host_sockets import CLOSE_REPLACED, CLOSE_REVOKED, close
from cloud.hostlink import HostConnection
from cloud.hosts.api_indexes import warm as warm_api_index
from cloud.rendezvous import Delivery

if TYPE_CHECKING:
    from cloud.core_state import CoreState
    from cloud.store import Auth, User

log = logging.getLogger(__name__)

MAX_LOGGED_CHARS = 500
HOST_ID = re.compile(r"h_[A-Za-z0-9_-]{1,64}")  # shaped like the ids HostDirectory issues (h_ + 12 hex)

HELLO_TIMEOUT_S = 30
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
RESULT_TYPES = ("execute_result", "export_view_result", "context_result", "error", "aborted", "export_scene_result",
                "show_elements_result")


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


def loggable(text: Any) -> str:
    """A host's text for one log line: control characters escaped (no forged lines), length capped."""
    text = str(text)
    escaped = text[:MAX_LOGGED_CHARS].encode("unicode_escape").decode("ascii")
    return escaped + (f"... ({len(text):,} characters)" if len(text) > MAX_LOGGED_CHARS else "")


def _claim(auth: Auth, user_name: str, hello: dict[str, Any]) -> dict[str, Any]:
    """The hello without its host_id when that id is another user's or not shaped like the ones this
    server issues (the directory then picks a new one)."""
    wanted = hello.get("host_id")
    if wanted and not HOST_ID.fullmatch(wanted):
        log.warning("user %s asked for host id %s, which this server never issues", user_name, loggable(wanted))
        return {k: v for k, v in hello.items() if k != "host_id"}
    if wanted and not auth.claim_host(wanted, user_name):
        log.warning("user %s asked for host id %s, which is another user's", user_name, loggable(wanted))
        return {k: v for k, v in hello.items() if k != "host_id"}
    return hello


def serve_host(state: CoreState, ws: Any, user: User) -> None:
    hello = _await_hello(ws)
    if hello is None:
        ws.close(reason=1008, message="no hello")
        return
    auth = state.store.auth  # of the store, the gate needs only tokens and host owners
    hello = _claim(auth, user.name, hello)
    previous = state.hosts.get(hello.get("host_id"))
    connection = state.hosts.register(user.name, hello, lambda m: _send(ws, m))
    auth.claim_host(connection.host_id, user.name)
    state.sockets.add(ws, connection.host_id, user.token_id)
    try:
        if state.warm_api_indexes:
            warm_api_index(connection.host_app, connection.hello)
        with connection.send_lock:
            _send(ws, {"type": "welcome", "host_id": connection.host_id})
            for command in state.hosts.take_on_connect(connection.host_id):  # e.g. discards a restart left held
                _send(ws, command)
        log.info("host %s connected (%s, user %s)", connection.host_id, connection.host_app, user.name)
        if previous is not None and previous is not connection:
            _retire(state, previous, ws)
        _serve(state, auth, ws, connection, user.token_id)
    except ConnectionClosed:
        pass
    finally:
        state.sockets.remove(ws)
        state.hosts.unregister(connection)
        log.info("host %s disconnected", connection.host_id)


def _retire(state: CoreState, previous: HostConnection, newest: Any) -> None:
    """Tell the connection a newer one took its host id over, and close it."""
    try:
        with previous.send_lock:
            previous.send_json({"type": "error", "message": f"host id {previous.host_id} was taken over by a "
                                                            "newer connection; this one is closed"})
    except Exception as exc:  # the old socket may be half dead already: that is why it was replaced
        log.info("host %s: the replaced connection could not be told: %s", previous.host_id, exc)
    state.sockets.close_replaced(previous.host_id, newest)  # its own loop would notice too, a moment later


def _serve(state: CoreState, auth: Auth, ws: Any, connection: HostConnection, token_id: str | None) -> None:
    recheck_s = state.settings.host_recheck_s
    next_check = time.monotonic() + recheck_s
    while True:
        if state.hosts.get(connection.host_id) is not connection:
            close(ws, CLOSE_REPLACED, "host id taken over by a newer connection")
            return
        if time.monotonic() >= next_check:
            next_check = time.monotonic() + recheck_s
            if token_id is not None and not auth.token_active(token_id):
                close(ws, CLOSE_REVOKED, "token revoked")
                return
        raw = ws.receive(timeout=recheck_s)
        if raw is None:
            continue
        connection.last_seen = time.time()
        _handle(state, connection, raw)


def _reply(connection: HostConnection, message: dict[str, Any]) -> None:
    with connection.send_lock:
        connection.send_json(message)


def _handle(state: CoreState, connection: HostConnection, raw: Any) -> None:
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
    elif kind == "doctor_result":  # kept for the admin console; answers an admin's doctor when one waits
        connection.doctor = message
        if message.get("request_id"):
            state.channel.deliver_from_host(message["request_id"], connection.host_id, message)
    elif kind in RESULT_TYPES and message.get("request_id"):
        delivery = state.channel.deliver_from_host(message["request_id"], connection.host_id, message)
        if delivery is not Delivery.ACCEPTED and kind == "execute_result" and message.get("held"):
            # Nobody waits for this held automation any more (its run was cancelled or ended): let it go now.
            log.info("host %s holds %s for a run that ended; discarding it", connection.host_id,
                     loggable(message["request_id"]))
            _reply(connection, {"type": "decide", "request_id": message["request_id"], "decision": "discard"})
        elif delivery is not Delivery.ACCEPTED and kind not in ("error", "aborted"):
            _reply(connection, {"type": "error", "request_id": message["request_id"],
                                "message": f"request {message['request_id']} is not pending ({delivery.value})"})
    elif kind == "decided":
        # The server says who decided; a host's own `by` is only its wording, not to be trusted.
        decision = {"decision": message["decision"], "by": _decider(connection)}
        if state.channel.deliver_from_host(message["request_id"], connection.host_id, decision,
                                           kind="approval") is not Delivery.ACCEPTED:
            log.info("host %s decided %s after the cloud stopped waiting", connection.host_id,
                     loggable(message["request_id"]))
    elif kind == "error":
        log.warning("host %s reported: %s", connection.host_id, loggable(message.get("message")))
    else:
        _reply(connection, {"type": "error", "request_id": message.get("request_id"),
                            "message": f"{kind} is not a message a host sends"})


HOST_APP_NAMES = {"revit": "Revit", "ifc": "the IFC host"}


def _decider(connection: HostConnection) -> str:
    return f"the person in {HOST_APP_NAMES.get(connection.host_app, 'the host')}"
