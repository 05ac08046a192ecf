"""Batches started through the product (the API, the chat page): files chosen in the person's folders under
the batch root an admin configures (NEXUS_BATCH_ROOT: their own `<root>/<user>/` and the project folders
shared with their team, checked by cloud.folders.access), never an arbitrary server path; one state folder
per batch under the state
root (NEXUS_BATCH_STATE, default `<root>/.nexus-batches`); run on the Dramatiq queue when NEXUS_REDIS_URL is
set (by `nexus batch-worker`s), else on an embedded pool of this process. The same jobs, results and reports
as `nexus batch` (cloud.batch.jobs, worker, queue, pool).

Under review (`ask`), each committed result is staged in the batch's state folder until the person keeps it
(moved into the out folder) or discards it (deleted); who decided is recorded in the file's result and in
the batch's event log (`.nexus-batch/events.jsonl`, with who started and who cancelled).
"""
from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cloud.batch.jobs import (
    CANCELLED,
    MANIFEST,
    STATE_DIR,
    BatchError,
    BatchSpec,
    load_manifest,
    read_result,
    save_manifest,
    save_result,
    state_path,
)
from cloud.batch.report import outcome
from cloud.folders.access import Access, FolderError
from cloud.folders.roots import Roots
from cloud.store import Store

WORKERS_ENV = "NEXUS_BATCH_WORKERS"
DEFAULT_WORKERS = 2
EVENTS = "events.jsonl"
MAX_FILES = 10_000
BATCH_ID = re.compile(r"^[0-9a-f]{12}$")
IFC_SUFFIXES = (".ifc",)


def _under(path: str, folder: str) -> bool:
    return path == folder or os.path.commonpath([path, folder]) == folder


def resolve_files(roots: Roots, access: Access, files: Any, out: str | None) -> list[str]:
    """The input files a request names (a glob or a list of globs/names, relative to the person's folder or
    `projects/<name>/...`), each one the person may read (cloud.folders.access)."""
    patterns = [files] if isinstance(files, str) else files
    if not isinstance(patterns, list) or not patterns or len(patterns) > MAX_FILES:
        raise BatchError(f"files: expected a glob or a list of 1 to {MAX_FILES} paths relative to your folder")
    found: set[str] = set()
    for i, pattern in enumerate(patterns):
        for named, real in access.expand(pattern, f"files[{i}]" if isinstance(files, list) else "files"):
            if out is not None and os.path.dirname(real) == out and real.lower().endswith(IFC_SUFFIXES):
                raise BatchError(f"out: is the inputs' own folder ({named}); choose another folder")
            if _under(real, roots.state) or (out is not None and _under(real, out)):
                continue  # batch state and earlier outputs are never inputs
            if os.path.isfile(real) and real.lower().endswith(IFC_SUFFIXES):
                found.add(real)
    if not found:
        raise BatchError(f"files: nothing matches {files!r} in your folders (IFC files only)")
    if len(found) > MAX_FILES:
        raise BatchError(f"files: {len(found)} files match; at most {MAX_FILES} per batch")
    return sorted(found)


def resolve_out(roots: Roots, access: Access, out: Any) -> str:
    """The out folder: one the person may write to (their own folder, or a project folder shared read-write)."""
    real = access.resolve(out, "write", "out")
    if _under(real, roots.state):
        raise BatchError("out: cannot be inside the batches' state folder")
    if os.path.exists(real) and not os.path.isdir(real):
        raise BatchError(f"out: {out!r} exists and is not a folder")
    return os.path.normpath(real)


def check_outputs(access: Access, files: list[str], out: str, spec: BatchSpec) -> None:
    """No file's output may be an input or land outside `out` (a link inside `out` pointing elsewhere)."""
    inputs = set(files)
    for path in files:
        target = os.path.realpath(spec.output_for(path))
        if target in inputs:
            raise FolderError(f"out: the output of {access.shown(path)} would overwrite the input "
                              f"{access.shown(target)} (through a symbolic link in the out folder): refused")
        if not _under(target, out) or not access.allows(target, "write"):
            raise FolderError(f"out: the output of {access.shown(path)} would be written outside the out folder "
                              "(through a symbolic link in it): refused")


