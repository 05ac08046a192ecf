"""A real Redis for a test: Debian's redis-server on a free port, no persistence, stopped afterwards."""
from __future__ import annotations

import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import redis

from tests.support.processes import free_port
from tests.support.processes import stop as stop_process

REDIS_SERVER = "/usr/bin/redis-server"


@dataclass
class RedisServer:
    process: subprocess.Popen[bytes]
    port: int

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        stop_process(self.process, signal.SIGTERM, 10)


def start_redis(folder: Path) -> RedisServer:
    binary = shutil.which("redis-server") or REDIS_SERVER
    port = free_port()
    process = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                "--appendonly", "no", "--dir", str(folder)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server = RedisServer(process, port)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            redis.Redis(port=port).ping()
            return server
        except redis.ConnectionError:
            if process.poll() is not None:
                raise RuntimeError(f"redis-server exited with {process.returncode}") from None
            time.sleep(0.05)
    server.stop()
    raise RuntimeError("redis-server did not start within 20 s")
