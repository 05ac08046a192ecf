"""`nexus models`: the vendors, whether this machine is configured for them, and the openai-compat endpoints."""
from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("models", help="list model vendors and whether they are configured")
    p.set_defaults(func=cmd_models)


def cmd_models(args: argparse.Namespace) -> int:
    from cloud.vendors import compat_endpoints
    from cloud.vendors.registry import default_model_spec, vendors

    for info in vendors():
        if not info.listed:
            continue
        if info.is_configured():
            state = "configured"
        elif info.name == "openai-compat":
            state = f"no endpoint: set {compat_endpoints.ENDPOINTS_ENV} or {compat_endpoints.BASE_URL_ENV}"
        else:
            state = f"no key: set {info.key_env}"
        print(f"{info.name:14} {info.default_model or info.example:34} {state}")
    endpoints = compat_endpoints.configured()
    if endpoints:
        # Names only: an endpoint's URL may carry credentials.
        print(f"openai-compat endpoints: {', '.join(sorted(endpoints))} (use openai-compat:MODEL@NAME)")
    print("scripted       scripted:PATH                      a deterministic replay of a JSON script")
    print(f"default: {default_model_spec() or 'none (set a key, or pass --model)'}")
    return 0
