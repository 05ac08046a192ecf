"""Host app id -> capability provider, and provenance stamping of the scripts sent to hosts."""
from __future__ import annotations

import hashlib
import importlib
from dataclasses import dataclass

from cloud.hosts.base import HostCapabilityProvider

# A provider is added by one module exposing PROVIDER, and one line here.
PROVIDER_MODULES = {
    "ifc": "cloud.hosts.ifc",
    "revit": "cloud.hosts.revit",
}

_registered: dict[str, HostCapabilityProvider] = {}


class UnknownHostApp(LookupError):
    pass


def register_provider(provider: HostCapabilityProvider) -> None:
    _registered[provider.host_app] = provider


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


def known_providers() -> list[HostCapabilityProvider]:
    for host_app in PROVIDER_MODULES:
        try:
            get_provider(host_app)
        except UnknownHostApp:
            pass
    return list(_registered.values())


def content_hash(code: str) -> str:
    return hashlib.sha256(code.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CapabilityScript:
    host_app: str
    capability_version: str
    code: str
    sha256: str

    def as_message(self) -> dict[str, str]:
        return {"code": self.code, "sha256": self.sha256, "capability_version": self.capability_version}


def stamped_epilogue(host_app: str) -> CapabilityScript:
    provider = get_provider(host_app)
    code = provider.build_task_automation_epilogue()
    return CapabilityScript(provider.host_app, provider.capability_version, code, content_hash(code))
