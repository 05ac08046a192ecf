"""Round-trip latency of the Revit runtime (real code, fake Revit) behind the real orchestrator.

Each round trip: server -> websocket -> router -> job queue -> ExternalEvent -> main thread -> execute
(a one-line collect script in a rolled-back transaction) -> reply. Run by hand:

    python bench/bench_revit_runtime.py [ROUND_TRIPS]
"""
from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "NexusAI.extension" / "lib")]

from tests.revit.harness import start_revit_host  # noqa: E402
from tests.support.server import running_server  # noqa: E402


def main(round_trips: int) -> None:
    with running_server(Path(tempfile.mkdtemp())) as server:
        token = server.token("bench")
        for transport in ("clientwebsocket", "websocket-client"):
            host = start_revit_host(server.url, token, transport=transport)
            try:
                message = {"type": "execute", "mode": "collect", "code": "print(doc.Title)\n", "timeout_s": 10}
                for _ in range(20):
                    server.send_to_host(host.host_id, message)
                samples = []
                for _ in range(round_trips):
                    started = time.perf_counter()
                    reply = server.send_to_host(host.host_id, message)
                    samples.append((time.perf_counter() - started) * 1000)
                    assert reply["ok"], reply
                samples.sort()
                p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))]
                print(f"{transport:17s} {round_trips} round trips: p50 {statistics.median(samples):.2f} ms, "
                      f"p99 {p99:.2f} ms, max {samples[-1]:.2f} ms")
            finally:
                host.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 500)
