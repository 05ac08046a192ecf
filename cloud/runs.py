"""Runs in progress: each run's loop drives on its own thread and publishes chunks to a buffer.

Streams (the POST that started the run, or any page of the same user reattaching) read from the buffer,
so a dropped connection loses nothing. A run does not need a listener: it ends by its own limits, an
explicit cancel or the person's decision. A finished run's chunks stay readable for `retain_s`, so a
browser that comes back after the end still sees everything it missed.

With the store's leases, the driving process holds a lease on the session (renewed while the run goes on): a run
whose lease expired was left by a dead process and is recovered by any other process. This registry is
process-local; cloud/distributed/redis_runs.py keeps the same methods with the buffer in Redis.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from cloud import chunks
from cloud.chunks import Chunk
from cloud.process_owner import instance_identity

if TYPE_CHECKING:
    from cloud.store import RunLeases

log = logging.getLogger(__name__)

KEEPALIVE = None  # yielded by `follow` when nothing happened for a keepalive interval
RETAIN_S = 3600.0  # how long a finished run's chunks can still be read by a reattaching page
MAX_RETAINED = 1000
LEASE_TTL_S = 30.0  # a driving process renews its leases every third of this


class Run:
    def __init__(self, session_id: str):
        self.session_id = session_id
        self.owner: str | None = None  # the registry driving it (its lease's owner), when driven here
        self.cancel = threading.Event()
        self.chunks: list[dict[str, Any]] = []
        self.done = False
        self.finished_at: float | None = None
        # Set once the registry has let go of the run (out of its runs in progress, its lease released): the
        # session can take its next run without racing this one's release.
        self.released = threading.Event()
        self._lock = threading.Lock()
        # Set (and replaced by a fresh one) whenever a chunk or the end arrives. A follower waits on the one
        # it saw: no waiter lock per wait as with a Condition, and under gevent one event's wait is one timer.
        self._changed = threading.Event()

    def _wake_followers(self) -> None:
        """Call with the lock held."""
        changed, self._changed = self._changed, threading.Event()
        changed.set()

    def publish(self, chunk: Chunk) -> None:
        with self._lock:
            self.chunks.append(chunk.to_json())
            self._wake_followers()

    def finish(self) -> None:
        with self._lock:
            self.done = True
            self.finished_at = time.monotonic()
            self._wake_followers()

    def chunk_count(self) -> int:
        with self._lock:
            return len(self.chunks)

    def follow(self, after: int, keepalive_s: float) -> Iterator[dict[str, Any] | None]:
        """Every chunk from index `after` on, as it is published; None after each quiet keepalive interval."""
        index = after
        while True:
            with self._lock:
                batch = self.chunks[index:]
                finished = self.done
                changed = self._changed
            if batch:
                index += len(batch)
                yield from batch
            elif finished:
                return
            elif not changed.wait(keepalive_s):
                yield KEEPALIVE


class RunRegistry:
    def __init__(self, leases: RunLeases | None = None, owner: str | None = None, retain_s: float = RETAIN_S,
                 lease_ttl_s: float = LEASE_TTL_S):
        self._lock = threading.Lock()
        self._runs: dict[str, Run] = {}
        self._finished: OrderedDict[str, Run] = OrderedDict()
        self._retain_s = retain_s
        self._leases, self._lease_ttl_s = leases, lease_ttl_s
        self.owner = owner or instance_identity()
        self.stopped = threading.Event()
        self.background: list[threading.Thread] = []  # threads that end once `stopped` is set (by close)
        if leases is not None:
            self.background.append(threading.Thread(target=self._renew_leases, name="run-leases", daemon=True))
            self.background[-1].start()

    def get(self, session_id: str) -> Run | None:
        """The session's run in progress."""
        with self._lock:
            return self._runs.get(session_id)

    def recent(self, session_id: str) -> Run | None:
        """The session's run in progress, or its last finished run while it is retained."""
        with self._lock:
            self._forget_old()
            return self._runs.get(session_id) or self._finished.get(session_id)

    def active(self) -> list[Run]:
        with self._lock:
            return list(self._runs.values())

    def start(self, session_id: str, drive: Callable[[Run], Iterator[Chunk]]) -> Run | None:
        """Start a run on its own thread; None if the session already has one in progress."""
        with self._lock:
            if session_id in self._runs:
                return None
            if self._leases is not None and not self._leases.acquire_run_lease(session_id, self.owner,
                                                                               self._lease_ttl_s):
                return None  # another process drives it
            run = self._new_run(session_id)
            run.owner = self.owner
            self._runs[session_id] = run
        threading.Thread(target=self._drive, args=(run, drive), name=f"run-{session_id[:8]}", daemon=True).start()
        return run

    def _new_run(self, session_id: str) -> Run:
        return Run(session_id)

    def _drive(self, run: Run, drive: Callable[[Run], Iterator[Chunk]]) -> None:
        try:
            for chunk in drive(run):
                run.publish(chunk)
        except Exception as exc:  # one run's crash must never take another down
            log.exception("run %s crashed", run.session_id)
            run.publish(chunks.error(f"Internal error: {type(exc).__name__}: {exc}"))
        finally:
            with self._lock:
                self._runs.pop(run.session_id, None)
                self._finished[run.session_id] = run
                self._finished.move_to_end(run.session_id)
                self._forget_old()
            if self._leases is not None:
                try:
                    self._leases.release_run_lease(run.session_id, self.owner)
                except Exception:  # the lease then simply expires
                    log.exception("could not release the lease of run %s", run.session_id)
            run.released.set()
            run.finish()

    def _forget_old(self) -> None:
        now = time.monotonic()
        while self._finished:
            oldest = next(iter(self._finished.values()))
            if len(self._finished) <= MAX_RETAINED and now - (oldest.finished_at or now) <= self._retain_s:
                return
            self._finished.popitem(last=False)

    def end_abandoned(self, session_id: str, message: str) -> None:
        """End the chunk stream of a run whose process died (its session was just recovered). A stream in
        this registry lives in its own process, so a dead process's run left none here to end."""

    def close(self) -> None:
        """Stop this registry's background work (a server shutting down); its `background` threads end."""
        self.stopped.set()

    def _renew_leases(self) -> None:
        assert self._leases is not None
        while not self.stopped.wait(self._lease_ttl_s / 3):
            with self._lock:
                ids = list(self._runs)
            if not ids:
                continue
            try:
                for session_id in self._leases.renew_run_leases(ids, self.owner, self._lease_ttl_s):
                    log.warning("run %s: its lease was taken over by another process; cancelling here", session_id)
                    run = self.get(session_id)
                    if run is not None:
                        run.cancel.set()
            except Exception:  # a store hiccup: the next round retries well before the lease runs out
                log.exception("renewing run leases failed")
