"""One orchestrator instance as its own process, for the crash tests and the benchmarks:
`python -m tests.scale.instance DB PORT [SETTINGS_JSON]` (settings overriding the tests' short timers).

It serves the test host's provider (registered by the tests only) and reads NEXUS_REDIS_URL and
NEXUS_SCRIPTED_DIRS from its environment, like `nexus serve`.
"""
from __future__ import annotations

import json
import sys

from cloud.config import Settings
from cloud.hosts.registry import register_provider
from cloud.server import serve_forever
from cloud.store import Store
from cloud.web.app import create_app
from tests.support.test_host import TestProvider


def main(db: str, port: int, settings: dict | None = None) -> None:
    register_provider(TestProvider())
    app = create_app(Store(db), Settings(**{"keepalive_s": 0.2, "tool_timeout_s": 20.0, **(settings or {})}))
    print(f"READY http://127.0.0.1:{port}", flush=True)
    serve_forever(app, "127.0.0.1", port)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3]) if len(sys.argv) > 3 else None)
