"""`run_task` and `get_run`: NexusAI's own loop does a whole task, in a store session of its own.

The handle is that session's id, so `get_run` still answers from the store (status, final answer) after the
process that drove the run has gone; while the run is driven here, it also reports its steps as they come.
The run goes through the deployment's run registry like a chat-page run: it holds the session's lease, is
listed among the runs in progress (and counts towards the user's concurrent runs), and can be cancelled
or followed from the chat page.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from cloud.assembly import run_session
from cloud.chunks import Chunk
from cloud.hostlink import session_link
from cloud.mcp.calls import Backend
from cloud.mcp.wording import say
from cloud.session_refs import save_refs
from cloud.vendors.base import ModelAdapter

RELEASE_WAIT_S = 5.0
TURN_SEPARATOR = "\n\n"  # between the model's texts of two turns (a tool call came between them)


@dataclass
class DelegatedRun:
    handle: str
    user: str
    steps: list[str] = field(default_factory=list)  # one line per tool call or message, for progress
    answer: list[str] = field(default_factory=list)  # the model's text, in pieces
    turn_ended: bool = False  # a tool call since the last text: the next text starts a new turn
    results: list[dict[str, Any]] = field(default_factory=list)  # the person's tool results
    approvals: list[tuple[str, str]] = field(default_factory=list)  # (tool_call_id, summary) held for review
    error: str | None = None
    status: str = "running"  # running | complete | error | cancelled
    done: threading.Event = field(default_factory=threading.Event)
    changed: threading.Condition = field(default_factory=threading.Condition)

    def summary(self) -> dict[str, Any]:
        return {"handle": self.handle, "status": self.status, "steps": list(self.steps),
                "answer": "".join(self.answer).strip(), "error": self.error,
                "committed": [r["tool_call_id"] for r in self.results if r.get("committed")],
                "results": list(self.results)}


class DelegatedRuns:
    def __init__(self, backend: Backend, policy: str | None = None, refs: list[dict[str, str]] | None = None) -> None:
        self.backend, self.policy, self.refs = backend, policy, refs or []
        self._lock = threading.Lock()
        self._runs: dict[str, DelegatedRun] = {}

    def start(self, user: str, host_id: str, model: ModelAdapter, prompt: str) -> DelegatedRun:
        store = self.backend.store
        session_id = store.sessions.create_session(user, host_id, model.spec, {})
        if self.policy:
            store.sessions.update_session(session_id, policy=self.policy)
        if self.refs:
            save_refs(store, session_id, self.refs)
        row = store.sessions.get_session(session_id)
        assert row is not None
        run = DelegatedRun(session_id, user)
        with self._lock:
            self._runs[session_id] = run
        link = session_link(self.backend.hosts, self.backend.channel, row)
        started = self.backend.runs.start(session_id, lambda registered: self._observe(
            run, run_session(store, self.backend.settings, model, link, row, prompt, registered.cancel,
                        owner=registered.owner)))
        if started is None:  # a fresh session: only a store that refuses its lease gets here
            run.error, run.status = say("run_not_started"), "error"
            self._end(run)
        return run

    def _observe(self, run: DelegatedRun, chunks: Iterator[Chunk]) -> Iterator[Chunk]:
        """The run's chunks, passed on to the registry (the chat page's stream) and noted here for MCP."""
        try:
            for chunk in chunks:
                self._note(run, chunk)
                yield chunk
        except Exception as exc:  # the registry reports it on the run's stream; here, on the run
            run.error, run.status = f"{type(exc).__name__}: {exc}", "error"
            raise
        finally:
            self._end(run)

    @staticmethod
    def _note(run: DelegatedRun, chunk: Chunk) -> None:
        data = chunk.metadata or {}
        with run.changed:
            if chunk.type == "Message":
                if run.turn_ended and "".join(run.answer).strip():
                    run.answer.append(TURN_SEPARATOR)
                run.turn_ended = False
                run.answer.append(chunk.content)
            elif chunk.type == "ToolCall":
                run.turn_ended = True
                run.steps.append(f"tool call: {data.get('name') or chunk.content}")
            elif chunk.type == "Metadata" and data.get("kind") == "tool_result":
                run.results.append({k: v for k, v in data.items() if k != "kind"})
                run.steps.append(f"{data.get('name')}: {'ok' if data.get('ok') else 'failed'}"
                                 + (", committed" if data.get("committed") else ""))
            elif chunk.type == "Metadata" and data.get("kind") == "approval_request":
                run.steps.append("awaiting Keep/Discard")
                run.approvals.append((data.get("tool_call_id", ""), chunk.content))
            elif chunk.type == "Error":
                run.error = chunk.content
                run.status = "cancelled" if data.get("cancelled") else "error"
            elif chunk.type == "Complete":
                run.status = "complete"
            run.changed.notify_all()

    @staticmethod
    def _end(run: DelegatedRun) -> None:
        with run.changed:
            if run.status == "running":  # ended without Complete or Error (cancelled from outside, a crash)
                run.status = "error"
            run.done.set()
            run.changed.notify_all()

    def released(self, run: DelegatedRun, timeout_s: float = RELEASE_WAIT_S) -> None:
        """Once an ended run has left the run registry (a moment after its last chunk), so the user's next
        run is not counted as concurrent with it."""
        stop = threading.Event()
        deadline = timeout_s
        while self.backend.runs.get(run.handle) is not None and deadline > 0:
            stop.wait(0.01)
            deadline -= 0.01

    def get(self, user: str, handle: str) -> DelegatedRun | dict[str, Any] | None:
        """The run driven here, or what the store knows of one driven elsewhere; None if not the user's."""
        with self._lock:
            run = self._runs.get(handle)
        if run is not None:
            return run if run.user == user else None
        row = self.backend.store.sessions.get_session(handle)
        if row is None or row["user_name"] != user or row["model"] is None or row["model"].startswith("mcp:"):
            return None
        return self._from_store(handle, row)

    def _from_store(self, handle: str, row: dict[str, Any]) -> dict[str, Any]:
        """A run driven by an earlier process (or another instance), rebuilt from its session's transcript:
        the model's texts of every turn since the task was given, a step per tool call and result, the
        person's results the store kept, and how the run ended."""
        store = self.backend.store
        transcript = store.sessions.transcript(handle)
        start = max((i for i, e in enumerate(transcript) if e.get("role") == "user"
                     and any(p.get("type") == "text" and not p.get("kind") for p in e.get("content", []))), default=-1)
        texts: list[str] = []
        steps: list[str] = []
        results: list[dict[str, Any]] = []
        ended: dict[str, Any] | None = None
        for entry in transcript[start + 1:]:
            role = entry.get("role")
            if role == "assistant":
                text = "".join(p.get("text", "") for p in entry.get("content", []) if p.get("type") == "text").strip()
                if text:
                    texts.append(text)
                steps += [f"tool call: {p.get('name')}" for p in entry.get("content", []) if p.get("type") == "tool_call"]
            elif role == "tool":
                for part in entry.get("content", []):
                    if part.get("type") != "tool_result":
                        continue
                    person = store.results.get_result(handle, part.get("tool_call_id", "")) or {
                        "tool_call_id": part.get("tool_call_id"), "name": part.get("name"), "ok": not part.get("is_error")}
                    results.append(person)
                    steps.append(f"{person.get('name')}: {'ok' if person.get('ok') else 'failed'}"
                                 + (", committed" if person.get("committed") else ""))
            elif role == "run_end":
                ended = entry
        if ended is not None:
            status = {"complete": "complete", "cancelled": "cancelled"}.get(ended.get("outcome", ""), "error")
        else:
            status = {"idle": "complete", "running": "running"}.get(row["status"], row["status"])
        error = ended.get("text") if ended is not None and status != "complete" else None
        return {"handle": handle, "status": status, "steps": steps, "answer": TURN_SEPARATOR.join(texts),
                "error": error or None, "committed": [r["tool_call_id"] for r in results if r.get("committed")],
                "results": results}
