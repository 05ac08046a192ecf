"""Which API index answers `lookup_api` for a host, built once per host app and version, then kept."""
from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cloud.grounding.index import ApiEntry, ApiIndex

RUNTIME_HELPERS = Path(__file__).with_name("runtime_helpers.json")


class NoApiIndex(LookupError):
    pass


def _ifc(hello: dict[str, Any]) -> tuple[str, Callable[[], ApiIndex]]:
    from cloud.grounding.ifc_api import build_ifc_index

    schema = str(hello.get("document", {}).get("schema") or "IFC4").upper()
    return f"ifc:{schema}", lambda: build_ifc_index(schema)


def _revit(hello: dict[str, Any]) -> tuple[str, Callable[[], ApiIndex]]:
    from cloud.grounding.revit_api import build_revit_index

    digits = re.findall(r"\d+", str(hello.get("host_version", "")))
    year = int(digits[0]) if digits else 2026
    version = year - 2000 if year > 2000 else year
    return f"revit:{version}", lambda: build_revit_index(version)


BUILDERS: dict[str, Callable[[dict[str, Any]], tuple[str, Callable[[], ApiIndex]]]] = {"ifc": _ifc, "revit": _revit}

_lock = threading.Lock()
_indexes: dict[str, ApiIndex] = {}


def _runtime_helpers(host_app: str) -> list[ApiEntry]:
    rows = json.loads(RUNTIME_HELPERS.read_text(encoding="utf-8")).get(host_app, [])
    return [ApiEntry(r["name"], r["kind"], r.get("signature", ""), r.get("doc", "")) for r in rows]


def api_index(host_app: str, hello: dict[str, Any]) -> ApiIndex:
    """The index for this host (built on first use; call `warm` when a host connects to build it early)."""
    if host_app not in BUILDERS:
        raise NoApiIndex(f"no API reference is available for {host_app!r} hosts")
    key, build = BUILDERS[host_app](hello)
    with _lock:
        if key not in _indexes:
            try:
                index = build()
            except LookupError as exc:
                raise NoApiIndex(str(exc)) from exc
            _indexes[key] = ApiIndex(_runtime_helpers(host_app) + index.entries, index.label)
        return _indexes[key]


def warm(host_app: str, hello: dict[str, Any]) -> None:
    def build() -> None:
        try:
            api_index(host_app, hello)
        except NoApiIndex:
            pass
    threading.Thread(target=build, name=f"api-index-{host_app}", daemon=True).start()
