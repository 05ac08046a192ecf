"""Many-process benchmarks (run by hand from the repository root; prints figures).

    python bench/bench_scale.py roundtrip --round-trips 1000
    python bench/bench_scale.py suspended --runs 200 --keepalive 1.0 --observe 6

roundtrip  Orchestrator-added time per tool round trip through the host seam (WebSocketHostLink.ask: open
           the pending request, send the command, the host's reply over its websocket, the rendezvous
           delivery and wake-up), minus the host's own time (the duration it reports). Side by side in the
           same run: the host and the asking run on one process (in-process rendezvous and directory), and
           host on instance A with the run on instance B (Redis rendezvous, command routed to A's inbox,
           wake-up back to B). Both instances, a throwaway PostgreSQL and redis-server are started here.
suspended  N runs started through two instance processes (alternating; tests/scale/instance.py: gunicorn with
           one gevent worker each, as `nexus serve --workers N`, or `--server threaded`), in batches, each
           suspended on a tool call its host (connected to the first instance) never answers, with one SSE
           stream per run read by this process. Beside them in the same run (gevent only), as many streams of a
           bare Flask SSE app served the same way (tests/scale/sse_peer.py): the floor. Reports the start-up
           time (and a batch's among the first and the last fifth: linear or not), the processes' RSS growth
           per stream (after one warm-up stream per process, not counted), their threads and CPU while the streams wait, every gap between keepalive frames inside
           the observation window, and the runs' Redis and PostgreSQL connections and Redis traffic.
"""
from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

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


@dataclass
class Waiting:
    """What N open streams cost two server processes while they wait (the runs', or the bare peer's)."""
    label: str
    start_s: float
    first_batches_s: float
    last_batches_s: float
    ready: int
    failures: list[str]
    window_s: float
    kb_per_stream: float
    threads: list[tuple[int, int]]
    cpu: list[float]
    every: list[float]
    worst: list[float]
    load: float
    counted_per_s: float  # what `counter` counted a second during the window (Redis commands for the runs)


