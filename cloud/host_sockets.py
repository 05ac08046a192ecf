"""The open host websockets of this process, so a revoked token or a taken-over host id can close them."""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

CLOSE_REVOKED = 4401  # the token the host connected with was revoked: reconnecting will be refused
CLOSE_REPLACED = 4409  # a newer connection took this host id over


@dataclass
class OpenSocket:
    ws: Any
    host_id: str
    token_id: str | None


class HostSockets:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[int, OpenSocket] = {}

    def add(self, ws: Any, host_id: str, token_id: str | None) -> None:
        with self._lock:
            self._open[id(ws)] = OpenSocket(ws, host_id, token_id)

    def remove(self, ws: Any) -> None:
        with self._lock:
            self._open.pop(id(ws), None)

    def close_replaced(self, host_id: str, newest: Any) -> int:
        """Close the older sockets of a host id that `newest` has just taken over."""
        with self._lock:
            doomed = [s for s in self._open.values() if s.host_id == host_id and s.ws is not newest]
        for socket in doomed:
            close(socket.ws, CLOSE_REPLACED, "host id taken over by a newer connection")
        return len(doomed)

    def close_token(self, token_id: str) -> int:
        """Close every host connected with token_id; returns how many."""
        with self._lock:
            doomed = [s for s in self._open.values() if s.token_id == token_id]
        for socket in doomed:
            close(socket.ws, CLOSE_REVOKED, "token revoked")
        return len(doomed)


def close(ws: Any, code: int, reason: str) -> None:
    try:
        ws.close(reason=code, message=reason)
    except Exception as exc:  # already gone: nothing left to close
        log.debug("closing a host socket: %s", exc)