def new_spec(roots: Roots, *, files: list[str], out: str | None, owner: str, script: str | None,
             script_name: str | None, prompt: str | None, model: str | None, policy: str, validation: str,
             source: dict[str, Any] | None, ids: str | None = None, access: Access | None = None) -> BatchSpec:
    if out is not None and any(os.path.dirname(f) == out for f in files):
        raise BatchError("out: is the inputs' own folder; choose another folder")
    review = policy == "ask"
    spec = BatchSpec(files=files, root=os.path.commonpath([os.path.dirname(f) for f in files]), state_dir="",
                     out_dir=out, script=script, script_name=script_name, prompt=prompt, model=model,
                     policy="auto" if review else policy, validation=validation, owner=owner, review=review,
                     created=time.time(), source=source, ids=ids)
    spec.state_dir = roots.state_dir(spec.batch_id)
    if access is not None and out is not None:
        check_outputs(access, files, out, spec)
    return spec


# --- the event log: who started, cancelled, kept or discarded what --------------------------------------

_log_lock = threading.Lock()


def log_event(spec: BatchSpec, event: str, by: str, **fields: Any) -> dict[str, Any]:
    entry = {"ts": time.time(), "event": event, "by": by, **fields}
    path = state_path(spec.state_dir, EVENTS)
    path.parent.mkdir(parents=True, exist_ok=True)
    with _log_lock, path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry) + "\n")
    return entry


def events(spec: BatchSpec) -> list[dict[str, Any]]:
    try:
        lines = state_path(spec.state_dir, EVENTS).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in lines if line.strip()]


# --- running ---------------------------------------------------------------------------------------------

class Runner:
    """Starts batches on the queue (Redis) or an embedded pool, and says which files are running: the web
    app's batches and `nexus batch` alike. With a queue, `workers` > 0 also works the queue in this process."""

    def __init__(self, store: Store | None, url: str | None = None, workers: int | None = None) -> None:
        self.store = store
        self.url = url if url is not None else (os.environ.get("NEXUS_REDIS_URL") or None)
        self.workers = workers
        self._pools: dict[str, Any] = {}
        self._queue: Any = None
        self._working: list[tuple[threading.Thread, threading.Event]] = []
        self._lock = threading.Lock()

    @property
    def kind(self) -> str:
        return "queue" if self.url else "embedded"

    def _get_queue(self) -> Any:
        from cloud.batch.queue import BatchQueue

        with self._lock:
            if self._queue is None:
                self._queue = BatchQueue(self.url or "", self.store)
            return self._queue

    def check(self) -> None:
        """Raises when the queue cannot be reached (embedded: nothing to reach)."""
        if self.url:
            self._get_queue().ping()

    def start(self, spec: BatchSpec, files: list[str] | None = None) -> None:
        """Run `files` (default: all the batch's files)."""
        save_manifest(spec)
        files = list(spec.files) if files is None else files
        if self.url:
            queue = self._get_queue()
            queue.enqueue(spec.state_dir, files)
            if self.workers and not self._working:
                stop = threading.Event()
                thread = threading.Thread(target=queue.work, args=(self.workers, stop), daemon=True)
                thread.start()
                self._working.append((thread, stop))
            return
        from cloud.batch.pool import EmbeddedPool

        workers = self.workers or int(os.environ.get(WORKERS_ENV, DEFAULT_WORKERS) or DEFAULT_WORKERS)
        assert self.store is not None, "an embedded pool runs files: it needs the store"
        pool = EmbeddedPool(self.store, workers)
        with self._lock:
            self._pools[spec.batch_id] = pool
        pool.submit(spec, files)

    def running(self, batch_id: str) -> list[str]:
        if self.url:
            return self._get_queue().running(batch_id)
        with self._lock:
            pool = self._pools.get(batch_id)
        return pool.running() if pool is not None else []

    def close(self) -> None:
        with self._lock:
            pools, self._pools = list(self._pools.values()), {}
            working, self._working = self._working, []
            queue, self._queue = self._queue, None
        for pool in pools:
            pool.close()
        for thread, stop in working:
            stop.set()
            thread.join()
        if queue is not None:
            queue.close()


def cancel(spec: BatchSpec, by: str) -> dict[str, Any]:
    """Files not yet started are recorded `cancelled` and never run; files running finish."""
    marker = state_path(spec.state_dir, CANCELLED)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps({"by": by, "ts": time.time()}), encoding="utf-8")
    return log_event(spec, "cancel", by)


