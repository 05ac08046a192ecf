"""One Redis connection pool and one subscriber per server process: the wake-ups that cross processes.

Every process listens on the broadcast channel (a run's new chunk, its end, a cancel, an answered tool
call: all named by session id) and on its own inbox (commands for host websockets it holds). Waiting
code never holds a Redis connection or a poll of its own: it waits on a local signal the subscriber
raises (each waiting call on its own event, woken only by its keys), and re-reads the state from Redis
when woken. The fallback for a lost message (pub/sub is at most once, and Redis may restart): the
subscriber wakes every waiter when it reconnects, and one poller per process reads what waiting calls
wait for (their probes) in one pipeline a second and wakes those whose state changed, so a lost message
only delays, never loses. A probe is read again after 1, 2, 4, 8 s, then every PROBE_MAX_S while nothing
changes (back to every second once it does): the wake-up is the real path, so a thousand runs that wait for
hours cost about a hundred probe reads a second, not a thousand.

Every message is sealed with the deployment's secret (cloud.distributed.signing, NEXUS_SECRET) for the
channel it is published on; one that is unsigned, badly signed or stale is dropped and logged. `seal` and
`unseal` do the same for values the other modules keep in Redis keys.
"""
from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import redis

from cloud.distributed.signing import MESSAGE_MAX_AGE_S, Signer, signer_from_env
from cloud.process_owner import instance_identity

log = logging.getLogger(__name__)

PREFIX = "nx:"
BROADCAST = PREFIX + "events"
RECONNECT_S = 0.5
# Per process. Waiting runs and streams hold none (they wait on local signals), so this bounds only the calls
# in flight at once; beyond it a caller waits for a free connection (under gevent a start-up burst of a
# thousand runs would otherwise open one per greenlet).
MAX_CONNECTIONS = 16
POOL_WAIT_S = 30.0
POLL_S = 1.0  # how often the poller looks for probes due (a wake-up may be lost)
PROBE_MAX_S = 10.0  # the longest a probe of a waiting call goes unread (the longest a lost wake-up delays)


@dataclass
class _Probe:
    commands: tuple[tuple[str, ...], ...]
    users: int = 0
    last: tuple[Any, ...] | None = None
    every: float = POLL_S  # doubles up to PROBE_MAX_S after each reading that saw no change
    due: float = 0.0  # monotonic time of the next reading (0: at the next poll)


