"""Round-trip latency of the Revit runtime (real code, fake Revit) behind the real orchestrator.

Each round trip: server -> websocket -> router -> job queue -> ExternalEvent -> main thread -> execute
(a one-line collect script in a rolled-back transaction) -> reply. Also (issue 16): the same round trip
while the person is away (the fake gives Revit no idle time until a message reaches its main window),
with the runtime's wake-up and without it; the cost of compiling a script with its deadline checks
inserted as text; and one NexusAI Doctor run. Run by hand:

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


def percentiles(samples: list[float]) -> str:
    samples = sorted(samples)
    p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))]
    return f"p50 {statistics.median(samples):.2f} ms, p99 {p99:.2f} ms, max {samples[-1]:.2f} ms"


def idle_user(round_trips: int) -> None:
    """Revit gets no Idling while the person is away: with the wake-up, without it."""
    with running_server(Path(tempfile.mkdtemp())) as server:
        host = start_revit_host(server.url, server.token("bench"), busy_after_s=2.0)
        try:
            host.session.user_idle = True
            message = {"type": "execute", "mode": "collect", "code": "print(doc.Title)\n", "timeout_s": 10}
            samples = []
            for _ in range(round_trips):
                started = time.perf_counter()
                assert server.send_to_host(host.host_id, message)["ok"]
                samples.append((time.perf_counter() - started) * 1000)
            print(f"person away, Revit woken   {round_trips} round trips: {percentiles(samples)}")
            wake, host.runtime.dispatcher._wake = host.runtime.dispatcher._wake, None
            started = time.perf_counter()
            reply = server.send_to_host(host.host_id, message)
            print(f"person away, no wake-up    1 request: answered {reply['error']['type']} after "
                  f"{(time.perf_counter() - started) * 1000:.0f} ms (busy_after_s 2)")
            host.runtime.dispatcher._wake = wake
            started = time.perf_counter()
            reply = server.send_to_host(host.host_id, {"type": "doctor"}, timeout=120)
            failed = [c["id"] for c in reply["checks"] if not c["ok"]]
            print(f"NexusAI Doctor             1 run: {(time.perf_counter() - started) * 1000:.0f} ms, "
                  f"failed: {failed or 'none'}")
        finally:
            host.stop()


def deadline_compile(repeats: int) -> None:
    from nexus_runtime import deadline
    body = "".join(f"for i{n} in range(3):\n    try:\n        x = i{n}\n    except:\n        pass\n"
                   for n in range(60))
    samples_checked, samples_plain = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        deadline.compile_with_checks(body, "<bench>")
        samples_checked.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        compile(body, "<bench>", "exec", 0, True)
        samples_plain.append((time.perf_counter() - started) * 1000)
    lines = body.count("\n")
    print(f"compile {lines}-line script with checks: {percentiles(samples_checked)}; "
          f"plain compile: {percentiles(samples_plain)}")


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    main(count)
    idle_user(max(10, count // 5))
    deadline_compile(max(10, count // 5))
