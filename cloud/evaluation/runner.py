"""Running tasks: each on a fresh copy of its IFC file, through the real IFC host (its own process) and the
real loop (in this process), then its checker on the model before and as written after.

Outcome of a task run: "pass", "fail" (the checker said no, or raised, or the model never finished) or "error"
(the harness could not get an answer: the host crashed or would not start, the vendor failed, the script for
a scripted model is missing). Errors say nothing about the model's skill and are counted apart.
"""
from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cloud.evaluation.checker_loader import run_checker
from cloud.evaluation.tasks import Task

EVAL_USER = "eval"
SCRIPTED_PREFIX = "scripted:"


@dataclass
class TaskRun:
    task: str
    model: str
    repeat: int
    status: str  # pass | fail | error
    detail: str
    tags: list[str] = field(default_factory=list)
    answer: str = ""
    turns: int = 0
    tool_calls: int = 0
    fixes: int = 0
    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    seconds: float = 0.0
    loop_seconds: float = 0.0
    host_seconds: float = 0.0  # starting and stopping the IFC host
    check_seconds: float = 0.0  # opening the model before and after, and the checker
    transcript: list[dict[str, Any]] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data.pop("transcript")
        return {"task": self.task, "model": self.model, "passed": self.passed, **data,
                "cost": round(self.cost, 6), "seconds": round(self.seconds, 3),
                "loop_seconds": round(self.loop_seconds, 3), "host_seconds": round(self.host_seconds, 3),
                "check_seconds": round(self.check_seconds, 3)}


def model_for(spec: str, task: Task) -> Any:
    """A fresh model adapter for one task run; `scripted:DIR` plays DIR/<task id>.json."""
    from cloud.vendors.registry import allow_on_command_line, create_model
    from cloud.vendors.scripted import ScriptedModel

    if spec.startswith(SCRIPTED_PREFIX) and Path(spec[len(SCRIPTED_PREFIX):]).is_dir():
        return ScriptedModel(str(Path(spec[len(SCRIPTED_PREFIX):]) / f"{task.id}.json"))
    allow_on_command_line(spec)
    return create_model(spec)


def _measure(chunks: Iterable[Any], run: TaskRun) -> tuple[str | None, str | None, str | None]:
    """Fold the run's stream into `run`'s counters; (final answer, harness error, why the model stopped short).

    An Error chunk from a vendor (it names one) is a harness error; the turn limit is the model's failure."""
    answer, error, short = None, None, None
    for chunk in chunks:
        if chunk.type == "ToolCall":
            run.tool_calls += 1
        elif chunk.type == "Metadata" and (chunk.metadata or {}).get("kind") == "tool_result":
            if not chunk.metadata.get("ok", True):
                run.fixes += 1
        elif chunk.type == "AgenticUsage":
            usage = chunk.metadata or {}
            run.input_tokens += int(usage.get("uncached_input", 0)) + int(usage.get("cache_read", 0)) \
                + int(usage.get("cache_write", 0))
            run.cached_tokens += int(usage.get("cache_read", 0))
            run.output_tokens += int(usage.get("output", 0))
            run.cost += float(usage.get("cost") or 0.0)
        elif chunk.type == "Complete":
            answer = chunk.content or ""
        elif chunk.type == "Error":
            meta = chunk.metadata or {}
            if meta.get("vendor"):
                error = f"vendor error ({meta['vendor']}): {chunk.content}"
            elif meta.get("cancelled"):
                error = f"cancelled: {chunk.content}"
            else:
                short = chunk.content or "the run stopped"
    return answer, error, short


