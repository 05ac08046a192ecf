"""Model specs (`vendor:model`) to adapters. A vendor is added by one module and one line in VENDOR_MODULES.

Each vendor module declares `VENDOR_INFO` (cloud.vendors.base.VendorInfo). Vendors defined elsewhere
(plugins, tests) are added with `register_vendor(name, "package.module")`.
"""
from __future__ import annotations

import importlib
import os
from pathlib import Path

from cloud.vendors import compat_endpoints
from cloud.vendors.base import ModelAdapter, ModelSpecError, VendorInfo

__all__ = ["ModelSpecError", "VENDOR_MODULES", "check_allowed_for_http", "configured_vendors", "create_model",
           "default_model_spec", "allow_on_command_line", "missing_key", "register_vendor", "unregister_vendor",
           "vendor_info", "vendors"]

VENDOR_MODULES = {
    "anthropic": "cloud.vendors.anthropic",
    "openai": "cloud.vendors.openai_responses",
    "gemini": "cloud.vendors.gemini",
    "openai-compat": "cloud.vendors.openai_compat",
    "scripted": "cloud.vendors.scripted",
}

# The built-in vendors that need a key, and the environment variables any one of which configures them (as
# each module's is_configured() reads them): checked here before a vendor module is imported, because
# importing one imports its SDK (anthropic, openai and google-genai take seconds each). A vendor replaced by
# register_vendor is asked itself.
KEY_ENVS = {
    "anthropic": ("cloud.vendors.anthropic", ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")),
    "openai": ("cloud.vendors.openai_responses", ("OPENAI_API_KEY",)),
    "gemini": ("cloud.vendors.gemini", ("GEMINI_API_KEY", "GOOGLE_API_KEY")),
}
NO_DEFAULT_MODEL = {"openai-compat": "cloud.vendors.openai_compat", "scripted": "cloud.vendors.scripted"}


def _known_keys(vendor: str) -> tuple[str, ...] | None:
    """The key variables of a built-in keyed vendor (None for any other vendor, or one replaced)."""
    module, keys = KEY_ENVS.get(vendor, (None, ()))
    return keys if module is not None and VENDOR_MODULES.get(vendor) == module else None


def missing_key(spec: str) -> str | None:
    """What to set when `spec`'s vendor needs a key and none is in the environment, else None. Imports no SDK."""
    vendor, _ = split_spec(spec)
    keys = _known_keys(vendor)
    if keys is None or any(os.environ.get(k) for k in keys):
        return None
    return f"no API key for {vendor}: set {' or '.join(keys)} (or pass another --model)"


def register_vendor(name: str, module: str) -> None:
    """Add (or replace) a vendor: `module` is the dotted path of a module declaring VENDOR_INFO."""
    if not name or ":" in name:
        raise ValueError(f"vendor name {name!r} must be non-empty and contain no ':'")
    VENDOR_MODULES[name] = module


def unregister_vendor(name: str) -> None:
    VENDOR_MODULES.pop(name, None)


def vendor_info(vendor: str) -> VendorInfo:
    if vendor not in VENDOR_MODULES:
        raise ModelSpecError(f"unknown vendor {vendor!r} in model spec; known: {', '.join(VENDOR_MODULES)}")
    try:
        module = importlib.import_module(VENDOR_MODULES[vendor])
    except ImportError as exc:
        raise ModelSpecError(f"vendor {vendor!r} is not available: {exc}") from exc
    info: VendorInfo = module.VENDOR_INFO
    return info


def vendors() -> list[VendorInfo]:
    """Every vendor whose module imports, in registry order."""
    out = []
    for name in VENDOR_MODULES:
        try:
            out.append(vendor_info(name))
        except ModelSpecError:
            continue
    return out


def split_spec(spec: str) -> tuple[str, str]:
    vendor, sep, model = (spec or "").partition(":")
    if not sep or not model:
        raise ModelSpecError(f"model spec {spec!r} must look like vendor:model, e.g. anthropic:claude-sonnet-4-5")
    if vendor not in VENDOR_MODULES:
        raise ModelSpecError(f"unknown vendor {vendor!r} in model spec; known: {', '.join(VENDOR_MODULES)}")
    return vendor, model


def scripted_dirs() -> list[Path]:
    raw = os.environ.get("NEXUS_SCRIPTED_DIRS", "")
    return [Path(p).resolve() for p in raw.split(os.pathsep) if p]


def check_allowed_for_http(spec: str) -> None:
    """Refuse, with 403, what a client may not make the server read or reach: a scripted model file
    outside NEXUS_SCRIPTED_DIRS, an openai-compat endpoint the server's configuration does not list."""
    vendor, model = split_spec(spec)
    if vendor == "scripted":
        path = Path(model).resolve()
        if not any(path.is_relative_to(d) for d in scripted_dirs()):
            raise ModelSpecError("scripted model files are only served from NEXUS_SCRIPTED_DIRS", status=403)
    elif vendor == "openai-compat":
        # The operator's list, plus a URL this very process was given on its command line (`nexus run`).
        compat_endpoints.resolve(compat_endpoints.split_model(model)[1])


def allow_on_command_line(spec: str) -> None:
    """What a person typed on their own machine's command line (`nexus run --model`) may be used there:
    an openai-compat URL is reached (without the key). Scripted paths are allowed by the CLI itself."""
    vendor, model = split_spec(spec)
    if vendor == "openai-compat":
        compat_endpoints.allow_command_line_url(model)


def create_model(spec: str) -> ModelAdapter:
    vendor, model = split_spec(spec)
    return vendor_info(vendor).create(model)


def configured_vendors() -> list[str]:
    return [info.name for info in vendors() if info.listed and info.is_configured()]


def default_model_spec() -> str | None:
    """The first configured vendor's default model, or None when no key is configured. A built-in vendor
    without its key in the environment is skipped unimported: without any key, this imports no SDK."""
    for name in VENDOR_MODULES:
        keys = _known_keys(name)
        if keys is not None and not any(os.environ.get(k) for k in keys):
            continue
        if NO_DEFAULT_MODEL.get(name) == VENDOR_MODULES[name]:
            continue
        try:
            info = vendor_info(name)
        except ModelSpecError:
            continue
        if info.listed and info.default_model and info.is_configured():
            return info.default_model
    return None
