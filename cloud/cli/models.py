"""`nexus models`: the vendors and whether their keys are configured."""
from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("models", help="list model vendors and whether they are configured")
    p.set_defaults(func=cmd_models)


def cmd_models(args: argparse.Namespace) -> int:
    from cloud.vendors.registry import DEFAULT_MODELS, configured_vendors, default_model_spec

    configured = configured_vendors()
    for vendor, spec in DEFAULT_MODELS.items():
        state = "configured" if vendor in configured else "no key in the environment"
        print(f"{vendor:14} {spec:34} {state}")
    print("openai-compat  openai-compat:MODEL@BASE_URL       any OpenAI-compatible server (Ollama, vLLM, llama.cpp)")
    print("scripted       scripted:PATH                      a deterministic replay of a JSON script")
    print(f"default: {default_model_spec() or 'none (set a key, or pass --model)'}")
    return 0