def run_task(task: Task, spec: str, repeat: int = 1, isolation: str | None = None,
             model_factory: Callable[[str, Task], Any] = model_for,
             stop: threading.Event | None = None) -> TaskRun:
    """One task run, never raising for the task's own trouble (see the module docstring). Setting `stop`
    cancels the run (it ends as an ERROR: it says nothing about the model)."""
    import ifcopenshell

    from cloud.child_host import HostStartFailed
    from cloud.config import Settings
    from cloud.embedded import EmbeddedCore
    from cloud.store import Store
    from cloud.vendors.base import ModelError
    from cloud.vendors.registry import ModelSpecError

    started = time.perf_counter()
    run = TaskRun(task=task.id, model=spec, repeat=repeat, status="error", detail="", tags=list(task.tags))
    with tempfile.TemporaryDirectory(prefix=f"nexus-eval-{task.id}-") as folder:
        work = Path(folder)
        before_path, model_path, after_path = work / "before.ifc", work / "model.ifc", work / "after.ifc"
        shutil.copyfile(task.model, before_path)
        shutil.copyfile(task.model, model_path)
        try:
            model = model_factory(spec, task)
        except (ModelSpecError, ModelError, ValueError) as exc:
            run.detail = f"model: {exc}"
            run.seconds = time.perf_counter() - started
            return run
        settings = Settings(**({"max_turns": task.max_turns} if task.max_turns else {}))
        store = Store(work / "eval.db")
        host_started = time.perf_counter()
        try:
            core = EmbeddedCore(store, str(model_path), str(after_path), settings=settings, user=EVAL_USER,
                                isolation=isolation)
        except HostStartFailed as exc:
            run.host_seconds = time.perf_counter() - host_started
            run.detail = f"host: {exc}"
            run.seconds = time.perf_counter() - started
            return run
        run.host_seconds = time.perf_counter() - host_started
        try:
            row = core.new_session(model.spec, policy=task.policy)
            loop_started = time.perf_counter()
            try:
                answer, error, short = _measure(core.run(row, model, task.prompt, stop), run)
            except Exception as exc:  # the loop itself broke: the harness reports it, the next task runs
                answer, error, short = None, f"run crashed: {type(exc).__name__}: {exc}", None
            run.loop_seconds = time.perf_counter() - loop_started
            run.transcript = store.sessions.transcript(row["id"])
            run.turns = sum(1 for entry in run.transcript if entry.get("role") == "assistant")
            host_alive = core.host is not None and core.host.alive()
            host_log = core.host.log_tail() if core.host is not None and not host_alive else ""
        finally:
            stopping = time.perf_counter()
            core.close()
            run.host_seconds += time.perf_counter() - stopping
        if not host_alive:
            run.detail = "the IFC host stopped during the run" + (f":\n{host_log}" if host_log else "")
        elif error:
            run.detail = error
        elif short:
            run.status, run.detail = "fail", short
        elif answer is None:
            run.detail = "the run ended without an answer"
        else:
            run.answer = answer
            checking = time.perf_counter()
            try:
                before = ifcopenshell.open(str(before_path))
                after = ifcopenshell.open(str(after_path if after_path.exists() else before_path))
            except Exception as exc:
                run.status, run.detail = "fail", f"the model as written cannot be opened: {exc}"
            else:
                passed, run.detail = run_checker(task.check, before, after, answer)
                run.status = "pass" if passed else "fail"
            run.check_seconds = time.perf_counter() - checking
    run.seconds = time.perf_counter() - started
    return run


def run_all(tasks: list[Task], specs: list[str], repeat: int = 1, parallel: int = 1,
            on_result: Callable[[TaskRun], None] | None = None, isolation: str | None = None,
            model_factory: Callable[[str, Task], Any] = model_for) -> list[TaskRun]:
    """Every (model, task, repeat), `parallel` at a time; results in a fixed order whatever finished first."""
    jobs = [(spec, task, n) for spec in specs for task in tasks for n in range(1, repeat + 1)]
    results: list[TaskRun] = []
    lock = threading.Lock()
    stop = threading.Event()

    def one(job: tuple[str, Task, int]) -> TaskRun | None:
        if stop.is_set():
            return None
        spec, task, n = job
        result = run_task(task, spec, n, isolation=isolation, model_factory=model_factory, stop=stop)
        with lock:
            results.append(result)
            if on_result is not None:
                on_result(result)
        return result

    pool = ThreadPoolExecutor(max_workers=max(1, parallel), thread_name_prefix="nexus-eval")
    try:
        for future in as_completed([pool.submit(one, job) for job in jobs]):
            future.result()
    except KeyboardInterrupt:  # cancel the runs under way (their hosts stop), start no other, keep what finished
        stop.set()
        pool.shutdown(wait=True, cancel_futures=True)
        raise Interrupted(_ordered(results, jobs)) from None
    pool.shutdown(wait=True)
    return _ordered(results, jobs)


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during run_all: `results` holds the runs that ended (cancelled ones as ERROR)."""

    def __init__(self, results: list[TaskRun]) -> None:
        super().__init__("interrupted")
        self.results = results


def _ordered(results: list[TaskRun], jobs: list[tuple[str, Task, int]]) -> list[TaskRun]:
    order = {(spec, task.id, n): i for i, (spec, task, n) in enumerate(jobs)}
    return sorted(results, key=lambda r: order[(r.model, r.task, r.repeat)])


def summarise(results: list[TaskRun]) -> dict[str, Any]:
    def block(rows: list[TaskRun]) -> dict[str, Any]:
        counted = [r for r in rows if r.status != "error"]
        return {"runs": len(rows), "passed": sum(r.passed for r in rows),
                "failed": sum(r.status == "fail" for r in rows), "errors": sum(r.status == "error" for r in rows),
                "pass_rate": round(sum(r.passed for r in counted) / len(counted), 4) if counted else None,
                "input_tokens": sum(r.input_tokens for r in rows),
                "cached_tokens": sum(r.cached_tokens for r in rows),
                "output_tokens": sum(r.output_tokens for r in rows),
                "cost": round(sum(r.cost for r in rows), 6), "seconds": round(sum(r.seconds for r in rows), 3)}

    models = list(dict.fromkeys(r.model for r in results))
    return {"summary": True, **block(results),
            "models": {m: block([r for r in results if r.model == m]) for m in models}}


def write_transcript(run: TaskRun, folder: Path) -> Path:
    path = folder / transcript_name(run)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"task": run.task, "model": run.model, "repeat": run.repeat, "status": run.status,
                                "detail": run.detail, "transcript": run.transcript}, indent=1))
    return path


def transcript_name(run: TaskRun) -> str:
    slug = "".join(c if c.isalnum() or c in "-_." else "_" for c in run.model)[:80]
    return f"transcripts/{slug}/{run.task}-{run.repeat}.json"
