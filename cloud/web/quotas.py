"""Per-user quotas: sessions per hour, concurrent runs, connected hosts, requests per minute.

Exceeding one raises QuotaExceeded, which every route turns into a 429 JSON error naming the quota and
its limit, with Retry-After (RFC 6585, as GitHub's and Stripe's APIs answer). Counts of sessions come from the store; runs and hosts from this process
(with several processes each enforces its own share); the request rate is a sliding one-minute window.
"""
from __future__ import annotations

import threading
import time
from collections import deque
from typing import TYPE_CHECKING

from cloud.config import Settings

if TYPE_CHECKING:
    from cloud.runs import RunRegistry
    from cloud.store import Store


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
    check_limit("sessions per hour", store.count_sessions_since(user_name, time.time() - 3600),
                settings.quota_sessions_per_hour)


def check_concurrent_runs(store: Store, settings: Settings, runs: RunRegistry, user_name: str,
                          session_id: str | None = None) -> None:
    """Before a run of the user's starts (in `session_id`, whose own run does not count): the runs in
    progress in the registry (with Redis, on every process)."""
    running = sum(1 for r in runs.active() if r.session_id != session_id
                  and (store.get_session(r.session_id) or {}).get("user_name") == user_name)
    check_limit("concurrent runs", running, settings.quota_concurrent_runs, retry_after_s=10)


def limits(settings: Settings) -> dict[str, int]:
    return {"sessions per hour": settings.quota_sessions_per_hour,
            "concurrent runs": settings.quota_concurrent_runs, "hosts": settings.quota_hosts,
            "requests per minute": settings.quota_requests_per_minute}
