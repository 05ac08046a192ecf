"""The person's copy of a tool result: defined once here, pinned by shared_contract/tool_result.json.

It is what the `tool_result` Metadata chunk carries and what GET /results/<tool_call_id> returns. The
model's copy is a different, capped text (see render.py). A refusal, a spent budget or a lost answer also
carries `person`: what the person reads in plain words (cloud/prompts/person_messages.json) with a
status word for the card's pill; the model's words, instructions included, stay in `summary`.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields
from functools import cache
from typing import Any

from cloud.prompts import person_entry, person_message, template

_PLACEHOLDER = re.compile(r"\{(\w+)(?:[:!][^}]*)?\}")


@cache
def _pattern(key: str) -> re.Pattern[str]:
    """The model's message `key` as a pattern whose groups capture its placeholders' values."""
    words, out, at, seen = template(key), [], 0, set()
    for match in _PLACEHOLDER.finditer(words):
        out.append(re.escape(words[at:match.start()]))
        name = match.group(1)
        out.append(f"(?P={name})" if name in seen else f"(?P<{name}>.*?)")
        seen.add(name)
        at = match.end()
    out.append(re.escape(words[at:]))
    return re.compile("".join(out), re.DOTALL)


PERSON_KEYS = ("fix_cap", "iteration_cap", "readonly", "ask_without_hold", "no_host", "host_unavailable",
               "no_script_to_edit", "invalid_input", "invalid_json", "call_cancelled", "no_result", "host_gone",
               "call_cancelled_in_flight", "unexpected_reply", "tool_crashed", "server_restarted")

MARKED = {"fix_cap": "budget_fix_cap", "iteration_cap": "budget_iteration_cap"}


def person_copy(model_text: str) -> dict[str, str] | None:
    """The person's words for a text-only result the model was given, recognised by its message key:
    {key, text, status}; None when the text is none of those messages (then it is plain enough as it is)."""
    for key in PERSON_KEYS:
        entry = person_entry(key)
        match = _pattern(key).fullmatch(model_text.strip())
        if entry is not None and match is not None:
            person = {"key": key, "text": person_message(key, **match.groupdict()), "status": entry.get("status", "")}
            if key in MARKED:  # the run's marker (a Metadata `budget` chunk live), restored with the result
                person["marker"] = person_message(MARKED[key], **match.groupdict())
            return person
    return None


@dataclass(frozen=True)
class ImageMeta:
    image_id: str
    width: int
    height: int
    view: str
    undrawn: int | None = None  # elements of the view that could not be drawn (None: the host does not count)
    boxed: int | None = None  # drawn as their bounding box, out of time for their shape (None: not counted)
    sketched: int | None = None  # drawn from their footprint or axis, out of time for their shape (None: not counted)
    simplified: int | None = None  # drawn as a coarser body of their own, out of time for their shape (None: not counted)


@dataclass(frozen=True)
class ToolResult:
    """Every tool's result: a lookup, a capture, a refusal, or the envelope of a script run."""
    tool_call_id: str
    name: str
    ok: bool
    summary: str  # the model's copy (shown to the person as the result's text unless `person` says otherwise)
    image: ImageMeta | dict[str, str] | None = None  # a capture; {"error": ...} when it failed
    person: dict[str, str] | None = None  # the person's words, when the model's differ (default: recognised)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        if data["image"] is None:
            del data["image"]
        person = self.person or person_copy(self.summary)
        if person is None:
            del data["person"]
        else:
            data["person"] = person
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
        """Every key present, null when empty: the page reads them by name. The values are the reply's own, not
        deep copies (`asdict` copied every list and dict of the output for each call, about 0.1 ms)."""
        data = {name: getattr(self, name) for name in _field_names(type(self))}
        if isinstance(self.image, ImageMeta):
            data["image"] = asdict(self.image)
        return data


@cache
def _field_names(kind: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(kind))
