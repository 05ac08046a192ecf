"""Redis writes nobody waits for (a host's activity, for the host lists), sent on a connection of their own
without waiting for each reply: a write costs its caller the socket's send, not a round trip. The replies are read
before the next write is sent (they have long arrived by then) and an error among them is logged. The writes are
made in the order sent; should the connection fail, those whose reply was still owed may be lost (they are only
what a host list shows, and the next write says it again).
"""
from __future__ import annotations

import logging
import threading
from typing import Any

import redis

log = logging.getLogger(__name__)


class UnansweredWrites:
    def __init__(self, client: redis.Redis) -> None:
        pool = client.connection_pool
        self._connection_class, self._kwargs = pool.connection_class, pool.connection_kwargs
        self._connection: Any = None
        self._owed = 0  # replies not read yet
        self._lock = threading.Lock()

    def send(self, *command: Any) -> None:
        with self._lock:
            try:
                if self._connection is None:
                    self._connection = self._connection_class(**self._kwargs)
                self._read_owed()
                self._connection.send_command(*command)
                self._owed += 1
            except (redis.ConnectionError, redis.TimeoutError, OSError):
                self._drop()
                raise

    def _read_owed(self) -> None:
        assert self._connection is not None
        while self._owed:
            self._owed -= 1
            try:
                self._connection.read_response()
            except redis.ResponseError as exc:
                log.warning("a write sent to Redis without waiting failed: %s", exc)

    def _drop(self) -> None:
        if self._connection is not None:
            self._connection.disconnect()
        self._connection, self._owed = None, 0
