"""Runs in progress: each run's loop drives on its own thread and publishes chunks to a buffer.

Streams (the POST that started the run, or a page reloaded mid-run) read from the buffer, so a dropped
connection loses nothing. A run that nobody listens to for `detach_grace_s` is cancelled cleanly.
This buffer is process-local; with several processes it would live in Redis behind the same methods.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from cloud import chunks
from cloud.chunks import Chunk

log = logging.getLogger(__name__)

KEEPALIVE = None  # yielded by `follow` when nothing happened for a keepalive interval


class Run:
    def __init__(self, session_id: str, detach_grace_s: float):
        self.session_id = session_id
        self.cancel = threading.Event()
        self.chunks: list[dict[str, Any]] = []
        self.done = False
        self._cond = threading.Condition()
        self._listeners = 0
        self._detach_grace_s = detach_grace_s
        self._last_detach = time.monotonic()

    def publish(self, chunk: Chunk) -> None:
        with self._cond:
            self.chunks.append(chunk.to_json())
            self._cond.notify_all()

    def finish(self) -> None:
        with self._cond:
            self.done = True
            self._cond.notify_all()

    def follow(self, after: int, keepalive_s: float) -> Iterator[dict[str, Any] | None]:
        """Every chunk from index `after` on, as it is published; None after each quiet keepalive interval."""
        with self._cond:
            self._listeners += 1
        try:
            index = after
            while True:
                with self._cond:
                    if index >= len(self.chunks) and not self.done:
                        self._cond.wait(keepalive_s)
                    batch = self.chunks[index:]
                    finished = self.done
                index += len(batch)
                if not batch and not finished:
                    yield KEEPALIVE
                yield from batch
                if finished and index >= len(self.chunks):
                    return
        finally:
            with self._cond:
                self._listeners -= 1
                self._last_detach = time.monotonic()

    def abandoned(self) -> bool:
        with self._cond:
            return self._listeners == 0 and time.monotonic() - self._last_detach > self._detach_grace_s


class RunRegistry:
    def __init__(self, detach_grace_s: float):
        self._lock = threading.Lock()
        self._runs: dict[str, Run] = {}
        self._detach_grace_s = detach_grace_s
        threading.Thread(target=self._reap_abandoned, name="run-reaper", daemon=True).start()

    def get(self, session_id: str) -> Run | None:
        with self._lock:
            return self._runs.get(session_id)

    def active(self) -> list[Run]:
        with self._lock:
            return list(self._runs.values())

    def start(self, session_id: str, drive: Callable[[Run], Iterator[Chunk]]) -> Run | None:
        """Start a run on its own thread; None if the session already has one in progress."""
        with self._lock:
            if session_id in self._runs:
                return None
            run = Run(session_id, self._detach_grace_s)
            self._runs[session_id] = run
        threading.Thread(target=self._drive, args=(run, drive), name=f"run-{session_id[:8]}", daemon=True).start()
        return run

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
            run.finish()

    def _reap_abandoned(self) -> None:
        while True:
            time.sleep(min(1.0, max(0.05, self._detach_grace_s / 4)))
            for run in self.active():
                if not run.cancel.is_set() and run.abandoned():
                    log.info("cancelling run %s: no listener for %.0f s", run.session_id, self._detach_grace_s)
                    run.cancel.set()
