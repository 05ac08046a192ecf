"""The target a keeper started by multiprocessing 'spawn' (Windows) is given: naming it takes this module only,
so the runtime process that starts the keeper never imports the keeper's modules (IfcOpenShell); the spawned
process imports them when it runs it."""
from __future__ import annotations

from multiprocessing.connection import Connection


def serve_in_spawned_process(connection: Connection, model_path: str, save_path: str, hold_timeout_s: float,
                             isolation: str, environment: dict[str, str],
                             expect_signature: tuple[int, ...] | None = None) -> None:
    from ifc_host.keeper import serve_in_spawned_process as serve

    serve(connection, model_path, save_path, hold_timeout_s, isolation, environment, expect_signature)
