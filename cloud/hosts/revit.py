"""The Revit capability provider: what the model must know about Revit scripts (IronPython 2.7 or
CPython 3 under pyRevit), the views it can capture, the change-report epilogue, which view to capture
after an automation, and the API index read from the Revit API stubs. Prompt, views and epilogue are
data files."""
from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from string import Template
from typing import TYPE_CHECKING, Any

from cloud.hosts.base import IRONPYTHON2, PYTHON3, ApiIndexSource, ScriptDialect, ViewRequest, directed_view
from cloud.hosts.hello import Hello
from cloud.prompts import text

if TYPE_CHECKING:
    from cloud.grounding.index import ApiIndex

EPILOGUE_PATH = Path(__file__).resolve().parent / "epilogues" / "revit_epilogue.py"
PROMPT_NAME = "hosts/revit.md"
VIEWS_NAME = "hosts/revit_views.md"
DEFAULT_REVIT_YEAR = 2026  # the API index used when the host's version names no year
MAX_VIEW_ELEMENT_IDS = 50

_DIALECT_MARKER = re.compile(r"^<!-- dialect: (\w+) -->\s*$", re.MULTILINE)
_PYTHON_MAJOR = re.compile(r"^\s*(\d+)\.")
_DIGITS = re.compile(r"\d+")


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
    display_name = "Revit"
    referred_to_as = "Revit"
    busy_hint = "If Revit stays busy, press Esc in Revit (a dialog or edit mode may be open)."

    def script_dialect(self, hello: Hello) -> ScriptDialect:
        return PYTHON3 if python_major(hello.python_version) >= 3 else IRONPYTHON2

    def system_prompt_fragment(self, hello: Hello) -> str:
        main, dialects = _prompt_parts()
        values = {"host_version": hello.host_version, "python_version": hello.python_version.split(" (")[0]}
        dialect = dialects["python3" if self.script_dialect(hello).python_major >= 3 else "python2"]
        values["dialect"] = Template(dialect).safe_substitute(values)
        return Template(main).safe_substitute(values)

    def views_description(self, hello: Hello) -> str:
        return text(VIEWS_NAME).strip()

    def api_index_source(self, hello: Hello) -> ApiIndexSource:
        digits = _DIGITS.findall(hello.host_version)
        year = int(digits[0]) if digits else DEFAULT_REVIT_YEAR
        version = year - 2000 if year > 2000 else year

        def build() -> ApiIndex:
            from cloud.grounding.revit_api import build_revit_index

            return build_revit_index(version)

        return ApiIndexSource(f"revit:{version}", build)

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
