"""The floor for `bench/bench_scale.py suspended`: a bare Flask app whose one route is an SSE stream that sends
a keepalive comment every interval and nothing else, served exactly like an instance (gunicorn, one gevent
worker, the same `--worker-connections`). What a suspended run costs beyond a stream is measured against it.

    python -m tests.scale.sse_peer PORT KEEPALIVE_S
"""
from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from typing import Any

from tests.scale.instance import WORKER_CONNECTIONS

INTERVAL_ENV = "NEXUS_PEER_KEEPALIVE_S"
OPEN_FRAME = ": stream open\n\n"  # the same first frame as cloud.web.sse
KEEPALIVE_FRAME = ": keepalive\n\n"


def gunicorn_app() -> Any:
    from flask import Flask, Response

    interval = float(os.environ[INTERVAL_ENV])
    app = Flask("sse_peer")

    @app.post("/stream")
    def stream() -> Response:
        def frames() -> Iterator[str]:
            yield OPEN_FRAME
            while True:
                time.sleep(interval)  # gevent's sleep: gunicorn's gevent worker patched the module
                yield KEEPALIVE_FRAME
        response = Response(frames(), mimetype="text/event-stream")
        response.headers["Cache-Control"] = "no-cache"
        return response

    @app.get("/ready")
    def ready() -> str:
        return "ready"

    return app


def command(port: int, keepalive_s: float) -> tuple[list[str], dict[str, str]]:
    env = {**os.environ, INTERVAL_ENV: str(keepalive_s)}
    return [sys.executable, "-m", "gunicorn", "-k", "gevent", "--worker-connections", str(WORKER_CONNECTIONS),
            "-w", "1", "-b", f"127.0.0.1:{port}", "--log-level", "warning", "--timeout", "120",
            "tests.scale.sse_peer:gunicorn_app()"], env


if __name__ == "__main__":
    cmd, environment = command(int(sys.argv[1]), float(sys.argv[2]))
    os.execvpe(cmd[0], cmd, environment)
