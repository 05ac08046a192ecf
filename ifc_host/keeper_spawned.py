"""Entry of a keeper started by multiprocessing 'spawn' (Windows): naming it as the target takes this module only,
so the runtime process that starts the keeper never imports the keeper's modules (IfcOpenShell); the spawned
process imports them when it runs it."""
from __future__ import annotations

import os
import signal
import sys
from multiprocessing.connection import Connection
from pathlib import Path


def serve_in_spawned_process(connection: Connection, model_path: str, save_path: str, hold_timeout_s: float,
                             isolation: str, environment: dict[str, str],
                             expect_signature: tuple[int, ...] | None = None) -> None:
    """First drop the inherited environment, then serve as `python -m ifc_host.keeper` does."""
    os.environ.clear()
    os.environ.update(environment)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from ifc_host.keeper import serve

    sys.exit(serve(connection, Path(model_path), Path(save_path), hold_timeout_s, isolation, expect_signature))
