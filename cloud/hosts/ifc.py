"""The IFC capability provider: what the model must know about IFC scripts, the views it can capture, the
change-report epilogue, which view to capture after an automation, and the API index of the installed
ifcopenshell. Prompt, views and epilogue are data files."""
from __future__ import annotations

from functools import cache
from pathlib import Path
from string import Template
from typing import TYPE_CHECKING, Any

from cloud.hosts.base import PYTHON3, ApiIndexSource, ScriptDialect, ViewRequest, directed_view
from cloud.hosts.hello import Hello
from cloud.prompts import text

if TYPE_CHECKING:
    from cloud.grounding.index import ApiIndex

EPILOGUE_PATH = Path(__file__).resolve().parent / "epilogues" / "ifc_epilogue.py"
PROMPT_NAME = "hosts/ifc.md"
VIEWS_NAME = "hosts/ifc_views.md"
DEFAULT_SCHEMA = "IFC4"
MAX_VIEW_ELEMENT_IDS = 200
MAX_STOREYS_NAMED = 30


class IfcProvider:
    host_app = "ifc"
    capability_version = "ifc-1.0.0"
    display_name = "IFC"
    referred_to_as = "the IFC host"
    busy_hint = None  # a script runs in its own process: nothing in a window holds it up

    def script_dialect(self, hello: Hello) -> ScriptDialect:
        return PYTHON3  # the host runs scripts in its own CPython 3

    def system_prompt_fragment(self, hello: Hello) -> str:
        document = hello.document
        storeys = [str(s) for s in document.get("storeys") or []]
        storey_line = ""
        if storeys:
            shown = ", ".join(f'"{s}"' for s in storeys[:MAX_STOREYS_NAMED])
            more = f" and {len(storeys) - MAX_STOREYS_NAMED} more" if len(storeys) > MAX_STOREYS_NAMED else ""
            storey_line = f", with storeys (views) {shown}{more} when the host connected"
        values = {
            "host_version": hello.host_version,
            "python_version": hello.python_version,
            "title": str(document.get("title") or "untitled"),
            "schema": str(document.get("schema") or "unknown"),
            "storey_line": storey_line,
        }
        return Template(text(PROMPT_NAME)).safe_substitute(values).strip()

    def views_description(self, hello: Hello) -> str:
        return text(VIEWS_NAME).strip()

    def api_index_source(self, hello: Hello) -> ApiIndexSource:
        schema = str(hello.document.get("schema") or DEFAULT_SCHEMA).upper()

        def build() -> ApiIndex:
            from cloud.grounding.ifc_api import build_ifc_index

            return build_ifc_index(schema)

        return ApiIndexSource(f"ifc:{schema}", build)

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
