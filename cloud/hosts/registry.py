"""Host app id -> capability provider, what the orchestrator derives from a provider (labels, the tool
definitions a host's model sees), and provenance stamping of the scripts sent to hosts."""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from cloud.hosts.base import HostCapabilityProvider, ScriptDialect
from cloud.hosts.hello import Hello
from shared_contract.host_messages import Epilogue
from shared_contract.validate import content_hash, tool_definitions

__all__ = [
    "CapabilityScript", "UnknownHostApp", "content_hash", "get_provider", "host_labels", "host_tool_definitions",
    "known_host_apps", "known_providers", "register_provider", "script_dialect", "stamped_epilogue",
    "unregister_provider",
]

# A host is added by one module exposing PROVIDER, and one line here.
PROVIDER_MODULES = {
    "ifc": "cloud.hosts.ifc",
    "revit": "cloud.hosts.revit",
}

CAPTURE_VIEW = "capture_view"

_registered: dict[str, HostCapabilityProvider] = {}


class UnknownHostApp(LookupError):
    pass


def register_provider(provider: HostCapabilityProvider) -> None:
    """Serve a host app from a provider defined elsewhere (tests and embedders register theirs)."""
    _registered[provider.host_app] = provider


def unregister_provider(host_app: str) -> None:
    _registered.pop(host_app, None)


def get_provider(host_app: str) -> HostCapabilityProvider:
    if host_app not in _registered:
        module_name = PROVIDER_MODULES.get(host_app)
        if module_name is None:
            raise UnknownHostApp(f"no capability provider for host app {host_app!r}")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise UnknownHostApp(f"capability provider for {host_app!r} is not available: {exc}") from exc
        register_provider(module.PROVIDER)
    return _registered[host_app]


def known_host_apps() -> list[str]:
    """Every host app this server can serve: the built-in modules and whatever was registered."""
    return sorted(set(PROVIDER_MODULES) | set(_registered))


def known_providers() -> list[HostCapabilityProvider]:
    for host_app in PROVIDER_MODULES:
        try:
            get_provider(host_app)
        except UnknownHostApp:
            pass
    return list(_registered.values())


def host_labels(host_app: str) -> dict[str, str | None]:
    """How people are shown a host app: {"display_name", "referred_to_as", "busy_hint"} (the id itself and no
    hint when unknown)."""
    try:
        provider = get_provider(host_app)
    except UnknownHostApp:
        return {"display_name": host_app, "referred_to_as": host_app, "busy_hint": None}
    return {"display_name": provider.display_name, "referred_to_as": provider.referred_to_as,
            "busy_hint": provider.busy_hint}


def script_dialect(hello: Hello) -> ScriptDialect | None:
    """The language this host's scripts are written in, as its provider says (None: no provider)."""
    try:
        return get_provider(hello.host_app).script_dialect(hello)
    except UnknownHostApp:
        return None


def host_tool_definitions(hello: Hello | None) -> tuple[dict[str, Any], ...]:
    """The canonical tool definitions as a model working on this host sees them: `capture_view` lists
    the views the host offers. Without a host (or one with no provider), the canonical definitions."""
    if hello is None:
        return tool_definitions()
    try:
        provider = get_provider(hello.host_app)
    except UnknownHostApp:
        return tool_definitions()
    return _with_views(provider.views_description(hello).strip())


@lru_cache(maxsize=32)
def _with_views(views: str) -> tuple[dict[str, Any], ...]:
    out = []
    for tool in tool_definitions():
        if tool["name"] == CAPTURE_VIEW and views:
            tool = {**tool, "description": f"{tool['description']}\n\n{views}"}
        out.append(tool)
    return tuple(out)


@dataclass(frozen=True)
class CapabilityScript:
    host_app: str
    capability_version: str
    code: str
    sha256: str

    def as_epilogue(self) -> Epilogue:
        """The stamped epilogue an execute carries."""
        return Epilogue(self.code, self.sha256, self.capability_version)

    def as_message(self) -> dict[str, str]:
        return self.as_epilogue().to_dict()


def stamped_epilogue(host_app: str) -> CapabilityScript:
    provider = get_provider(host_app)
    code = provider.build_task_automation_epilogue()
    return CapabilityScript(provider.host_app, provider.capability_version, code, content_hash(code))
