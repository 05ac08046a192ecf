"""The real IFC host (IfcOpenShell) on a background thread, connected to a test server, for one `with` block."""
from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ifc_host import runtime, sample
from ifc_host.runtime import HostHandle


@contextmanager
def connected_host(model_path: Path, server_url: str, token: str,
                   timeout_s: float = 30) -> Iterator[tuple[HostHandle, str]]:
    """Serve an existing IFC file: yields the running host and its host id; the host stops on exit."""
    host = runtime.start_host_thread(str(model_path), server_url, token)
    try:
        yield host, host.wait_connected(timeout_s)
    finally:
        host.stop()


@contextmanager
def sample_host(model_path: Path, server_url: str, token: str, storeys: int) -> Iterator[tuple[HostHandle, str]]:
    """Write the sample building (`storeys` storeys) at `model_path`, then serve it as `connected_host` does."""
    sample.write_sample_model(model_path, storeys=storeys)
    with connected_host(model_path, server_url, token) as running:
        yield running


def digest(path: Path) -> str:
    """The SHA-256 of a file's bytes (has the host saved a commit back to it?)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()