def is_cancelled(spec: BatchSpec) -> bool:
    return state_path(spec.state_dir, CANCELLED).exists()


# --- reading ---------------------------------------------------------------------------------------------

def load(roots: Roots, batch_id: str) -> BatchSpec | None:
    if not BATCH_ID.match(batch_id):
        return None
    try:
        spec = load_manifest(roots.state_dir(batch_id))
    except BatchError:
        return None
    return spec if spec.batch_id == batch_id and spec.owner else None


def all_batches(roots: Roots) -> list[BatchSpec]:
    found = []
    for manifest in Path(roots.state).glob(f"*/{STATE_DIR}/{MANIFEST}"):
        spec = load(roots, manifest.parent.parent.name)
        if spec is not None:
            found.append(spec)
    return sorted(found, key=lambda s: s.created or 0, reverse=True)


def file_state(spec: BatchSpec, result: dict[str, Any] | None, running: bool) -> str:
    """queued, running, committed, unchanged, failed, cancelled; under review: staged, kept, discarded."""
    if result is None or result.get("task_sha256") != spec.task_sha256(result.get("file", "")):
        return "running" if running else "queued"
    if result.get("cancelled"):
        return "cancelled"
    state = outcome(result)
    if state == "committed" and spec.review:
        decision = (result.get("review") or {}).get("decision")
        return {"keep": "kept", "discard": "discarded"}.get(decision or "", "staged")
    return state


def progress(spec: BatchSpec, running: list[str]) -> dict[str, Any]:
    busy = set(running)
    states = [file_state(spec, read_result(spec, p), p in busy) for p in spec.files]
    counts = {s: states.count(s) for s in set(states)}
    done = sum(v for k, v in counts.items() if k not in ("queued", "running", "failed", "cancelled"))
    failed = counts.get("failed", 0) + counts.get("cancelled", 0)
    return {"total": len(spec.files), "done": done, "failed": failed, "running": counts.get("running", 0),
            "left": counts.get("queued", 0), "awaiting_review": counts.get("staged", 0), "states": counts,
            "finished": counts.get("queued", 0) + counts.get("running", 0) == 0,
            "cancelled": is_cancelled(spec)}


# --- review under `ask` ----------------------------------------------------------------------------------

_decide_lock = threading.Lock()


@contextmanager
def _decision_lock(spec: BatchSpec) -> Iterator[None]:
    """One decision at a time per batch, across threads and across server processes sharing the folder."""
    path = state_path(spec.state_dir, "review.lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    with _decide_lock, path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def decide(spec: BatchSpec, relative: str, decision: str, by: str) -> dict[str, Any]:
    """Keep (move the staged result into the out folder) or discard (delete it) one file's result."""
    if not spec.review:
        raise BatchError("this batch was not started under `ask`: its results were written directly")
    if decision not in ("keep", "discard"):
        raise BatchError("decision: expected 'keep' or 'discard'")
    path = next((p for p in spec.files if spec.relative(p) == relative), None)
    if path is None:
        raise BatchError(f"file: {relative!r} is not a file of this batch")
    with _decision_lock(spec):
        result = read_result(spec, path)
        if result is None or file_state(spec, result, False) != "staged":
            state = file_state(spec, result, False)
            raise DecisionConflict(f"{relative} is {state}: only a staged result can be kept or discarded")
        staged = (result.get("review") or {}).get("staged") or spec.staged_for(path)
        record = {"decision": decision, "by": by, "at": time.time()}
        if decision == "keep":
            target = spec.output_for(path)
            _move(staged, target)
            result["output"] = target
        else:
            Path(staged).unlink(missing_ok=True)
            result["output"] = None
        result["review"] = {**(result.get("review") or {}), **record}
        save_result(spec, path, result)
    log_event(spec, decision, by, file=relative)
    return result


class DecisionConflict(BatchError):
    """The file's result is not waiting for a decision."""


def _move(source: str, target: str) -> None:
    """Into place atomically: a copy beside the target, renamed over it, then the staged copy removed."""
    Path(target).parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=os.path.basename(target) + ".", suffix=".partial", dir=os.path.dirname(target))
    os.close(fd)
    try:
        shutil.copyfile(source, temp)
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    Path(source).unlink(missing_ok=True)
