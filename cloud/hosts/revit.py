"""The Revit capability provider: what the model must know about Revit scripts, the change-report
epilogue, and which view to capture after an automation. Prompt and epilogue are data files."""
from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from string import Template
from typing import Any

from cloud.hosts.base import ViewRequest, directed_view
from cloud.prompts import text

EPILOGUE_PATH = Path(__file__).resolve().parent / "epilogues" / "revit_epilogue.py"
PROMPT_NAME = "hosts/revit.md"
MAX_VIEW_ELEMENT_IDS = 50

_DIALECT_MARKER = re.compile(r"^<!-- dialect: (\w+) -->\s*$", re.MULTILINE)
_PYTHON_MAJOR = re.compile(r"^\s*(\d+)\.")


@cache
def _prompt_parts() -> tuple[str, dict[str, str]]:
    """The fragment's main text and its dialect sections (split on `<!-- dialect: NAME -->` lines)."""
    pieces = _DIALECT_MARKER.split(text(PROMPT_NAME))
    main, sections = pieces[0], {}
    for name, body in zip(pieces[1::2], pieces[2::2], strict=True):
        sections[name] = body.strip()
    return main.strip(), sections


def python_major(python_version: str | None) -> int:
    """'2.7.12 (IronPython 2.7.12 ...)' -> 2; unknown versions count as IronPython 2.7, pyRevit's default."""
    match = _PYTHON_MAJOR.match(python_version or "")
    return int(match.group(1)) if match else 2


class RevitProvider:
    host_app = "revit"
    capability_version = "1.0.0"

    def system_prompt_fragment(self, hello: dict[str, Any]) -> str:
        main, dialects = _prompt_parts()
        python_version = str(hello.get("python_version") or "unknown")
        values = {"host_version": str(hello.get("host_version") or "(version unknown)"),
                  "python_version": python_version.split(" (")[0]}
        dialect = dialects["python3" if python_major(python_version) >= 3 else "python2"]
        values["dialect"] = Template(dialect).safe_substitute(values)
        return Template(main).safe_substitute(values)

    def build_task_automation_epilogue(self) -> str:
        return _epilogue_source()

    def view_to_capture(self, result: dict[str, Any]) -> ViewRequest | None:
        """The view the epilogue chose (one showing the changed elements); the host's active view when it
        named none; nothing when no geometry changed. Without a directive (the report failed), any
        committed change is shown, framed on the added and modified elements."""
        if not (result.get("committed") or result.get("held")):
            return None
        directed, view = directed_view(result, MAX_VIEW_ELEMENT_IDS)
        if directed:
            return view
        changes = result.get("changes") or {}
        changed = list(changes.get("added", [])) + list(changes.get("modified", []))
        if not changed and not changes.get("deleted"):
            return None
        return ViewRequest(view=None, element_ids=changed[:MAX_VIEW_ELEMENT_IDS])


@cache
def _epilogue_source() -> str:
    return EPILOGUE_PATH.read_text(encoding="utf-8")


PROVIDER = RevitProvider()
