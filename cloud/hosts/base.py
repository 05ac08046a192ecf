"""The capability-provider Protocol: one implementation per host application, owning everything
host-specific the orchestrator needs.

Behaviour that would otherwise be compiled into a desktop binary lives here instead, so it can change
with a server deploy: how the host is named to people, the script dialect, the system-prompt fragment,
the views `capture_view` offers, the post-commit epilogue script, the policy for which view to capture
after an automation, and the API index that answers `lookup_api`.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from cloud.hosts.hello import Hello

if TYPE_CHECKING:
    from cloud.grounding.index import ApiIndex

# The epilogue prints its human-readable change report, then at most one directive line with this
# prefix carrying machine-readable hints (e.g. which view shows the change). The line is stripped
# before the report reaches the model or the person.
DIRECTIVE_PREFIX = "@@nexus "


@dataclass(frozen=True)
class ViewRequest:
    view: str | None = None
    element_ids: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class ScriptDialect:
    """The language the host runs scripts in."""

    name: str  # "python3", "ironpython2", ...
    python_major: int

    @property
    def compiles_here(self) -> bool:
        """Whether the orchestrator's own CPython 3 can syntax-check scripts of this dialect."""
        return self.python_major >= 3


PYTHON3 = ScriptDialect("python3", 3)
IRONPYTHON2 = ScriptDialect("ironpython2", 2)


@dataclass(frozen=True)
class ApiIndexSource:
    """How to build the index `lookup_api` answers from; `key` names one build (host app and API version)
    so hosts that share it share one index."""

    key: str
    build: Callable[[], ApiIndex]


class HostCapabilityProvider(Protocol):
    """Methods taking `hello` get the Hello parsed when the host connected (Hello.parse, from the wire dict)."""

    host_app: str  # matches hello.host_app
    capability_version: str  # versioned independently of any desktop binary
    display_name: str  # short, for lists and labels: "Revit", "IFC"
    referred_to_as: str  # inside a sentence: "Waiting for Revit", "Waiting for the IFC host"
    busy_hint: str | None  # what a person waiting long on a busy host can do about it (None: nothing to say)

    def script_dialect(self, hello: Hello) -> ScriptDialect:
        """The language this host's scripts are written in (decides, e.g., whether edits are syntax-checked)."""

    def system_prompt_fragment(self, hello: Hello) -> str:
        """What the model must know about scripts on this host (globals, dialect, habits)."""

    def views_description(self, hello: Hello) -> str:
        """Every kind of view `capture_view` can show on this host and how to name it (for the tool's description)."""

    def build_task_automation_epilogue(self) -> str:
        """Read-only script run after an automation; prints the change report (and a directive line)."""

    def view_to_capture(self, result: dict[str, Any]) -> ViewRequest | None:
        """After an execute_result: the view worth showing the model, or None when nothing geometric changed."""

    def api_index_source(self, hello: Hello) -> ApiIndexSource | None:
        """The API reference for `lookup_api` on this host (None: this host offers none)."""


def split_epilogue_output(stdout: str | None) -> tuple[str, dict[str, Any]]:
    """Separate the epilogue's report from its directive line (if any)."""
    report, directives = [], {}
    for line in (stdout or "").splitlines():
        if line.startswith(DIRECTIVE_PREFIX):
            try:
                parsed = json.loads(line[len(DIRECTIVE_PREFIX):])
            except ValueError:
                parsed = None
            if isinstance(parsed, dict):
                directives.update(parsed)
                continue
        report.append(line)
    return "\n".join(report).strip("\n"), directives


def directed_view(result: dict[str, Any], max_ids: int) -> tuple[bool, ViewRequest | None]:
    """What the epilogue's directive line says to capture: (whether it said anything, the view or None)."""
    _report, directives = split_epilogue_output(result.get("epilogue_stdout"))
    if "geometry_changed" not in directives:
        return False, None
    if not directives["geometry_changed"]:
        return True, None
    ids = [int(i) for i in directives.get("element_ids") or []][:max_ids]
    return True, ViewRequest(view=directives.get("view") or None, element_ids=ids)
