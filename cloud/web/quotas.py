"""Per-user quotas: sessions per hour, concurrent runs, connected hosts, requests per minute.

Exceeding one raises QuotaExceeded, which every route turns into a 429 JSON error naming the quota and
its limit, with Retry-After (RFC 6585, as GitHub's and Stripe's APIs answer). Counts of sessions come from the store; hosts from this process
(with several processes each enforces its own share); the request rate is a sliding one-minute window.

Concurrent runs are counted and taken in one step: `reserve_run` checks the user's count and registers a
slot for the new run atomically (under one lock in this process; with Redis, in one Lua script on a sorted
set per user, shared by every process), and the slot is released when the run ends. A Redis slot carries
an expiry the process renews while the run goes on, so a process that dies frees its slots within the
run-lease time.
"""
from __future__ import annotations

import logging
import threading
import time
import uuid
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from cloud.config import Settings

if TYPE_CHECKING:
    from cloud.chunks import Chunk
    from cloud.runs import Run, RunRegistry
    from cloud.store import Store

log = logging.getLogger(__name__)
RUN_SLOTS_KEY = "nx:quota:runs:"  # + user name: a sorted set of slot tokens scored by their expiry (ms)


class QuotaExceeded(Exception):
    def __init__(self, quota: str, limit: int, retry_after_s: int):
        super().__init__(f"quota exceeded: {quota} (limit {limit})")
        self.quota, self.limit, self.retry_after_s = quota, limit, retry_after_s


class RequestRate:
    """At most `per_minute` requests per user in any sliding minute (0: unlimited)."""

    WINDOW_S = 60.0

    def __init__(self, per_minute: int):
        self.per_minute = per_minute
        self._lock = threading.Lock()
        self._seen: dict[str, deque[float]] = {}

    def admit(self, user_name: str) -> None:
        if self.per_minute <= 0:
            return
        now = time.monotonic()
        with self._lock:
            seen = self._seen.setdefault(user_name, deque())
            while seen and seen[0] <= now - self.WINDOW_S:
                seen.popleft()
            if len(seen) >= self.per_minute:
                raise QuotaExceeded("requests per minute", self.per_minute,
                                    max(1, int(seen[0] + self.WINDOW_S - now + 1)))
            seen.append(now)
            if len(self._seen) > 10_000:  # forget users who went quiet, so the map stays small
                for name in [n for n, q in self._seen.items() if not q or q[-1] <= now - self.WINDOW_S]:
                    del self._seen[name]


def check_limit(quota: str, used: int, limit: int, retry_after_s: int = 60) -> None:
    if limit > 0 and used >= limit:
        raise QuotaExceeded(quota, limit, retry_after_s)


def check_sessions_per_hour(store: Store, settings: Settings, user_name: str) -> None:
    """Before a new session of the user's (the chat API's POST /sessions, an MCP client's first call, run_task)."""
    check_limit("sessions per hour", store.sessions.count_sessions_since(user_name, time.time() - 3600),
                settings.quota_sessions_per_hour)


class RunSlot:
    """One run's place in its user's concurrent runs; `release` (idempotent) gives it back."""

    def __init__(self, slots: RunSlots | None, user_name: str, token: str) -> None:
        self._slots, self.user_name, self.token = slots, user_name, token
        self._released = threading.Event()
        self.bound = False  # tied to a run's end (`around`, `release_on`)

    def release(self) -> None:
        if self._slots is not None and not self._released.is_set():
            self._released.set()
            self._slots.release(self)

    def around(self, drive: Callable[[Run], Iterator[Chunk]]) -> Callable[[Run], Iterator[Chunk]]:
        """`drive`, releasing the slot when the run ends (completed, failed, cancelled, lease lost)."""
        self.bound = True

        def held(run: Run) -> Iterator[Chunk]:
            try:
                yield from drive(run)
            finally:
                self.release()
        return held

    def release_on(self, ended: threading.Event) -> None:
        """Release the slot once `ended` is set (a delegated run's `done`)."""
        self.bound = True
        threading.Thread(target=lambda: (ended.wait(), self.release()), name="run-slot", daemon=True).start()


