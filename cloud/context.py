"""The short context block that leads each request's user turn: what the host has open, right now.

It goes in the user turn, not the system prompt, so the cached prefix (tools + system) never changes.
Hosts whose hello lists the `context` capability answer a cheap `context` request; for others the
block is built from the hello alone.
"""
from __future__ import annotations

import threading
from typing import Any

from cloud.hostlink import HostLink
from cloud.prompts import text

CONTEXT_TIMEOUT_S = 10.0
MAX_LEVELS = 40
MAX_COUNTS = 25
MAX_SELECTION = 50


def fetch_context(host: HostLink, cancel: threading.Event) -> dict[str, Any] | None:
    if not host.hello.has("context"):
        return None
    reply = host.ask({"type": "context"}, CONTEXT_TIMEOUT_S, cancel).message
    if not reply or reply.get("type") != "context_result" or not reply.get("ok"):
        return None
    return reply.get("context")


def render_context_block(host: HostLink, context: dict[str, Any] | None,
                         refs: list[dict[str, str]] | None = None) -> str:
    hello = host.hello
    context = context or {}
    document = context.get("document") or hello.get("document", {}).get("title", "?")
    lines = [f"Host: {hello.get('host_app')} {context.get('host_version') or hello.get('host_version', '')}".rstrip()
             + f" (scripts run on Python {hello.get('python_version', '?')})",
             f"Document: {document}"]
    schema = hello.get("document", {}).get("schema")
    if schema:
        lines.append(f"Schema: {schema}")
    warnings = hello.get("document", {}).get("warnings") or []
    if warnings:
        lines.append("The file opened with warnings: " + "; ".join(warnings))
    levels = context.get("levels") or []
    if levels:
        shown = ", ".join(_level(level) for level in levels[:MAX_LEVELS])
        lines.append(f"Levels/storeys ({len(levels)}): {shown}" + (" ..." if len(levels) > MAX_LEVELS else ""))
    if context.get("active_view"):
        lines.append(f"Active view: {context['active_view']}")
    selection = context.get("selection") or []
    lines.append(f"Selected element ids ({len(selection)}): " + (", ".join(map(str, selection[:MAX_SELECTION]))
                                                               + (" ..." if len(selection) > MAX_SELECTION else "")
                                                               if selection else "none"))
    counts = sorted((context.get("counts") or {}).items(), key=lambda kv: -kv[1])
    if counts:
        lines.append("Element counts: " + ", ".join(f"{name} {n}" for name, n in counts[:MAX_COUNTS])
                     + (f" (+{len(counts) - MAX_COUNTS} more kinds)" if len(counts) > MAX_COUNTS else ""))
    units = context.get("units") or {}
    if units:
        lines.append("Units: " + ", ".join(f"{k} {v}" for k, v in units.items()))
    if refs:
        lines.append(text("context_refs.txt").format(names=", ".join(r["name"] for r in refs)).strip())
    links = context.get("links") or {}
    if links.get("loaded") or links.get("unavailable"):
        unavailable = "; ".join(f"{name}: {why}" for name, why in sorted((links.get("unavailable") or {}).items()))
        lines.append(text("context_links.txt").format(names=", ".join(links.get("loaded") or []) or "none",
                                                      unavailable=unavailable or "none").strip())
    return text("context_block.txt").format(lines="\n".join(lines)).strip()


def _level(level: dict[str, Any]) -> str:
    """`Ground (0)`, or `#57 "Deck" (3.5)` for a storey named by its step id because its Name is shared."""
    elevation = level.get("elevation")
    own = level.get("storey_name")
    named = level["name"] + (f' "{own}"' if own and own != level["name"] else "")
    return named + (f" ({elevation:g})" if isinstance(elevation, (int, float)) else "")
