"""The person's copy of a tool result: defined once here, pinned by shared_contract/tool_result.json.

It is what the `tool_result` Metadata chunk carries and what GET /results/<tool_call_id> returns. The
model's copy is a different, capped text (see render.py).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class ImageMeta:
    image_id: str
    width: int
    height: int
    view: str
    undrawn: int | None = None  # elements of the view that could not be drawn (None: the host does not count)


@dataclass(frozen=True)
class ToolResult:
    """Every tool's result: a lookup, a capture, a refusal, or the envelope of a script run."""
    tool_call_id: str
    name: str
    ok: bool
    summary: str  # the model's copy, shown to the person as the result's text
    image: ImageMeta | dict[str, str] | None = None  # a capture; {"error": ...} when it failed

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        if data["image"] is None:
            del data["image"]
        return data


@dataclass(frozen=True)
class ScriptResult(ToolResult):
    """A script run (execute_data_collection / execute_task_automation), in full: the whole output."""
    mode: str = "collect"  # "collect" or "automate"
    committed: bool = False
    stdout: str = ""
    stdout_truncated: bool = False  # the host cut the output at its own cap
    error: dict[str, Any] | None = None
    failures: list[dict[str, Any]] = field(default_factory=list)
    changes: dict[str, list[int]] | None = None
    change_report: str | None = None
    duration_ms: float | None = None
    timed_out: bool = False
    notes: list[str] = field(default_factory=list)
    directives: dict[str, Any] = field(default_factory=dict)
    decision: dict[str, Any] | None = None
    external_changes: dict[str, Any] | None = None
    blocked: list[str] = field(default_factory=list)
    dialogs: list[dict[str, Any]] = field(default_factory=list)
    change_details: dict[str, Any] | None = None  # before → after (IFC host: ifc_host/change_details.py)
    validation: dict[str, Any] | None = None  # findings the script introduced (IFC host: ifc_host/validation.py)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)  # every key present, null when empty: the page reads them by name
