"""The reference models of a federated session: read-only IFC files its scripts see beside the working model.

A session keeps them as `[{"name", "path"}]` (the file's name, how scripts and findings name it; the real path on
the host's machine) and sends them with every script to an IFC host (ifc_host/refs.py). The command line takes
plain local paths (`--ref`); over HTTP a path is relative to the person's folders under the batch root and is
resolved, links and all, by cloud/folders/access.py: nobody can name another user's file.
"""
from __future__ import annotations

import json
import os
from typing import Any

MAX_REFS = 16
REFS_CAPABILITY = "refs"  # an IFC host that sends references to its scripts says so in its hello


class RefsProblem(ValueError):
    """References a session cannot use; the message names the one and what is wrong (status: for HTTP)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def named(paths: list[str], working: str | None, option: str) -> list[dict[str, str]]:
    """Each real path with its file name, checked: at most MAX_REFS, no name twice (nor the working model's)."""
    if len(paths) > MAX_REFS:
        raise RefsProblem(f"{option}: at most {MAX_REFS} reference models, got {len(paths)}")
    refs: list[dict[str, str]] = []
    taken = {os.path.basename(working)} if working else set()
    for path in paths:
        name = os.path.basename(path)
        if name in taken:
            raise RefsProblem(f"{option}: two models are named {name}; scripts and findings name models by file "
                              "name, so rename one")
        taken.add(name)
        refs.append({"name": name, "path": path})
    return refs


def local_refs(paths: list[str], working: str | None = None) -> list[dict[str, str]]:
    """`--ref PATH ...` of the command line (plain local paths), checked to be files."""
    for path in paths:
        if not os.path.isfile(path):
            raise RefsProblem(f"--ref {path}: no model file there")
        if working and os.path.realpath(path) == os.path.realpath(working):
            raise RefsProblem(f"--ref {path}: that is the working model (--ifc); a reference is another model")
    return named([os.path.realpath(p) for p in paths], working, "--ref")


def http_refs(store: Any, user: str, raw: Any) -> list[dict[str, str]]:
    """`refs` of `POST /api/sessions`: paths relative to the person's folders (or projects/<name>/...)."""
    from cloud.folders.access import FolderError, access_for
    from cloud.folders.roots import NotConfigured, Roots

    if not isinstance(raw, list) or not all(isinstance(p, str) for p in raw):
        raise RefsProblem("refs: expected a list of model paths relative to your folder (or projects/<name>/...)")
    if not raw:
        return []
    try:
        access = access_for(store, Roots.from_env().root, user)
        real = [access.resolve(path, "read", field=f"refs[{i}]") for i, path in enumerate(raw)]
    except FolderError as exc:
        raise RefsProblem(str(exc), exc.status) from None
    except NotConfigured as exc:  # no folder root on this server
        raise RefsProblem(f"refs: {exc}", 409) from None
    for path, where in zip(raw, real, strict=True):
        if not os.path.isfile(where):
            raise RefsProblem(f"refs: {path!r}: no model file there", 404)
    return named(real, None, "refs")


def session_refs(store: Any, session_id: str) -> list[dict[str, str]]:
    return refs_of_row(store.sessions.get_session(session_id))


def refs_of_row(row: dict[str, Any] | None) -> list[dict[str, str]]:
    raw = (row or {}).get("refs")
    return json.loads(raw) if raw else []


def save_refs(store: Any, session_id: str, refs: list[dict[str, str]]) -> None:
    store.sessions.update_session(session_id, refs=json.dumps(refs) if refs else None)


def shown_refs(refs: list[dict[str, str]], user: str | None = None) -> list[dict[str, str]]:
    """What a person is shown of the references: names, and paths as they would name them (never a server path
    outside their folders)."""
    namer = None
    if user is not None:
        try:
            from cloud.folders.access import Namer
            from cloud.folders.roots import Roots

            namer = Namer(Roots.from_env().root, user)
        except Exception:  # noqa: BLE001 - no batch root: the references came from a command line
            namer = None
    return [{"name": r["name"], "path": namer(r["path"]) if namer else r["path"]} for r in refs]
