"""Many-process benchmarks (run by hand from the repository root; prints figures).

    python bench/bench_scale.py roundtrip --round-trips 1000
    python bench/bench_scale.py suspended --runs 200 --keepalive 1.0 --observe 6

roundtrip  Orchestrator-added time per tool round trip through the host seam (WebSocketHostLink.ask: open
           the pending request, send the command, the host's reply over its websocket, the rendezvous
           delivery and wake-up), minus the host's own time (the duration it reports). Side by side in the
           same run: the host and the asking run on one process (in-process rendezvous and directory), and
           host on instance A with the run on instance B (Redis rendezvous, command routed to A's inbox,
           wake-up back to B). Both instances, a throwaway PostgreSQL and redis-server are started here.
suspended  N runs started through two instances (alternating), each suspended on a tool call its host
           never answers, with one SSE stream per run. Reports the test process's RSS per run, the largest
           gap between keepalive frames any stream saw, and the Redis and PostgreSQL connections in use.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cloud.hostlink import WebSocketHostLink  # noqa: E402
from cloud.hosts.registry import register_provider  # noqa: E402
from tests.scale.servers import fresh_database, postgres_server, redis_server  # noqa: E402
from tests.support.client import Client, write_script  # noqa: E402
from tests.support.server import RunningServer, running_server  # noqa: E402
from tests.support.spine import collect, say  # noqa: E402
from tests.support.test_host import TestHost, TestProvider  # noqa: E402

register_provider(TestProvider())


def _percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def _round_trips(asking: RunningServer, host: TestHost, user: str, n: int) -> list[float]:
    link = WebSocketHostLink(asking.state.hosts, asking.state.channel, host.host_id, user, "bench-" + os.urandom(4).hex())
    cancel = threading.Event()
    added = []
    for i in range(n + 50):
        started = time.perf_counter()
        reply = link.ask({"type": "execute", "mode": "collect", "code": "pass"}, 10, cancel, about=f"c{i}")
        total = (time.perf_counter() - started) * 1000
        if reply.message is None:
            raise RuntimeError(f"no reply: {reply.missing} {reply.detail}")
        if i >= 50:  # warmed up
            added.append(total - float(reply.message.get("duration_ms", 0)))
    return added


def _servers(stack: ExitStack, tmp: Path, redis_url: str | None, database: str, count: int,
             **settings: Any) -> list[RunningServer]:
    if redis_url:
        os.environ["NEXUS_REDIS_URL"] = redis_url
    else:
        os.environ.pop("NEXUS_REDIS_URL", None)
    settings = {"keepalive_s": 1.0, "tool_timeout_s": 3600, **settings}
    servers = [stack.enter_context(running_server(tmp, db_path=database, **settings)) for _ in range(count)]
    for server in servers:
        stack.callback(server.state.runs.close)
    return servers


def roundtrip(args: argparse.Namespace) -> None:
    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        postgres = stack.enter_context(postgres_server())
        redis = stack.enter_context(redis_server(Path(tmp) / "redis"))
        rows = []
        for label, redis_url, count in (("one process (in-process rendezvous)", None, 1),
                                        ("host on A, run on B (Redis)", redis.url, 2)):
            with ExitStack() as inner:
                servers = _servers(inner, Path(tmp), redis_url, fresh_database(postgres), count)
                token = servers[0].token("bench")
                host = TestHost(servers[0].ws_url, token).start()
                inner.callback(host.stop)
                added = _round_trips(servers[-1], host, "bench", args.round_trips)
                rows.append((label, statistics.median(added), _percentile(added, 99), max(added)))
        print(f"orchestrator-added time per tool round trip at the host seam ({args.round_trips} round trips, "
              "host time subtracted)")
        for label, p50, p99, worst in rows:
            print(f"  {label:40s} p50 {p50:6.2f} ms   p99 {p99:6.2f} ms   max {worst:6.2f} ms")


def _rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def suspended(args: argparse.Namespace) -> None:
    import psycopg
    import redis as redis_client

    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        postgres = stack.enter_context(postgres_server())
        redis = stack.enter_context(redis_server(Path(tmp) / "redis"))
        database = fresh_database(postgres)
        os.environ["NEXUS_SCRIPTED_DIRS"] = tmp
        spec = write_script(Path(tmp) / "suspend.json", [collect("print(1)"), say("never")])
        a, b = _servers(stack, Path(tmp), redis.url, database, 2, keepalive_s=args.keepalive,
                        quota_concurrent_runs=0, quota_sessions_per_hour=0, quota_requests_per_minute=0)
        token = a.token("bench")
        host = TestHost(a.ws_url, token, silent=True).start()
        stack.callback(host.stop)
        clients = [Client(a.url, token), Client(b.url, token)]
        before = _rss_kb()
        beats: list[list[float]] = []  # per stream, when each keepalive frame arrived
        stop = threading.Event()

        def follow(client: Client, session_id: str, ready: threading.Event) -> None:
            response = client.call("POST", f"/api/sessions/{session_id}/messages", json={"text": "go"}, stream=True)
            mine: list[float] = []
            beats.append(mine)
            for line in response.iter_lines(decode_unicode=True):
                if line == "event: ToolCall":
                    ready.set()
                if line.startswith(": keepalive"):
                    mine.append(time.monotonic())
                if stop.is_set():
                    break
            response.close()

        readies = []
        for i in range(args.runs):
            client = clients[i % 2]
            session_id = client.new_session(host.host_id, spec)
            ready = threading.Event()
            readies.append(ready)
            threading.Thread(target=follow, args=(client, session_id, ready), daemon=True).start()
        for ready in readies:
            ready.wait(60)
        time.sleep(args.keepalive * 2)  # let the start-up burst settle
        suspended_at = time.monotonic()
        time.sleep(args.observe)
        ended_at = time.monotonic()
        gaps = []
        for mine in beats:  # gaps between keepalives inside the window, and from its edges
            window = [suspended_at, *[t for t in mine if suspended_at <= t <= ended_at], ended_at]
            gaps.extend(b - a for a, b in zip(window, window[1:], strict=False))
        rss = _rss_kb()
        redis_clients = redis_client.Redis.from_url(redis.url).info("clients")["connected_clients"]
        with psycopg.connect(postgres, autocommit=True) as conn:
            pg = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s",
                              (database.rsplit("/", 1)[1],)).fetchone()[0]
        stop.set()
        print(f"{args.runs} suspended runs across two instances (one process here: both servers, the host and "
              f"every SSE client), observed {ended_at - suspended_at:.1f} s")
        print(f"  memory per run (servers + clients + host): {(rss - before) / args.runs:.1f} KB")
        print(f"  largest keepalive gap: {max(gaps, default=0):.2f} s (interval {args.keepalive} s, "
              f"{max(gaps, default=0) / args.keepalive:.2f} x)")
        print(f"  Redis connections: {redis_clients}   PostgreSQL connections: {pg}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("roundtrip")
    p.add_argument("--round-trips", type=int, default=1000)
    p.set_defaults(func=roundtrip)
    p = sub.add_parser("suspended")
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--keepalive", type=float, default=1.0)
    p.add_argument("--observe", type=float, default=6.0)
    p.set_defaults(func=suspended)
    args = parser.parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    main()
