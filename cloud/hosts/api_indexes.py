"""Which API index answers `lookup_api` for a host (the host's provider says how to build it), built
once per host app and API version, then kept."""
from __future__ import annotations

import json
import threading
from pathlib import Path

from cloud.grounding.index import ApiEntry, ApiIndex
from cloud.hosts.hello import Hello
from cloud.hosts.registry import UnknownHostApp, get_provider

RUNTIME_HELPERS = Path(__file__).parents[1] / "grounding" / "runtime_helpers.json"


class NoApiIndex(LookupError):
    pass


_lock = threading.Lock()
_indexes: dict[str, ApiIndex] = {}


def _runtime_helpers(host_app: str) -> list[ApiEntry]:
    rows = json.loads(RUNTIME_HELPERS.read_text(encoding="utf-8")).get(host_app, [])
    return [ApiEntry(r["name"], r["kind"], r.get("signature", ""), r.get("doc", "")) for r in rows]


def api_index(host_app: str, hello: Hello) -> ApiIndex:
    """The index for this host (built on first use; call `warm` when a host connects to build it early)."""
    try:
        source = get_provider(host_app).api_index_source(hello)
    except UnknownHostApp:
        source = None
    if source is None:
        raise NoApiIndex(f"no API reference is available for {host_app!r} hosts")
    with _lock:
        if source.key not in _indexes:
            try:
                index = source.build()
            except LookupError as exc:
                raise NoApiIndex(str(exc)) from exc
            _indexes[source.key] = ApiIndex(_runtime_helpers(host_app) + index.entries, index.label)
        return _indexes[source.key]


def warm(host_app: str, hello: Hello) -> None:
    def build() -> None:
        try:
            api_index(host_app, hello)
        except NoApiIndex:
            pass
    threading.Thread(target=build, name=f"api-index-{host_app}", daemon=True).start()
