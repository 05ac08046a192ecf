"""The capability-provider Protocol: one implementation per host application.

Behaviour that would otherwise be compiled into a desktop binary lives here instead, so it can change
with a server deploy: the system-prompt fragment, the post-commit epilogue script and the policy for
which view to capture after an automation.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

# The epilogue prints its human-readable change report, then at most one directive line with this
# prefix carrying machine-readable hints (e.g. which view shows the change). The line is stripped
# before the report reaches the model or the person.
DIRECTIVE_PREFIX = "@@nexus "


@dataclass(frozen=True)
class ViewRequest:
    view: str | None = None
    element_ids: list[int] = field(default_factory=list)


class HostCapabilityProvider(Protocol):
    host_app: str  # matches hello.host_app
    capability_version: str  # versioned independently of any desktop binary

    def system_prompt_fragment(self, hello: dict[str, Any]) -> str:
        """What the model must know about scripts on this host (globals, dialect, habits)."""

    def build_task_automation_epilogue(self) -> str:
        """Read-only script run after an automation; prints the change report (and a directive line)."""

    def view_to_capture(self, result: dict[str, Any]) -> ViewRequest | None:
        """After an execute_result: the view worth showing the model, or None when nothing geometric changed."""


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