class RunSlots:
    """The slots of this process's users (one lock: counting and registering are one step)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[str, set[str]] = {}

    def reserve(self, user_name: str, limit: int) -> RunSlot:
        token = uuid.uuid4().hex
        with self._lock:
            held = self._held.setdefault(user_name, set())
            check_limit("concurrent runs", len(held), limit, retry_after_s=10)
            held.add(token)
        return RunSlot(self, user_name, token)

    def release(self, slot: RunSlot) -> None:
        with self._lock:
            held = self._held.get(slot.user_name, set())
            held.discard(slot.token)
            if not held:
                self._held.pop(slot.user_name, None)

    def used(self, user_name: str) -> int:
        with self._lock:
            return len(self._held.get(user_name, ()))


# KEYS[1]: the user's sorted set; ARGV: token, limit (0: none), time to live in ms. Returns the count before
# this slot, or -1 (refused). TIME is Redis's clock: every process compares expiries on the same one.
RESERVE = """
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ms)
local used = redis.call('ZCARD', KEYS[1])
local limit = tonumber(ARGV[2])
if limit > 0 and used >= limit then return -1 end
redis.call('ZADD', KEYS[1], ms + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]) * 2)
return used
"""
# KEYS[1]: the user's sorted set; ARGV: ttl in ms, then the tokens still held here: push their expiry on.
RENEW = """
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], 'XX', ms + tonumber(ARGV[1]), ARGV[i]) end
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]) * 2)
return 0
"""


class RedisRunSlots(RunSlots):
    """Slots shared by every process through Redis; renewed from here every third of `ttl_s`."""

    def __init__(self, client: Any, ttl_s: float, stopped: threading.Event) -> None:
        super().__init__()
        self._redis, self._ttl_ms = client, int(ttl_s * 1000)
        self._reserve, self._renew = client.register_script(RESERVE), client.register_script(RENEW)
        self._stopped = stopped
        threading.Thread(target=self._renew_all, args=(ttl_s / 3,), name="run-slots", daemon=True).start()

    def reserve(self, user_name: str, limit: int) -> RunSlot:
        token = uuid.uuid4().hex
        if int(self._reserve(keys=[RUN_SLOTS_KEY + user_name], args=[token, limit, self._ttl_ms])) < 0:
            raise QuotaExceeded("concurrent runs", limit, 10)
        with self._lock:
            self._held.setdefault(user_name, set()).add(token)
        return RunSlot(self, user_name, token)

    def release(self, slot: RunSlot) -> None:
        super().release(slot)
        try:
            self._redis.zrem(RUN_SLOTS_KEY + slot.user_name, slot.token)
        except Exception as exc:  # Redis away: the slot expires within the lease time instead
            log.warning("could not release a run slot of %s in Redis: %s", slot.user_name, exc)

    def _renew_all(self, every_s: float) -> None:
        while not self._stopped.wait(every_s):
            with self._lock:
                held = {user: list(tokens) for user, tokens in self._held.items() if tokens}
            for user, tokens in held.items():
                try:
                    self._renew(keys=[RUN_SLOTS_KEY + user], args=[self._ttl_ms, *tokens])
                except Exception as exc:  # the next round retries well before the slots expire
                    log.warning("could not renew the run slots of %s in Redis: %s", user, exc)


_slots: weakref.WeakKeyDictionary[RunRegistry, RunSlots] = weakref.WeakKeyDictionary()
_slots_lock = threading.Lock()


def run_slots(runs: RunRegistry) -> RunSlots:
    """The slots that go with a run registry (one set per registry: the chat API and MCP share it)."""
    with _slots_lock:
        found = _slots.get(runs)
        if found is None:
            bus = getattr(runs, "bus", None)  # a RedisRunRegistry: its slots live in Redis too
            if bus is not None:
                from cloud.distributed import lease_ttl_s

                found = RedisRunSlots(bus.redis, lease_ttl_s(), runs.stopped)
            else:
                found = RunSlots()
            _slots[runs] = found
        return found


def reserve_run(settings: Settings, runs: RunRegistry, user_name: str) -> RunSlot:
    """Before a run of the user's starts: a slot among the user's concurrent runs (with Redis, on every
    process), or QuotaExceeded. The caller releases it when the run ends (`around`, `release_on`), or at
    once if the run does not start."""
    if settings.quota_concurrent_runs <= 0:
        return RunSlot(None, user_name, "")
    return run_slots(runs).reserve(user_name, settings.quota_concurrent_runs)


def limits(settings: Settings) -> dict[str, int]:
    return {"sessions per hour": settings.quota_sessions_per_hour,
            "concurrent runs": settings.quota_concurrent_runs, "hosts": settings.quota_hosts,
            "requests per minute": settings.quota_requests_per_minute}
