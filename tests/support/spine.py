"""Shorthands for the spine's tests: scripted turns, transcript checks, waiting on a run."""
from __future__ import annotations

import threading
import time
from typing import Any

from tests.support.client import Client, Frame, Stream
from tests.support.waiting import wait_until


def collect(code: str, text: str | None = None) -> list[dict[str, Any]]:
    """A scripted turn that calls execute_data_collection."""
    head = [{"text": text}] if text else []
    return [*head, {"tool_call": {"name": "execute_data_collection", "input": {"code": code}}}]


def automate(code: str, text: str | None = None) -> list[dict[str, Any]]:
    head = [{"text": text}] if text else []
    return [*head, {"tool_call": {"name": "execute_task_automation", "input": {"code": code}}}]


def edit(*edits: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"tool_call": {"name": "execute_task_automation", "input": {"edits": list(edits)}}}]


def say(text: str) -> list[dict[str, Any]]:
    return [{"text": text}]


def session(client: Client, session_id: str) -> dict[str, Any]:
    response = client.call("GET", f"/api/sessions/{session_id}")
    assert response.status_code == 200, response.text
    return response.json()


def tool_result_texts(messages: list[dict[str, Any]]) -> list[str]:
    """The text the model received for each tool result, in order."""
    return [part["content"][0]["text"] for entry in messages if entry["role"] == "tool" for part in entry["content"]]


def assert_transcript_valid(messages: list[dict[str, Any]]) -> None:
    """Every tool call is answered by exactly one tool result in the entry right after it."""
    for i, entry in enumerate(messages):
        calls = [p["id"] for p in entry.get("content", []) if p.get("type") == "tool_call"]
        if not calls:
            continue
        assert i + 1 < len(messages) and messages[i + 1]["role"] == "tool", f"entry {i}: tool calls left unanswered"
        answered = [p["tool_call_id"] for p in messages[i + 1]["content"]]
        assert answered == calls, f"entry {i}: calls {calls} answered by {answered}"




def run_to_tool_call(client: Client, host_id: str | None, spec: str,
                     text: str = "go") -> tuple[str, BackgroundRun, str]:
    """A new session whose run, streamed on a thread, has reached its first tool call:
    (session id, the run, that call's id)."""
    session_id = client.new_session(host_id, spec)
    run = BackgroundRun(client, session_id, text)
    return session_id, run, run.wait_for("ToolCall")["metadata"]["tool_call_id"]


def received_execute(host: Any) -> dict[str, Any]:
    """The one `execute` command a test host has received, once it has arrived."""
    wait_until(lambda: any(m["type"] == "execute" for m in host.received))
    (execute,) = [m for m in host.received if m["type"] == "execute"]
    return execute


def start_and_hang_up(client: Client, session_id: str, text: str = "go") -> None:
    """Start a run and stop listening once its first tool call has streamed: the run goes on unwatched."""
    response = client.call("POST", f"/api/sessions/{session_id}/messages", json={"text": text}, stream=True)
    for line in response.iter_lines(decode_unicode=True):
        if line == "event: ToolCall":
            break
    response.close()


def tool_call_ids(stream: Stream) -> list[str]:
    return [c["metadata"]["tool_call_id"] for c in stream.of("ToolCall")]


class BackgroundRun:
    """A run streamed on a thread, so a test can act while the loop is suspended."""

    def __init__(self, client: Client, session_id: str, text: str, model: str | None = None):
        self.frames: list[Frame] = []
        self.stream: Stream | None = None
        self.error: BaseException | None = None
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._run, args=(client, session_id, text, model), daemon=True)
        self._thread.start()

    def _on_frame(self, frame: Frame) -> None:
        with self._changed:
            self.frames.append(frame)
            self._changed.notify_all()

    def _run(self, client: Client, session_id: str, text: str, model: str | None) -> None:
        try:
            self.stream = client.run(session_id, text, model, on_frame=self._on_frame)
        except BaseException as exc:  # surfaced by join()
            self.error = exc
        finally:
            with self._changed:
                self._changed.notify_all()

    def wait_for(self, kind: str, timeout: float = 10) -> dict[str, Any]:
        """The first chunk of this type (waiting for it if need be)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = next((f.chunk for f in self.frames if f.chunk and f.chunk["type"] == kind), None)
                if found is not None:
                    return found
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._thread.is_alive():
                    raise TimeoutError(f"no {kind} chunk within {timeout} s (error: {self.error})")
                self._changed.wait(remaining)

    def join(self, timeout: float = 30) -> Stream:
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError(f"the run did not finish within {timeout} s")
        if self.error:
            raise self.error
        assert self.stream is not None
        return self.stream
