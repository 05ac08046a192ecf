"""Orchestrator + IFC host for one machine (`nexus run`, `nexus demo`), over a real loopback websocket."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import requests

from cloud.config import Settings
from cloud.store import Store


class LocalStack:
    def __init__(self, store: Store, model_path: str, out_path: str | None, port: int = 0, bind: str = "127.0.0.1",
                 default_model: str | None = None, user: str = "cli", admin: bool = False):
        from cloud.server import start_server
        from cloud.web.app import create_app
        from ifc_host.runtime import start_host_thread

        self.store = store
        self.token = store.create_token(user, admin=admin)
        self.server = start_server(create_app(store, Settings(), default_model=default_model), bind, port)
        try:
            self.host = start_host_thread(model_path, self.server.url, self.token, out_path=out_path)
        except Exception:
            self.server.shutdown()
            raise
        try:
            self.host.wait_connected(60)
        except Exception:
            self.close()
            raise

    @property
    def url(self) -> str:
        return self.server.url

    def api(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        return requests.request(method, self.url + path, headers={"Authorization": f"Bearer {self.token}"}, **kwargs)

    def close(self) -> None:
        self.host.stop()
        self.server.shutdown()


HOST_STOP_TIMEOUT_S = 30.0


class HostProcess:
    """`nexus ifc-host` as a child process: the host (and the scripts it runs) never shares the
    orchestrator's process. Its log goes to a temporary file, shown when it fails to start."""

    def __init__(self, model_path: str, server_url: str, token: str, out_path: str | None) -> None:
        self.log = tempfile.NamedTemporaryFile(prefix="nexus-ifc-host-", suffix=".log", delete=False)
        command = [sys.executable, "-m", "cloud.cli", "ifc-host", model_path, "--server", server_url,
                   "--token", token, *(["--out", out_path] if out_path else [])]
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)

    def alive(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, lines: int = 20) -> str:
        return "\n".join(Path(self.log.name).read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        """Interrupt (the host then discards anything held and closes its model), then kill if need be."""
        if self.alive():
            self.process.send_signal(signal.SIGINT if os.name == "posix" else signal.SIGTERM)
            try:
                self.process.wait(HOST_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
        Path(self.log.name).unlink(missing_ok=True)
