"""One file of a batch: its own IFC host process and session, the task run once (a reviewed script as an
automation, or the agent on the prompt), and the written result moved into place only when committed.

The host writes its commit to a temporary file beside the output; a file that fails (bad file, failing
script, validation block, no commit) leaves no output and its input untouched. A file the task changed
nothing in is "unchanged": the host writes nothing for a commit that changed nothing (it compares the model
the script wrote with the file, entity by entity), so no output is written for it either.
"""
from __future__ import annotations

import json
import os
import threading
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

from cloud.batch.findings import check_file
from cloud.batch.jobs import BatchSpec, already_done, is_cancelled, save_result, sha256_file
from cloud.store import Store

AUTOMATION = "execute_task_automation"
COLLECTION = "execute_data_collection"
BATCH_USER_PREFIX = "batch-"


def process_file(spec: BatchSpec, path: str, store: Store, worker: str = "embedded") -> dict[str, Any]:
    """Process one file (unless already done with the same input and task) and record its result."""
    started = time.monotonic()
    try:
        input_sha = sha256_file(path)
    except OSError as exc:
        return _finish(spec, path, _failed(path, f"cannot read the file: {exc}"), started, worker)
    task_sha = spec.task_sha256(path)
    done = already_done(spec, path, input_sha, task_sha)
    if done is not None:
        return {**done, "skipped": True}
    base = {"input_sha256": input_sha, "task_sha256": task_sha}
    if is_cancelled(spec.state_dir):  # cancelled before this file started: recorded, never run
        return _finish(spec, path, {**base, **_failed(path, "cancelled", cancelled=True)}, started, worker)
    try:
        result = check_file(spec, path, _run(spec, path, store), store)
    except Exception as exc:  # one file's crash is that file's failure; the batch goes on
        result = _failed(path, f"{type(exc).__name__}: {exc}", detail=traceback.format_exc(limit=5))
    return _finish(spec, path, {**base, **result}, started, worker)


def _failed(path: str, error: str, **extra: Any) -> dict[str, Any]:
    return {"file": path, "ok": False, "committed": False, "changes": {}, "error": error, **extra}


def _finish(spec: BatchSpec, path: str, result: dict[str, Any], started: float, worker: str) -> dict[str, Any]:
    result.update(file=path, relative=spec.relative(path), seconds=round(time.monotonic() - started, 3),
                  worker=worker, finished_at=time.time())
    save_result(spec, path, result)
    return result


def _run(spec: BatchSpec, path: str, store: Store) -> dict[str, Any]:
    from cloud.child_host import HostStartFailed
    from cloud.embedded import EmbeddedCore

    if spec.skill is not None:  # its sha256, host app and arguments, before the file is touched
        from cloud.skills.batch import refusal
        from ifc_host.protocol import HOST_APP

        refused = refusal(store, spec.skill, spec.script, HOST_APP)
        if refused:
            return _failed(path, refused)
    output = spec.staged_for(path) if spec.review else spec.output_for(path)
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    temp = f"{output}.{os.getpid()}.{threading.get_ident()}.partial"
    user = f"{BATCH_USER_PREFIX}{spec.batch_id}-{os.getpid()}-{threading.get_ident() % 10**8}"
    try:
        try:
            core = EmbeddedCore(store, path, temp, user=user)
        except HostStartFailed as exc:  # the host reads the file: one it cannot open fails with the host's reason
            return _failed(path, exc.reason or str(exc))
        try:
            outcome = _drive(spec, path, core)
            if outcome["committed"]:
                if not os.path.exists(temp):
                    if not any(outcome.get("changes", {}).values()):  # committed, and nothing changed
                        return {**outcome, "committed": False, "unchanged": True}
                    return {**outcome, "ok": False, "committed": False, "error": "the host wrote no output"}
                outcome["output_sha256"] = sha256_file(temp)
                os.replace(temp, output)
                outcome["output"] = output
                if spec.review:
                    outcome["review"] = {"decision": None, "staged": output}
            return outcome
        finally:
            _close_later(core)
    finally:
        Path(temp).unlink(missing_ok=True)


_closing: list[threading.Thread] = []
_closing_lock = threading.Lock()


def _close_later(core: Any) -> None:
    """Stop the file's host in the background: its output is already in place, and the next file need not
    wait for a process to wind down (wait_for_hosts() before exiting)."""
    thread = threading.Thread(target=core.close, name="nexus-batch-close", daemon=True)
    thread.start()
    with _closing_lock:
        _closing[:] = [t for t in _closing if t.is_alive()] + [thread]


def wait_for_hosts() -> None:
    with _closing_lock:
        threads = list(_closing)
    for thread in threads:
        thread.join()


