"""Many-process benchmarks (run by hand from the repository root; prints figures).

    python bench/bench_scale.py roundtrip --round-trips 1000
    python bench/bench_scale.py suspended --runs 200 --keepalive 1.0 --observe 6

roundtrip  Orchestrator-added time per tool round trip through the host seam (WebSocketHostLink.ask: open
           the pending request, send the command, the host's reply over its websocket, the rendezvous
           delivery and wake-up), minus the host's own time (the duration it reports). Side by side in the
           same run: the host and the asking run on one process (in-process rendezvous and directory), and
           host on instance A with the run on instance B (Redis rendezvous, command routed to A's inbox,
           wake-up back to B). Both instances, a throwaway PostgreSQL and redis-server are started here.
suspended  N runs started through two instance processes (alternating; tests/scale/instance.py, the
           embedded threaded server), in batches, each suspended on a tool call its host (connected to the
           first instance) never answers, with one SSE stream per run read by this process. Reports the
           instances' RSS growth per suspended run, the largest gap between keepalive frames any stream
           saw inside the observation window, and the Redis and PostgreSQL connections in use.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cloud.hostlink import WebSocketHostLink  # noqa: E402
from cloud.hosts.registry import register_provider  # noqa: E402
from tests.scale.servers import free_port, fresh_database, postgres_server, redis_server, wait_port  # noqa: E402
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


def _rss_kb(pid: int | str = "self") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def _instance(stack: ExitStack, database: str, settings: dict[str, Any]) -> tuple[str, subprocess.Popen]:
    """One orchestrator instance as its own process (tests/scale/instance.py), like a `nexus serve`."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "tests.scale.instance", database, str(port),
                                json.dumps(settings)], cwd=ROOT, env=dict(os.environ),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop() -> None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)

    stack.callback(stop)
    wait_port(port, process, "instance", timeout=60)
    return f"http://127.0.0.1:{port}", process


def suspended(args: argparse.Namespace) -> None:
    """N runs suspended on a tool call their host never answers, through two instance processes."""
    import psycopg
    import redis as redis_client

    from cloud.store import Store

    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        postgres = stack.enter_context(postgres_server())
        redis = stack.enter_context(redis_server(Path(tmp) / "redis"))
        database = fresh_database(postgres)
        os.environ["NEXUS_SCRIPTED_DIRS"] = tmp
        os.environ["NEXUS_REDIS_URL"] = redis.url
        spec = write_script(Path(tmp) / "suspend.json", [collect("print(1)"), say("never")])
        store = Store(database)
        token = store.create_token("bench")
        store.close()
        settings = {"keepalive_s": args.keepalive, "tool_timeout_s": 3600.0, "quota_concurrent_runs": 0,
                    "quota_sessions_per_hour": 0, "quota_requests_per_minute": 0}
        instances = [_instance(stack, database, settings) for _ in range(2)]
        host = TestHost(instances[0][0].replace("http://", "ws://") + "/ws/host", token, silent=True).start()
        stack.callback(host.stop)
        clients = [Client(url, token) for url, _ in instances]
        time.sleep(1.0)
        redis_info = redis_client.Redis.from_url(redis.url)
        before = [_rss_kb(p.pid) for _, p in instances]
        redis_before = redis_info.info("memory")["used_memory"]
        beats: list[list[float]] = []  # per stream, when each keepalive frame arrived
        stop = threading.Event()
        failures: list[str] = []

        def follow(client: Client, session_id: str, ready: threading.Event) -> None:
            try:
                response = client.call("POST", f"/api/sessions/{session_id}/messages", json={"text": "go"},
                                       stream=True, timeout=600)
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
            except Exception as exc:  # reported below; the other streams go on
                failures.append(f"{type(exc).__name__}: {exc}")
                ready.set()

        started = time.monotonic()
        readies = []
        for batch in range(0, args.runs, args.batch):  # start in batches: each waits until its runs suspend
            batch_readies = []
            for i in range(batch, min(args.runs, batch + args.batch)):
                client = clients[i % 2]
                session_id = client.new_session(host.host_id, spec)
                ready = threading.Event()
                batch_readies.append(ready)
                threading.Thread(target=follow, args=(client, session_id, ready), daemon=True).start()
            for ready in batch_readies:
                ready.wait(120)
            readies.extend(batch_readies)
            print(f"  {len(readies)} started, {sum(r.is_set() for r in readies)} suspended, {len(failures)} failed "
                  f"({time.monotonic() - started:.0f} s)", file=sys.stderr, flush=True)
        start_s = time.monotonic() - started
        suspended_runs = sum(1 for r in readies if r.is_set())
        time.sleep(args.keepalive * 2)  # let the start-up burst settle
        suspended_at = time.monotonic()
        cpu_before = [_cpu_s(p.pid) for _, p in instances]
        time.sleep(args.observe)
        ended_at = time.monotonic()
        cpu = [(_cpu_s(p.pid) - c) / (ended_at - suspended_at) * 100 for (_, p), c in zip(instances, cpu_before,
                                                                                           strict=True)]
        gaps, worst = [], []  # every gap between keepalives inside the window (and from its edges); per stream
        for mine in beats:
            window = [suspended_at, *[t for t in mine if suspended_at <= t <= ended_at], ended_at]
            own = [b - a for a, b in zip(window, window[1:], strict=False)]
            gaps.extend(own)
            worst.append(max(own))
        after = [_rss_kb(p.pid) for _, p in instances]
        threads = [_threads(p.pid) for _, p in instances]
        clients_now = [c for c in redis_info.client_list() if c.get("name") != "bench"]
        redis_clients = len(clients_now) - 1  # not this one
        redis_busy = sum(1 for c in clients_now if int(c.get("idle", 0)) <= 1) - 1
        redis_memory = redis_info.info("memory")["used_memory"] - redis_before
        with psycopg.connect(postgres, autocommit=True) as conn:
            pg = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s",
                              (database.rsplit("/", 1)[1],)).fetchone()[0]
        stop.set()
        per_run = (sum(after) - sum(before)) / max(1, suspended_runs)
        print(f"{args.runs} runs started through two instance processes in {start_s:.1f} s "
              f"({suspended_runs} suspended on their tool call, {len(failures)} failed), observed "
              f"{ended_at - suspended_at:.1f} s")
        for (url, _), b, a, t, c in zip(instances, before, after, threads, cpu, strict=True):
            print(f"  instance {url}: RSS {b / 1024:.0f} -> {a / 1024:.0f} MB, {t} threads, "
                  f"{c:.0f}% of a core while the runs wait")
        print(f"  memory per suspended run (both instance processes): {per_run:.1f} KB; Redis "
              f"{redis_memory / max(1, suspended_runs) / 1024:.1f} KB")
        limit = 1.5 * args.keepalive
        print(f"  keepalive gaps (interval {args.keepalive} s): p50 {_percentile(gaps, 50):.2f} s, p99 "
              f"{_percentile(gaps, 99):.2f} s, largest {max(gaps, default=0):.2f} s "
              f"({max(gaps, default=0) / args.keepalive:.2f} x); streams with a gap over 1.5 x: "
              f"{sum(1 for w in worst if w > limit)} of {len(beats)}")
        print(f"  Redis connections: {redis_clients} open (the pools' high-water mark), {redis_busy} used in the "
              f"last second   PostgreSQL connections: {pg}")
        for failure in sorted(set(failures))[:5]:
            print(f"  failure: {failure}")


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
    p.add_argument("--batch", type=int, default=50, help="runs started at once before waiting for them to suspend")
    p.set_defaults(func=suspended)
    args = parser.parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    main()
