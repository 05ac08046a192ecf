"""The IFC capability provider: what the model must know about IFC scripts, the change-report epilogue,
and which view to capture after an automation. Prompt and epilogue are data files."""
from __future__ import annotations

from functools import cache
from pathlib import Path
from string import Template
from typing import Any

from cloud.hosts.base import ViewRequest, directed_view
from cloud.prompts import text

EPILOGUE_PATH = Path(__file__).resolve().parent / "epilogues" / "ifc_epilogue.py"
PROMPT_NAME = "hosts/ifc.md"
MAX_VIEW_ELEMENT_IDS = 200
MAX_STOREYS_NAMED = 30


class IfcProvider:
    host_app = "ifc"
    capability_version = "ifc-1.0.0"

    def system_prompt_fragment(self, hello: dict[str, Any]) -> str:
        document = hello.get("document") or {}
        storeys = [str(s) for s in document.get("storeys") or []]
        storey_line = ""
        if storeys:
            shown = ", ".join(f'"{s}"' for s in storeys[:MAX_STOREYS_NAMED])
            more = f" and {len(storeys) - MAX_STOREYS_NAMED} more" if len(storeys) > MAX_STOREYS_NAMED else ""
            storey_line = f", with storeys (views) {shown}{more} when the host connected"
        values = {
            "host_version": str(hello.get("host_version") or "(version unknown)"),
            "python_version": str(hello.get("python_version") or "3"),
            "title": str(document.get("title") or "untitled"),
            "schema": str(document.get("schema") or "unknown"),
            "storey_line": storey_line,
        }
        return Template(text(PROMPT_NAME)).safe_substitute(values).strip()

    def build_task_automation_epilogue(self) -> str:
        return _epilogue_source()

    def view_to_capture(self, result: dict[str, Any]) -> ViewRequest | None:
        """The plan of the storey the epilogue found most affected, with the changed elements highlighted;
        nothing when no geometry changed. Without a directive (the report failed), the host's own list of
        geometrically changed elements decides, on the storey the renderer picks for them."""
        if not result.get("ok") or not (result.get("committed") or result.get("held")):
            return None
        directed, view = directed_view(result, MAX_VIEW_ELEMENT_IDS)
        if directed:
            return view
        geometric = [int(i) for i in (result.get("details") or {}).get("geometry_changed") or []]
        if not geometric:
            return None
        changes = result.get("changes") or {}
        present = set(changes.get("added", [])) | set(changes.get("modified", []))
        return ViewRequest(view=None, element_ids=[i for i in geometric if i in present][:MAX_VIEW_ELEMENT_IDS])


@cache
def _epilogue_source() -> str:
    return EPILOGUE_PATH.read_text(encoding="utf-8")


PROVIDER = IfcProvider()