def _open_waiting(label: str, servers: list[Any], open_one: Any, args: argparse.Namespace,
                  counter: Any = lambda: 0) -> tuple[Waiting, Any]:
    """Open `args.runs` streams through `servers` (alternating, in batches that each wait until their streams
    are ready), let the burst settle, observe the keepalives; the figures, and the streams (still open)."""
    from tests.scale.suspended import Streams, cpu_s, gaps, rss_kb, threads

    streams = Streams()
    pids = [s.server_pid for s in servers]
    # One stream per process first, left open and not counted: what the first one loads once (modules imported
    # on first use, pools, caches) is not a cost per stream.
    for warm in [open_one(streams, i) for i in range(len(servers))]:
        warm.suspended.wait(300)
    warmed = len(streams.streams)
    before = [rss_kb(p) for p in pids]
    threads_before = [threads(p) for p in pids]
    started = time.monotonic()
    per_batch: list[float] = []
    for batch in range(0, args.runs, args.batch):
        batch_started = time.monotonic()
        mine = [open_one(streams, i) for i in range(batch, min(args.runs, batch + args.batch))]
        for stream in mine:
            stream.suspended.wait(300)
        per_batch.append(time.monotonic() - batch_started)
        measured = streams.streams[warmed:]
        done = len(measured)
        if done % max(args.batch, args.runs // 10) == 0 or done == args.runs:
            failed = sum(1 for s in measured if s.failure)
            print(f"  {label}: {done} started, {failed} failed ({time.monotonic() - started:.0f} s)", file=sys.stderr,
                  flush=True)
    start_s = time.monotonic() - started
    measured = streams.streams[warmed:]
    ready = sum(1 for s in measured if s.suspended.is_set() and not s.failure)
    time.sleep(args.keepalive * 2)  # let the start-up burst settle
    since = time.monotonic()
    cpu_before = [cpu_s(p) for p in pids]
    counted = counter()
    time.sleep(args.observe)
    until = time.monotonic()
    counted = counter() - counted
    window = until - since
    every, worst = gaps(measured, since, until)
    after = [rss_kb(p) for p in pids]
    fifth = max(1, len(per_batch) // 5)
    return Waiting(label, start_s, statistics.median(per_batch[:fifth]), statistics.median(per_batch[-fifth:]), ready,
                   [s.failure for s in measured if s.failure], window,
                   (sum(after) - sum(before)) / max(1, ready),
                   [(t0, threads(p)) for p, t0 in zip(pids, threads_before, strict=True)],
                   [(cpu_s(p) - c) / window * 100 for p, c in zip(pids, cpu_before, strict=True)],
                   every, worst, os.getloadavg()[0], counted / window), streams


def _peer(args: argparse.Namespace) -> Waiting:
    """The same number of bare Flask SSE streams through two peer processes, each a gevent worker."""
    from tests.scale.sse_peer import OPEN_FRAME
    from tests.scale.suspended import start_peer

    with ExitStack() as stack:
        peers = [start_peer(stack, args.keepalive) for _ in range(2)]
        time.sleep(1.0)
        marker = OPEN_FRAME.strip().encode()
        figures, streams = _open_waiting("bare Flask SSE", peers, lambda streams, i: streams.open_path(
            peers[i % 2].url, "/stream", {}, {}, marker), args)
        streams.close()
    return figures


def suspended(args: argparse.Namespace) -> None:
    """N runs suspended on a tool call their host never answers, through two instance processes; beside
    them, as many bare Flask SSE streams through two processes served the same way."""
    import psycopg
    import redis as redis_client

    from cloud.store import Store
    from tests.scale.suspended import start_instance

    peer = _peer(args) if args.server == "gevent" else None
    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        postgres = stack.enter_context(postgres_server())
        redis = stack.enter_context(redis_server(Path(tmp) / "redis"))
        database = fresh_database(postgres)
        os.environ["NEXUS_SCRIPTED_DIRS"] = tmp
        os.environ["NEXUS_REDIS_URL"] = redis.url
        spec = write_script(Path(tmp) / "suspend.json", [collect("print(1)"), say("never")])
        store = Store(database)
        token = store.auth.create_token("bench")
        store.close()
        settings = {"keepalive_s": args.keepalive, "tool_timeout_s": 3600.0, "quota_concurrent_runs": 0,
                    "quota_sessions_per_hour": 0, "quota_requests_per_minute": 0}
        gevent = args.server == "gevent"
        instances = [start_instance(stack, database, settings, gevent=gevent) for _ in range(2)]
        host = TestHost(instances[0].url.replace("http://", "ws://") + "/ws/host", token, silent=True).start()
        stack.callback(host.stop)
        clients = [Client(i.url, token) for i in instances]
        time.sleep(1.0)
        redis_info = redis_client.Redis.from_url(redis.url)
        redis_before = redis_info.info("memory")["used_memory"]

        def open_run(streams: Any, i: int) -> Any:
            client = clients[i % 2]
            return streams.open(client.url, token, client.new_session(host.host_id, spec))

        runs, streams = _open_waiting("suspended runs", instances, open_run, args,
                                      lambda: redis_info.info("stats")["total_commands_processed"] - 1)  # minus INFO
        stack.callback(streams.close)
        redis_clients = len(redis_info.client_list()) - 1  # not this one
        redis_memory = redis_info.info("memory")["used_memory"] - redis_before
        with psycopg.connect(postgres, autocommit=True) as conn:
            pg = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s",
                              (database.rsplit("/", 1)[1],)).fetchone()[0]
        _print_suspended(args, runs, peer)
        print(f"  runs: Redis {redis_memory / max(1, runs.ready) / 1024:.1f} KB a run, {redis_clients} connections "
              f"open, {runs.counted_per_s:.0f} commands/s while the runs wait; PostgreSQL connections: {pg}")
        for failure in sorted(set(runs.failures))[:5]:
            print(f"  failure: {failure}")


def _print_suspended(args: argparse.Namespace, runs: Waiting, peer: Waiting | None) -> None:
    from tests.scale.suspended import percentile

    limit = 1.5 * args.keepalive
    columns = [runs, *([peer] if peer else [])]

    def row(name: str, cell: Any) -> None:
        print(f"  {name:44s}" + "".join(f"{cell(c):>34s}" for c in columns))

    print(f"{args.runs} streams through two server processes ({args.server}), keepalive every {args.keepalive} s, "
          f"observed {runs.window_s:.1f} s; load average {runs.load:.1f} at the end of the runs"
          + (f", {peer.load:.1f} of the peer" if peer else ""))
    row("", lambda c: c.label)
    row("start-up (ms a stream; a batch of " + str(args.batch) + ": first / last fifth)",
        lambda c: f"{c.start_s:.1f} s ({c.start_s / max(1, args.runs) * 1000:.1f} ms; "
                  f"{c.first_batches_s:.2f} / {c.last_batches_s:.2f} s)")
    row("waiting / failed", lambda c: f"{c.ready} / {len(c.failures)}")
    row("memory a stream (RSS growth, both processes)", lambda c: f"{c.kb_per_stream:.1f} KB"
        + (" (target <= 60)" if c is runs else ""))
    row("threads per process, before -> with them", lambda c: ", ".join(f"{a} -> {b}" for a, b in c.threads))
    row("CPU per process while they wait", lambda c: ", ".join(f"{x:.0f}%" for x in c.cpu))
    row("keepalive gap p50 / p99 / largest", lambda c: f"{percentile(c.every, 50):.2f} / "
        f"{percentile(c.every, 99):.2f} / {max(c.every, default=0):.2f} s")
    row(f"streams with a gap over {limit:.1f} s (p99 target <= {limit:.1f})",
        lambda c: f"{sum(1 for w in c.worst if w > limit)} of {len(c.worst)}")


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
    p.add_argument("--server", choices=["gevent", "threaded"], default="gevent",
                   help="gevent: gunicorn's gevent worker, as `nexus serve --workers N` (default); threaded: the "
                        "embedded Werkzeug server of a plain `nexus serve`")
    p.set_defaults(func=suspended)
    args = parser.parse_args(argv)
    os.environ.setdefault("NEXUS_SECRET", os.urandom(32).hex())  # several processes through Redis sign with it
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stopped: the servers it started stop too
    args.func(args)


if __name__ == "__main__":
    main()