class Bus:
    def __init__(self, url: str, process: str | None = None, signer: Signer | None = None) -> None:
        self.signer = signer or signer_from_env()  # before any connection: no secret, no start
        self.process = process or instance_identity()
        # A bounded pool that makes a caller wait for a free connection (redis-py's default pool refuses
        # the 101st at once): every stream, waiting run and host lookup of a busy process shares it.
        pool = redis.BlockingConnectionPool.from_url(url, max_connections=MAX_CONNECTIONS, timeout=POOL_WAIT_S,
                                                     decode_responses=True, health_check_interval=30,
                                                     socket_keepalive=True)
        self.redis = redis.Redis(connection_pool=pool)
        self.inbox = f"{PREFIX}proc:{self.process}"
        self._lock = threading.Lock()
        self._generation: dict[str, int] = {}  # only keys someone here asked about (see `generation`)
        self._waiters: dict[str, set[threading.Event]] = {}  # key -> the events of the calls waiting on it
        self._probes: dict[str, _Probe] = {}
        self._handlers: dict[str, Callable[[dict[str, Any]], None]] = {}
        self._watchers: list[Callable[[str], None]] = []
        self._scripts: dict[str, Any] = {}
        self.closed = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._listen, name="redis-bus", daemon=True)
        self._thread.start()
        self._poller = threading.Thread(target=self._poll_probes, name="redis-probes", daemon=True)
        self._poller.start()
        self._ready.wait(5)

    # signals: a counter per key, bumped by messages; waiters compare and re-read Redis
    def generation(self, key: str) -> int:
        """The key's counter. Asking registers the key: signals for keys nobody here asked about are not
        counted (every process hears every run's wake-ups), so `forget` it when done."""
        with self._lock:
            return self._generation.setdefault(key, 0)

    def wait(self, key: str, seen: int, timeout_s: float) -> bool:
        """Block until `key` is signalled after generation `seen` or `timeout_s` passes; True if signalled."""
        return self.wait_any({key: seen}, timeout_s)

    def wait_any(self, seen: dict[str, int], timeout_s: float) -> bool:
        """Like `wait`, for several keys (key -> generation seen): True once any of them is signalled.
        Each call waits on an event of its own, set only by a signal for one of its keys: a signal wakes
        its own waiters, never every waiting call of the process."""
        event = threading.Event()
        with self._lock:
            if any(self._generation.get(k, 0) != g for k, g in seen.items()):
                return True
            for key in seen:
                self._waiters.setdefault(key, set()).add(event)
        try:
            return event.wait(max(0.0, timeout_s))
        finally:
            with self._lock:
                for key in seen:
                    waiters = self._waiters.get(key)
                    if waiters is not None:
                        waiters.discard(event)
                        if not waiters:
                            del self._waiters[key]

    def wake_here(self, key: str) -> None:
        """Wake `key`'s waiters in this process only (what happened here needs no message)."""
        self._signal(key)

    def forget(self, key: str) -> None:
        with self._lock:
            if key not in self._waiters:
                self._generation.pop(key, None)

    def _signal(self, key: str | None) -> None:
        with self._lock:
            if key is None:  # after a reconnect: whatever was published meanwhile is lost, so wake everyone
                for k in self._generation:
                    self._generation[k] += 1
                woken = [e for waiters in self._waiters.values() for e in waiters]
            elif key in self._generation:
                self._generation[key] += 1
                woken = list(self._waiters.get(key, ()))
            else:
                return
        for event in woken:
            event.set()

    # probes: Redis state read for many waiting calls in one round trip per poll, not one each
    @contextmanager
    def probing(self, key: str, *commands: tuple[str, ...]) -> Iterator[None]:
        """While the block runs, read `commands` at the next poll, then less and less often while their
        replies stay the same (up to every PROBE_MAX_S; together with every other probe due, in one pipeline),
        and signal `key` here when they change: the fallback for a wake-up that was lost, without a Redis call
        per waiting run. The first reading signals too (a change made before it is not missed)."""
        with self._lock:
            probe = self._probes.get(key)
            if probe is None:
                probe = self._probes[key] = _Probe(commands)
            probe.users += 1
        try:
            yield
        finally:
            with self._lock:
                probe.users -= 1
                if probe.users == 0 and self._probes.get(key) is probe:
                    del self._probes[key]

    def _poll_probes(self) -> None:
        while not self.closed.wait(POLL_S):
            now = time.monotonic()
            with self._lock:
                probes = [(key, probe) for key, probe in self._probes.items() if probe.due <= now]
            if not probes:
                continue
            try:
                with self.redis.pipeline(transaction=False) as pipe:
                    for _, probe in probes:
                        for command in probe.commands:
                            pipe.execute_command(*command)
                    replies = pipe.execute()
            except redis.RedisError as exc:  # the reconnect wake-up (and the next poll) cover it
                log.debug("redis probes: %s", exc)
                continue
            at = 0
            for key, probe in probes:
                reading = tuple(replies[at:at + len(probe.commands)])
                at += len(probe.commands)
                if reading != probe.last:
                    probe.last, probe.every = reading, POLL_S
                    self._signal(key)
                else:
                    probe.every = min(2 * probe.every, PROBE_MAX_S)
                probe.due = now + probe.every

    def script(self, source: str) -> Any:
        """The Lua script `source`, registered once for the process (a caller made per run shares it)."""
        with self._lock:
            script = self._scripts.get(source)
            if script is None:
                script = self._scripts[source] = self.redis.register_script(source)
            return script

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
        except redis.RedisError as exc:  # the waiters' probes still find the change
            log.warning("could not publish a wake-up for %s: %s", key, exc)

    def queue_signal(self, pipe: Any, key: str) -> None:
        """Add `key`'s wake-up for the other processes to `pipe` (published once what precedes it is written);
        call `wake_here(key)` after the pipeline ran."""
        pipe.publish(BROADCAST, self.seal(key, BROADCAST))

    # direct messages to one process's inbox
    def on(self, kind: str, handler: Callable[[dict[str, Any]], None]) -> None:
        self._handlers[kind] = handler

    def send_to(self, process: str, message: dict[str, Any]) -> int:
        """Publish to a process's inbox; the number of receivers (0: that process is gone)."""
        return int(self.redis.publish(*self.sealed_for(process, message)))

    def sealed_for(self, process: str, message: dict[str, Any]) -> tuple[str, str]:
        """A process's inbox channel and `message` sealed for it (for a script to publish with other work)."""
        channel = f"{PREFIX}proc:{process}"
        return channel, self.seal(json.dumps(message), channel)

    def close(self) -> None:
        self.closed.set()
        self._thread.join(timeout=2)
        self._poller.join(timeout=2)
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
        """Also call `watcher(key)` for every signal from another process (e.g. a cancel to act on), before
        the key's waiters here are woken."""
        self._watchers.append(watcher)

    def _dispatch(self, message: dict[str, Any]) -> None:
        data = self.unseal(message["data"], message["channel"])
        if data is None:  # unsigned, forged or stale: dropped (logged by unseal)
            return
        if message["channel"] == BROADCAST:
            for watcher in self._watchers:  # first: what a watcher drops (a cached record) is gone when waiters wake
                watcher(data)
            self._signal(data)
            return
        try:
            body = json.loads(data)
            handler = self._handlers.get(body.get("kind"))
            if handler is not None:
                handler(body)
        except Exception:  # one bad message must not stop the process's inbox
            log.exception("redis bus: could not handle an inbox message")
