"""The embedded pool: with no Redis configured, a batch's files are processed by threads of this process
(each file still gets its own IFC host process)."""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from cloud.batch.jobs import BatchSpec
from cloud.batch.worker import process_file, wait_for_hosts
from cloud.store import Store


class EmbeddedPool:
    def __init__(self, store: Store, workers: int) -> None:
        self.store, self.workers = store, max(1, workers)
        self._running: set[str] = set()
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None

    def running(self) -> list[str]:
        with self._lock:
            return list(self._running)

    def submit(self, spec: BatchSpec, paths: list[str]) -> None:
        self._executor = ThreadPoolExecutor(self.workers, thread_name_prefix="nexus-batch")
        for path in paths:
            self._executor.submit(self._one, spec, path)
        self._executor.shutdown(wait=False)

    def _one(self, spec: BatchSpec, path: str) -> None:
        with self._lock:
            self._running.add(path)
        try:
            process_file(spec, path, self.store)
        finally:
            with self._lock:
                self._running.discard(path)

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
        wait_for_hosts()