def _drive(spec: BatchSpec, path: str, core: Any) -> dict[str, Any]:
    row = core.new_session(spec.model_for(path) or "batch:script", policy=spec.policy)
    core.store.sessions.update_session(row["id"], validation=spec.validation, ids=spec.ids)  # the host checks the IDS
    if spec.rules:
        core.store.sessions.update_session(row["id"], rules=json.dumps(spec.rules))
    results: list[dict[str, Any]] = []
    if spec.script is not None:
        chunks = _script_chunks(spec, core, row)
        final_error = None
    else:
        from cloud.vendors.registry import create_model

        chunks = core.run(row, create_model(spec.model_for(path) or ""), spec.prompt or "")
        final_error = "the run did not complete"
    for chunk in chunks:
        meta = chunk.metadata or {}
        if chunk.type == "Metadata" and meta.get("kind") == "tool_result" and meta.get("mode"):
            results.append(meta)
        elif chunk.type == "Complete":
            final_error = None
        elif chunk.type == "Error":
            final_error = chunk.content or "the run failed"
    return summarise(path, row["id"], results, final_error, readonly=spec.policy == "readonly")


def _script_chunks(spec: BatchSpec, core: Any, row: dict[str, Any]) -> Any:
    """The reviewed script through the same tool path as the agent's own automations (audit, epilogue,
    change report, validation), with no model in the loop."""
    from cloud.tools.dispatch import execute_tool
    from cloud.tools.opening import open_tool_context
    from cloud.vendors.images import vision_limits

    ctx = open_tool_context(core.store, core.settings, core.store.sessions.get_session(row["id"]) or row, core.link(row),
                            image_max_px=800, image_fit=vision_limits("scripted", "batch").fit)
    call_id = f"batch_{spec.batch_id}"
    if spec.skill is not None:  # the skill's run: run_skill's tool path, counted in its statistics
        from cloud.skills.batch import verified_for_run
        from cloud.tools.skills import run_skill_as_automation

        if ctx.host is None or not ctx.host.connected():
            raise RuntimeError("the file's IFC host is not connected")
        skill, code = verified_for_run(ctx.store, spec.skill, ctx.host.host_app)
        call = {"id": call_id, "name": "run_skill",
                "input": {"name": spec.skill["name"], "version": spec.skill["version"], "args": spec.skill["args"]}}
        yield from run_skill_as_automation(ctx, call, skill, code, spec.skill["user"])
        return
    name = COLLECTION if spec.policy == "readonly" else AUTOMATION
    yield from execute_tool(ctx, {"id": call_id, "name": name, "input": {"code": spec.script}})


def summarise(path: str, session_id: str, results: list[dict[str, Any]], error: str | None,
              readonly: bool) -> dict[str, Any]:
    """One file's outcome from its tool results: committed when an automation committed; failed when the
    last automation did not (or the run itself failed)."""
    automations = [r for r in results if r.get("mode") == "automate"]
    committed = any(r.get("committed") for r in automations)
    counts: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    details: list[dict[str, Any]] = []
    findings: list[dict[str, Any]] = []
    for r in automations:
        if r.get("committed"):
            counts.update(_change_counts(r.get("changes")))
            detail = r.get("change_details")
            if isinstance(detail, dict):
                details.append(detail)
                for group in detail.get("groups", []):
                    kinds.update({"+".join(group.get("kinds", [])) or "other": int(group.get("count", 0))})
        findings.extend(_findings(r.get("validation")))
    last = (automations or results or [{}])[-1]
    error_detail = None
    if error is None and results and not last.get("ok", True):
        error, error_detail = _error_text(last.get("error")) or last.get("content") or "the script failed", last.get("error")
    if error is None and automations and not automations[-1].get("committed") and not readonly:
        blocked = automations[-1].get("validation") or {}
        error = "validation blocked the change" if blocked.get("blocked") else "the change was not committed"
    if error is None and not results:
        error = "nothing was run on the model"
    checked = [v["ids"] for r in automations if isinstance(v := r.get("validation"), dict) and isinstance(v.get("ids"), dict)]
    return {"file": path, "session_id": session_id, "ok": error is None, "committed": committed and error is None,
            "ids": checked[-1] if checked else None,  # the IDS check of the last automation: specifications, introduced
            "changes": dict(counts), "change_kinds": dict(kinds), "change_details": details, "validation": findings, "error": error,
            "error_detail": error_detail, "stdout": "\n".join(r.get("stdout", "") for r in results if r.get("stdout"))[-4000:]}


def _error_text(error: Any) -> str | None:
    """The host's structured script error as one line (the traceback stays in `error_detail`)."""
    if isinstance(error, dict):
        line = f" (line {error['line']})" if error.get("line") else ""
        return f"{error.get('type') or 'Error'}: {error.get('message') or ''}{line}"
    return str(error) if error else None


def _change_counts(changes: Any) -> dict[str, int]:
    """Counts by kind (added, modified, deleted, ...) from the host's change report."""
    if not isinstance(changes, dict):
        return {}
    counts: dict[str, int] = {}
    for kind, value in changes.items():
        if isinstance(value, int) and not isinstance(value, bool):
            counts[kind] = value
        elif isinstance(value, list):
            counts[kind] = len(value)
    return counts


def _findings(validation: Any) -> list[dict[str, Any]]:
    if not isinstance(validation, dict):
        return []
    return [f for f in validation.get("findings", []) if isinstance(f, dict)]
