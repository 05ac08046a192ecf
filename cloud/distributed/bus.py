"""One Redis connection pool and one subscriber per server process: the wake-ups that cross processes.

Every process listens on the broadcast channel (a run's new chunk, its end, a cancel, an answered tool
call: all named by session id) and on its own inbox (commands for host websockets it holds). Waiting
code never holds a Redis connection: it waits on a local signal the subscriber raises, and re-reads the
state from Redis when woken or after a slow poll interval, so a lost message (pub/sub is at most once,
and Redis may restart) only delays, never loses.

Every message is sealed with the deployment's secret (cloud.distributed.signing, NEXUS_SECRET) for the
channel it is published on; one that is unsigned, badly signed or stale is dropped and logged. `seal` and
`unseal` do the same for values the other modules keep in Redis keys.
"""
from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import redis

from cloud.distributed.signing import MESSAGE_MAX_AGE_S, Signer, signer_from_env

log = logging.getLogger(__name__)

PREFIX = "nx:"
BROADCAST = PREFIX + "events"
RECONNECT_S = 0.5
MAX_CONNECTIONS = 256  # per process (1,000 suspended runs across two processes exhausted 64)
POOL_WAIT_S = 30.0


def process_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class Bus:
    def __init__(self, url: str, process: str | None = None, signer: Signer | None = None) -> None:
        self.signer = signer or signer_from_env()  # before any connection: no secret, no start
        self.process = process or process_id()
        # A bounded pool that makes a caller wait for a free connection (redis-py's default pool refuses
        # the 101st at once): every stream, waiting run and host lookup of a busy process shares it.
        pool = redis.BlockingConnectionPool.from_url(url, max_connections=MAX_CONNECTIONS, timeout=POOL_WAIT_S,
                                                     decode_responses=True, health_check_interval=30,
                                                     socket_keepalive=True)
        self.redis = redis.Redis(connection_pool=pool)
        self.inbox = f"{PREFIX}proc:{self.process}"
        self._cond = threading.Condition()
        self._generation: dict[str, int] = {}
        self._handlers: dict[str, Callable[[dict[str, Any]], None]] = {}
        self._watchers: list[Callable[[str], None]] = []
        self.closed = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._listen, name="redis-bus", daemon=True)
        self._thread.start()
        self._ready.wait(5)

    # signals: a counter per key, bumped by messages; waiters compare and re-read Redis
    def generation(self, key: str) -> int:
        with self._cond:
            return self._generation.get(key, 0)

    def wait(self, key: str, seen: int, timeout_s: float) -> bool:
        """Block until `key` is signalled after generation `seen` or `timeout_s` passes; True if signalled."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while self._generation.get(key, 0) == seen:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
            return True

    def wait_any(self, seen: dict[str, int], timeout_s: float) -> bool:
        """Like `wait`, for several keys (key -> generation seen): True once any of them is signalled."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while all(self._generation.get(k, 0) == g for k, g in seen.items()):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
            return True

    def wake_here(self, key: str) -> None:
        """Wake `key`'s waiters in this process only (what happened here needs no message)."""
        self._signal(key)

    def forget(self, key: str) -> None:
        with self._cond:
            self._generation.pop(key, None)

    def _signal(self, key: str | None) -> None:
        with self._cond:
            if key is None:  # after a reconnect: whatever was published meanwhile is lost, so wake everyone
                for k in self._generation:
                    self._generation[k] += 1
            else:
                self._generation[key] = self._generation.get(key, 0) + 1
            self._cond.notify_all()

    # signed values: what this deployment's processes wrote, for the key (or channel) named by `purpose`
    def seal(self, payload: str, purpose: str) -> str:
        return self.signer.seal(payload, purpose)

    def unseal(self, sealed: object, purpose: str, max_age_s: float = MESSAGE_MAX_AGE_S) -> str | None:
        return self.signer.unseal(sealed, purpose, max_age_s)

    def signal(self, key: str) -> None:
        """Wake `key`'s waiters in every process (this one included)."""
        self._signal(key)
        try:
            self.redis.publish(BROADCAST, self.seal(key, BROADCAST))
        except redis.RedisError as exc:  # the waiters' slow poll still finds the change
            log.warning("could not publish a wake-up for %s: %s", key, exc)

    # direct messages to one process's inbox
    def on(self, kind: str, handler: Callable[[dict[str, Any]], None]) -> None:
        self._handlers[kind] = handler

    def send_to(self, process: str, message: dict[str, Any]) -> int:
        """Publish to a process's inbox; the number of receivers (0: that process is gone)."""
        channel = f"{PREFIX}proc:{process}"
        return int(self.redis.publish(channel, self.seal(json.dumps(message), channel)))

    def close(self) -> None:
        self.closed.set()
        self._thread.join(timeout=2)
        self.redis.close()

    def _listen(self) -> None:
        first = True
        while not self.closed.is_set():
            pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
            try:
                pubsub.subscribe(BROADCAST, self.inbox)
                if not first:
                    log.info("redis bus reconnected")
                    self._signal(None)
                first = False
                self._ready.set()
                while not self.closed.is_set():
                    message = pubsub.get_message(timeout=0.5)
                    if message is not None:
                        self._dispatch(message)
            except (redis.RedisError, OSError) as exc:
                self._ready.set()
                log.warning("redis bus disconnected (%s); reconnecting", exc)
                self.closed.wait(RECONNECT_S)
            finally:
                try:
                    pubsub.close()
                except (redis.RedisError, OSError):
                    pass

    def watch(self, watcher: Callable[[str], None]) -> None:
        """Also call `watcher(key)` for every signal from another process (e.g. a cancel to act on)."""
        self._watchers.append(watcher)

    def _dispatch(self, message: dict[str, Any]) -> None:
        data = self.unseal(message["data"], message["channel"])
        if data is None:  # unsigned, forged or stale: dropped (logged by unseal)
            return
        if message["channel"] == BROADCAST:
            self._signal(data)
            for watcher in self._watchers:
                watcher(data)
            return
        try:
            body = json.loads(data)
            handler = self._handlers.get(body.get("kind"))
            if handler is not None:
                handler(body)
        except Exception:  # one bad message must not stop the process's inbox
            log.exception("redis bus: could not handle an inbox message")
