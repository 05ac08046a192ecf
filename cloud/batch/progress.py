"""Where a batch stands: done, failed, running and left, read from its per-file results (the record) and
the set of files being worked on (in the queue's Redis, or the embedded pool's own set)."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from cloud.batch.jobs import BatchSpec, read_result


@dataclass(frozen=True)
class Progress:
    total: int
    done: int
    failed: int
    running: int

    @property
    def left(self) -> int:
        return self.total - self.done - self.failed - self.running

    @property
    def finished(self) -> bool:
        return self.done + self.failed >= self.total

    def line(self) -> str:
        return f"done {self.done}, failed {self.failed}, running {self.running}, left {self.left} of {self.total}"


class Tracker:
    """Counts a batch's progress; `input_shas` are taken once, when the batch starts."""

    def __init__(self, spec: BatchSpec, input_shas: dict[str, str], running: Callable[[], Iterable[str]]) -> None:
        self.spec, self.input_shas, self._running = spec, input_shas, running
        self._tasks = {path: spec.task_sha256(path) for path in spec.files}
        self.results: dict[str, dict[str, Any]] = {}

    def poll(self) -> Progress:
        for path in self.spec.files:
            if path in self.results:
                continue
            result = read_result(self.spec, path)
            if (result and result.get("task_sha256") == self._tasks[path]
                    and self.input_shas.get(path) in (result.get("input_sha256"), result.get("output_sha256"))):
                self.results[path] = result
        running = {p for p in self._running() if p not in self.results}
        failed = sum(1 for r in self.results.values() if not r.get("ok"))
        return Progress(len(self.spec.files), len(self.results) - failed, failed, len(running))
