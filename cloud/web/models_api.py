"""`GET /api/models`: what the chat page's model picker offers, from the vendor registry.

Vendors with whether this server is configured for them, their default and suggested specs, the
server's default model, and the openai-compat endpoints by name. Never a key and never an endpoint's
URL (it may carry credentials, and users pick endpoints by name: issue 13 H1).
"""
from __future__ import annotations

from typing import Any

from flask import Blueprint, jsonify

from cloud.vendors import compat_endpoints
from cloud.vendors.registry import vendors
from cloud.web.auth import require_user
from cloud.web.state import nexus

models_api = Blueprint("models_api", __name__, url_prefix="/api")


def model_list(default_model: str | None) -> dict[str, Any]:
    listed = [info for info in vendors() if info.listed]
    described = [{"name": info.name, "configured": info.is_configured(), "key_env": info.key_env,
                  "example": info.example, "default_model": info.default_model, "suggested": list(info.suggested)}
                 for info in listed]
    endpoints = sorted(compat_endpoints.configured())
    offered = [default_model] if default_model else []
    for vendor in described:
        if vendor["configured"]:
            offered += [spec for spec in vendor["suggested"] if spec not in offered]
    return {"default": default_model, "vendors": described,
            "configured_vendors": [v["name"] for v in described if v["configured"]],
            "openai_compat_endpoints": endpoints, "models": offered}


@models_api.get("/models")
@require_user()
def list_models():
    return jsonify(model_list(nexus().default_model))
