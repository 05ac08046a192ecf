"""One orchestrator instance as its own process, for the crash tests and the benchmarks.

    python -m tests.scale.instance DB PORT [SETTINGS_JSON]          the embedded threaded server (Werkzeug)
    python -m tests.scale.instance --gevent DB PORT [SETTINGS_JSON]  gunicorn with one gevent worker, as
                                                                     `nexus serve --workers N` runs each

Settings override the tests' short timers. It serves the test host's provider (registered by the tests
only) and reads NEXUS_REDIS_URL, NEXUS_SECRET and NEXUS_SCRIPTED_DIRS from its environment, like `nexus serve`.
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any

from cloud.config import Settings
from cloud.hosts.registry import register_provider
from cloud.store import Store
from cloud.web.app import create_app
from tests.support.test_host import TestProvider

DB_ENV, SETTINGS_ENV, PROFILE_ENV = "NEXUS_INSTANCE_DB", "NEXUS_INSTANCE_SETTINGS", "NEXUS_INSTANCE_PROFILE"
TRACEMALLOC_ENV = "NEXUS_INSTANCE_TRACEMALLOC"
WORKER_CONNECTIONS = 12000  # one per stream and host socket: the benchmarks hold thousands open per worker


def _app(db: str, settings: dict | None) -> Any:
    register_provider(TestProvider())
    return create_app(Store(db), Settings(**{"keepalive_s": 0.2, "tool_timeout_s": 20.0, **(settings or {})}))


def gunicorn_app() -> Any:
    """The app for gunicorn (`tests.scale.instance:gunicorn_app()`), from the environment `main` set.
    With NEXUS_INSTANCE_PROFILE=PATH the worker is profiled (cProfile: under gevent every greenlet runs on
    this one thread) and the profile written to PATH when it exits. With NEXUS_INSTANCE_TRACEMALLOC=PATH the
    worker traces its allocations and writes a tracemalloc snapshot to PATH.1, PATH.2, ... on each SIGUSR2."""
    if os.environ.get(TRACEMALLOC_ENV):
        _trace_allocations(os.environ[TRACEMALLOC_ENV])
    if os.environ.get(PROFILE_ENV):
        import atexit
        import cProfile

        profile = cProfile.Profile()
        atexit.register(lambda: (profile.disable(), profile.dump_stats(os.environ[PROFILE_ENV])))
        profile.enable()
    return _app(os.environ[DB_ENV], json.loads(os.environ.get(SETTINGS_ENV) or "{}"))


def _trace_allocations(path: str) -> None:
    import signal
    import tracemalloc

    if path.endswith(".prof"):  # a window profile instead: the first SIGUSR2 starts it, the second writes it
        import cProfile

        profile = cProfile.Profile()
        state = [0]

        def toggle(*_: Any) -> None:
            state[0] += 1
            if state[0] == 1:
                profile.enable()
            else:
                profile.disable()
                profile.dump_stats(path)

        signal.signal(signal.SIGUSR2, toggle)
        return
    tracemalloc.start(12)
    taken = [0]

    def snapshot(*_: Any) -> None:
        taken[0] += 1
        tracemalloc.take_snapshot().dump(f"{path}.{taken[0]}")

    signal.signal(signal.SIGUSR2, snapshot)


def gevent_command(db: str, port: int, settings: dict | None = None) -> tuple[list[str], dict[str, str]]:
    """The gunicorn command line and environment of one gevent instance."""
    env = {**os.environ, DB_ENV: db, SETTINGS_ENV: json.dumps(settings or {})}
    return [sys.executable, "-m", "gunicorn", "-k", "gevent", "--worker-connections", str(WORKER_CONNECTIONS),
            "-w", "1", "-b", f"127.0.0.1:{port}", "--log-level", "warning", "--timeout", "120",
            "tests.scale.instance:gunicorn_app()"], env


def main(db: str, port: int, settings: dict | None = None, gevent: bool = False) -> None:
    if gevent:
        command, env = gevent_command(db, port, settings)
        print(f"READY http://127.0.0.1:{port}", flush=True)
        os.execvpe(command[0], command, env)
    from cloud.server import serve_forever

    app = _app(db, settings)
    print(f"READY http://127.0.0.1:{port}", flush=True)
    serve_forever(app, "127.0.0.1", port)


if __name__ == "__main__":
    argv = sys.argv[1:]
    use_gevent = argv[:1] == ["--gevent"]
    argv = argv[1:] if use_gevent else argv
    main(argv[0], int(argv[1]), json.loads(argv[2]) if len(argv) > 2 else None, gevent=use_gevent)
