"""Model specs (`vendor:model`) to adapters. A vendor is added by one module and one line here.

Each vendor module exposes `create(model: str) -> ModelAdapter` and `is_configured() -> bool`
(whether its API key is in the environment).
"""
from __future__ import annotations

import importlib
import os
from pathlib import Path

from cloud.vendors.base import ModelAdapter

VENDOR_MODULES = {
    "anthropic": "cloud.vendors.anthropic",
    "openai": "cloud.vendors.openai_responses",
    "gemini": "cloud.vendors.gemini",
    "openai-compat": "cloud.vendors.openai_compat",
    "scripted": "cloud.vendors.scripted",
}

DEFAULT_MODELS = {
    "anthropic": "anthropic:claude-sonnet-4-6",
    "openai": "openai:gpt-5.1",
    "gemini": "gemini:gemini-2.5-pro",
}


class ModelSpecError(ValueError):
    """A model spec that cannot be used; `status` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


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
    """Refuse, with 403, a scripted model whose file is outside NEXUS_SCRIPTED_DIRS."""
    vendor, model = split_spec(spec)
    if vendor != "scripted":
        return
    path = Path(model).resolve()
    if not any(path.is_relative_to(d) for d in scripted_dirs()):
        raise ModelSpecError("scripted model files are only served from NEXUS_SCRIPTED_DIRS", status=403)


def create_model(spec: str) -> ModelAdapter:
    vendor, model = split_spec(spec)
    try:
        module = importlib.import_module(VENDOR_MODULES[vendor])
    except ImportError as exc:
        raise ModelSpecError(f"vendor {vendor!r} is not available: {exc}") from exc
    return module.create(model)


def configured_vendors() -> list[str]:
    out = []
    for vendor, module_name in VENDOR_MODULES.items():
        if vendor == "scripted":
            continue
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        if module.is_configured():
            out.append(vendor)
    return out


def default_model_spec() -> str | None:
    """The first configured vendor's default model, or None when no key is configured."""
    for vendor in configured_vendors():
        if vendor in DEFAULT_MODELS:
            return DEFAULT_MODELS[vendor]
    return None
