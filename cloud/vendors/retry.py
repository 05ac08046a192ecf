"""Bounded retries for a streaming model call, shared by every vendor adapter.

API (stable; adapters of every vendor use it):

    VendorFailure(status, message, retry_after=None, retryable=None)
        Exception an adapter raises from inside one attempt, after translating its SDK's error.
        `retryable` defaults to `is_retryable_status(status)`; status None means a connection
        problem (refused, reset, truncated stream) and is retryable.
    is_retryable_status(status: int | None) -> bool
        408, 409, 429, 5xx (including 529 overloaded) and None (connection) are retryable.
    parse_retry_after(headers: Mapping[str, str] | None) -> float | None
        Seconds from `retry-after-ms` or `retry-after` (seconds or an HTTP date).
    RetryPolicy(max_attempts=4, base_delay=0.5, max_delay=8.0, max_retry_after=20.0, jitter=0.25)
        `delay(attempt, retry_after)`: exponential backoff with jitter; a server's retry-after is
        honoured but capped at `max_retry_after`. `RetryPolicy.fast()` is for tests.
    stream_with_retries(vendor, attempt, cancel, policy) -> Generator[Chunk, None, ModelTurn]
        `attempt()` starts one try and returns its generator (yields chunks, returns the ModelTurn).
        A VendorFailure that is retryable is retried within the policy's bound; when the failed try
        had already yielded chunks, `metadata("reset_turn")` is yielded first so the person's view
        discards the partial turn. Exhausted or not retryable -> ModelError(vendor, message, status,
        retry_after). Cancelled while waiting -> a ModelTurn with stop_reason "cancelled".

Adapters should turn off their SDK's own retries (max_retries=0 / no HttpRetryOptions) so that the
reset_turn marker and the bound are this module's alone.
"""
from __future__ import annotations

import email.utils
import random
import threading
import time
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass

from cloud.chunks import Chunk, metadata
from cloud.vendors.base import ModelError, ModelTurn

RETRYABLE_STATUSES = frozenset({408, 409, 429})


def is_retryable_status(status: int | None) -> bool:
    return status is None or status in RETRYABLE_STATUSES or status >= 500


class VendorFailure(Exception):
    """One attempt's failure, translated from a vendor SDK's exception."""

    def __init__(self, status: int | None, message: str, retry_after: float | None = None,
                 retryable: bool | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.retry_after = retry_after
        self.retryable = is_retryable_status(status) if retryable is None else retryable


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 4
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_retry_after: float = 20.0
    jitter: float = 0.25  # +- fraction of the computed delay

    @classmethod
    def fast(cls, max_attempts: int = 4) -> RetryPolicy:
        """Millisecond delays, for tests and benchmarks against a loopback server."""
        return cls(max_attempts=max_attempts, base_delay=0.001, max_delay=0.01, max_retry_after=0.05, jitter=0.0)

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before try number `attempt + 1` (attempt counts from 1)."""
        if retry_after is not None:
            return min(retry_after, self.max_retry_after)
        backoff = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        return max(0.0, backoff * (1 + random.uniform(-self.jitter, self.jitter)))


DEFAULT_POLICY = RetryPolicy()


def stream_with_retries(
    vendor: str,
    attempt: Callable[[], Generator[Chunk, None, ModelTurn]],
    cancel: threading.Event,
    policy: RetryPolicy = DEFAULT_POLICY,
) -> Generator[Chunk, None, ModelTurn]:
    tries = 0
    while True:
        tries += 1
        yielded = False
        try:
            gen = attempt()
            while True:
                try:
                    chunk = next(gen)
                except StopIteration as done:
                    return done.value
                yielded = True
                yield chunk
        except VendorFailure as failure:
            if not failure.retryable or tries >= policy.max_attempts:
                suffix = f" after {tries} attempts" if failure.retryable else ""
                raise ModelError(vendor, failure.message + suffix, failure.status, failure.retry_after) from failure
            wait = policy.delay(tries, failure.retry_after)
            if yielded:
                yield metadata("reset_turn", "Retrying the model call", vendor=vendor, status=failure.status,
                               attempt=tries + 1, reason=failure.message)
            if cancel.wait(wait):
                return ModelTurn(stop_reason="cancelled")
