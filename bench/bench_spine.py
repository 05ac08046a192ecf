"""Spine benchmarks (run by hand; prints figures).

    python bench/bench_spine.py                 # all three
    python bench/bench_spine.py latency --round-trips 1000
    python bench/bench_spine.py crossprocess --round-trips 1000
    python bench/bench_spine.py render
    python bench/bench_spine.py concurrency --runs 200 --keepalive 1.0 --observe 12

latency      Orchestrator-added time per tool round trip: from the moment the model adapter yields a
             ToolCall to the moment the tool result entry is appended to the transcript (store write
             done), minus the host's own time (inside the test host, from receiving each command to
             sending its reply: execute, and decide for an automation held for approval). Everything
             else counts: persisting the assistant turn, validation, policy reads, audit writes, the
             websocket both ways on loopback, the rendezvous wake-ups, rendering the model's copy, the
             person's result chunk. The test host and the person's SSE client run in processes of their
             own (the host's time is subtracted on the same monotonic clock); the server's own threads
             (run, stream, host socket) share its GIL as in production. Targets: p50 <= 2 ms, p99 <= 10 ms. Measured side by side, in
             the same run, with the floor: a bare websocket echo on loopback through the same server stack
             (werkzeug + flask-sock, websocket-client), a message the size of an execute command each way.
crossprocess The same round trips with the host on instance A and the runs on instance B (two servers sharing a
             throwaway PostgreSQL and redis-server, started here): the command goes to A through Redis, the reply
             comes back through the Redis rendezvous (its delivery recorded in PostgreSQL). Target: p50 <= 4 ms.
             --count-calls: also every PostgreSQL statement and Redis command (or pipeline) the two servers
             made while the runs went, per round trip, by the cloud/ function that made it, with its mean time
             (the wrappers cost time themselves: the latency figures of such a run are not comparable).
inprocess    The same round trips driven in-process (cloud.assembly.run_session over an InProcessHostLink to
             the test host's document, a real SQLite store, no HTTP, no websocket): what the core itself
             adds, as `nexus run`, an MCP server or the evaluator pay it.
render       render_for_model on a 60,000-row (~6 MB) result with many duplicate rows. Target <= 50 ms.
concurrency  A server in a subprocess; N hosts connect, N runs start and suspend on a tool call the hosts
             never answer. Reports the server's RSS and thread count, and the largest gap between
             keepalive frames seen by any stream while suspended.
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

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cloud.hosts.registry import register_provider  # noqa: E402
from cloud.tools.render import render_for_model  # noqa: E402
from cloud.vendors.scripted import ScriptedModel  # noqa: E402
from tests.support.client import Client, write_script  # noqa: E402
from tests.support.server import running_server  # noqa: E402
from tests.support.test_host import TestHost, TestProvider  # noqa: E402

# A benchmark measures the spine, not the per-user quotas (one user opens hundreds of hosts and runs).
NO_QUOTAS = {"quota_sessions_per_hour": 0, "quota_concurrent_runs": 0, "quota_hosts": 0, "quota_requests_per_minute": 0}


def _percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


# latency ------------------------------------------------------------------------------------------

TOOL_CALL_AT: dict[str, float] = {}


class TimedModel(ScriptedModel):
    """The scripted model, noting when each ToolCall leaves it."""

    def stream(self, request, cancel):
        stream = super().stream(request, cancel)
        try:
            while True:
                chunk = next(stream)
                if chunk.type == "ToolCall":
                    TOOL_CALL_AT[chunk.metadata["tool_call_id"]] = time.perf_counter()
                yield chunk
        except StopIteration as stop:
            return stop.value


def _install_timed_model(script: Path) -> None:
    """Serve this one scripted file as a TimedModel wherever the API builds the session's model."""
    from cloud.web import api

    build = api.create_model
    api.create_model = lambda spec: TimedModel(str(script)) if spec == f"scripted:{script}" else build(spec)


# The test host in a process of its own, so that its work (and its share of the GIL) is not charged to the
# orchestrator. Host-side time per call: from its recv() of a command to its send() of the reply, summed over
# the call's commands (execute, and decide for a held automation); perf_counter is the system's monotonic clock,
# so the host's figures and the server's are on one time line.
TIMED_HOST_CODE = """
import json, sys, time
sys.path.insert(0, {root!r})
from tests.support.test_host import TestHost
host = TestHost({url!r}, {token!r})
host_time, received_at, mode_of = {{}}, {{}}, {{}}
original_send = host.send

def timed_send(message):
    request_id = message.get("request_id") if isinstance(message, dict) else None
    if request_id in received_at:
        call_id = request_id.split(".")[0]
        host_time[call_id] = host_time.get(call_id, 0.0) + time.perf_counter() - received_at.pop(request_id)
    original_send(message)

host.send = timed_send
host.start()
original_recv = host._ws.recv

def timed_recv():
    raw = original_recv()
    if raw and '"request_id"' in raw:
        message = json.loads(raw)
        received_at[message["request_id"]] = time.perf_counter()
        if message["type"] == "execute":
            mode_of[message["request_id"].split(".")[0]] = message["mode"]
    return raw

host._ws.recv = timed_recv
print(json.dumps({{"host_id": host.host_id}}), flush=True)
sys.stdin.read()
print(json.dumps({{"host_time": host_time, "mode_of": mode_of}}), flush=True)
host.stop()
"""


# The person's side (new sessions, reading each run's SSE stream to its end) in a process of its own too: parsing
# the stream is the browser's work, not the orchestrator's.
PERSON_CODE = """
import sys
sys.path.insert(0, {root!r})
from tests.support.client import Client
client = Client({url!r}, {token!r})
for _ in range({runs}):
    stream = client.run(client.new_session({host_id!r}, {spec!r}), "go")
    assert stream.last["type"] == "Complete", stream.last
"""


def _latency_servers(stack: ExitStack, tmp_path: Path, round_trips: int, cross: bool) -> tuple[Any, Any]:
    """(the server the host connects to, the server the runs are driven on): one server, or two instances on
    one PostgreSQL and one Redis."""
    # No iteration cap: every automation in the script must reach the host.
    settings = {"keepalive_s": 15.0, "max_iterations": round_trips, **NO_QUOTAS}
    if not cross:
        server = stack.enter_context(running_server(tmp_path, **settings))
        return server, server
    from tests.scale.servers import fresh_database, postgres_server, redis_server

    postgres = stack.enter_context(postgres_server())
    redis = stack.enter_context(redis_server(tmp_path / "redis"))
    os.environ["NEXUS_REDIS_URL"] = redis.url
    os.environ.setdefault("NEXUS_SECRET", os.urandom(16).hex())
    database = fresh_database(postgres)
    host_side, run_side = (stack.enter_context(running_server(tmp_path, db_path=database, tool_timeout_s=3600,
                                                              **settings)) for _ in range(2))
    for server in (host_side, run_side):
        stack.callback(server.state.runs.close)
    return host_side, run_side


class CallCounter:
    """Every psycopg statement (and commit or rollback) and redis-py command or pipeline while `counting` is set:
    (kind, what, the cloud/ function that made it) -> [count, seconds]."""

    def __init__(self) -> None:
        import psycopg
        import redis

        self.counting = threading.Event()
        self.calls: dict[tuple[str, str, str], list[float]] = {}
        self._lock = threading.Lock()
        wrap = self._wrap
        psycopg.Cursor.execute = wrap(psycopg.Cursor.execute, "pg", lambda args: " ".join(str(args[1]).split())[:60])
        psycopg.Connection.commit = wrap(psycopg.Connection.commit, "pg", lambda args: "COMMIT")
        psycopg.Connection.rollback = wrap(psycopg.Connection.rollback, "pg", lambda args: "ROLLBACK")
        redis.Redis.execute_command = wrap(redis.Redis.execute_command, "redis",
                                           lambda args: " ".join(str(a) for a in args[1:3])[:40]
                                           if args[1] in ("EVALSHA", "EVAL") else str(args[1]))
        redis.client.Pipeline.execute = wrap(redis.client.Pipeline.execute, "redis", lambda args: "pipeline " + "+".join(
            str(command[0][0]) for command in args[0].command_stack)[:50])

    def _wrap(self, original: Any, kind: str, what: Any) -> Any:
        def counted(*args: Any, **kwargs: Any) -> Any:
            if not self.counting.is_set():
                return original(*args, **kwargs)
            key = (kind, what(args), _cloud_caller())  # before the call: a pipeline's commands go with it
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                with self._lock:
                    entry = self.calls.setdefault(key, [0, 0.0])
                    entry[0] += 1
                    entry[1] += time.perf_counter() - started
        return counted

    def report(self, round_trips: int) -> None:
        print(f"  calls per round trip (of {round_trips}; a run's own calls spread over its round trips):")
        for (kind, what, caller), (count, seconds) in sorted(self.calls.items(), key=lambda kv: -kv[1][0]):
            if count / round_trips >= 0.04:
                print(f"    {count / round_trips:5.2f}  {seconds / count * 1000:6.3f} ms  {kind:5} {what:<60} {caller}")
        for kind in ("pg", "redis"):
            total = sum(count for (k, _, _), (count, _) in self.calls.items() if k == kind)
            print(f"    {kind}: {total / round_trips:.2f} a round trip in all")


def _cloud_caller() -> str:
    """The innermost cloud/ function on the stack outside the store's and the bus's own connection code."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if "/cloud/" in name and not name.endswith(("store/database.py", "distributed/bus.py")):
            return f"{name.split('/cloud/')[-1]}:{frame.f_code.co_name}"
        frame = frame.f_back
    return "?"


def bench_latency(round_trips: int, per_run: int = 20, cross: bool = False, count_calls: bool = False) -> None:
    counter = CallCounter() if count_calls else None
    register_provider(TestProvider())
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        tmp_path = Path(tmp)
        os.environ["NEXUS_SCRIPTED_DIRS"] = str(tmp_path)
        host_side, server = _latency_servers(stack, tmp_path, round_trips, cross)
        store = server.state.store
        appended_at: dict[str, float] = {}
        original_append = store.sessions.append_entries

        def timed_append(session_id: str, entries: list[dict[str, Any]]) -> None:
            original_append(session_id, entries)
            now = time.perf_counter()
            for entry in entries:
                if entry.get("role") == "tool":
                    for part in entry["content"]:
                        appended_at[part["tool_call_id"]] = now

        store.sessions.append_entries = timed_append
        client = Client(server.url, server.token("bench"))
        host = subprocess.Popen([sys.executable, "-c", TIMED_HOST_CODE.format(root=str(ROOT), url=host_side.ws_url,
                                                                               token=client.token)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        host_id = json.loads(host.stdout.readline())["host_id"]
        turns = _turns(per_run)
        spec = write_script(tmp_path / "latency.json", turns)
        _install_timed_model(tmp_path / "latency.json")
        runs = max(1, round_trips // per_run)
        wall = time.perf_counter()
        if counter is not None:
            counter.counting.set()
        person = subprocess.run([sys.executable, "-c", PERSON_CODE.format(
            root=str(ROOT), url=server.url, token=client.token, host_id=host_id, spec=spec, runs=runs)],
            capture_output=True, text=True, timeout=3600)
        if counter is not None:
            counter.counting.clear()
        if person.returncode:
            raise RuntimeError(f"the runs did not complete: {person.stderr[-2000:]}")
        wall = time.perf_counter() - wall
        host.stdin.close()
        timings = json.loads(host.stdout.readline())
        host.wait(30)
    host_time, mode_of = timings["host_time"], timings["mode_of"]
    added, raw, by_mode = [], [], {"collect": [], "automate": []}
    for call_id, at in TOOL_CALL_AT.items():
        if call_id in appended_at and call_id in host_time:
            raw.append((appended_at[call_id] - at) * 1000)
            added.append((appended_at[call_id] - at - host_time[call_id]) * 1000)
            by_mode[mode_of[call_id]].append(added[-1])
    where = "host on instance A, runs on B (Redis, PostgreSQL)" if cross else "one server"
    print(f"{'crossprocess' if cross else 'latency'}: {len(added)} round trips ({runs} runs x {per_run}, half "
          f"collect / half automate, {where}), wall {wall:.1f} s, load {os.getloadavg()[0]:.1f}")
    print(f"  orchestrator-added per round trip: p50 {_percentile(added, 50):.2f} ms, "
          f"p90 {_percentile(added, 90):.2f} ms, p99 {_percentile(added, 99):.2f} ms, max {max(added):.2f} ms "
          f"(targets {'p50 <= 4' if cross else 'p50 <= 2, p99 <= 10'})")
    for mode, values in by_mode.items():
        print(f"  {mode}: p50 {_percentile(values, 50):.2f} ms, p99 {_percentile(values, 99):.2f} ms")
    print(f"  host-side time (subtracted): median {statistics.median(host_time.values()) * 1000:.2f} ms; "
          f"ToolCall->appended before subtracting: p50 {_percentile(raw, 50):.2f} ms")
    if counter is not None:
        counter.report(len(added))
    floor = bench_echo(round_trips)
    print(f"  floor, bare loopback websocket echo (same run, same stack): p50 {_percentile(floor, 50):.2f} ms, "
          f"p99 {_percentile(floor, 99):.2f} ms")
    print(f"  ratio orchestrator-added / echo: p50 {_percentile(added, 50) / _percentile(floor, 50):.1f}x, "
          f"p99 {_percentile(added, 99) / _percentile(floor, 99):.1f}x (a collect is one round trip, an "
          f"automation held for the policy two)")


def bench_echo(round_trips: int) -> list[float]:
    """The floor: one websocket message each way on loopback through the same server stack, no orchestrator."""
    import websocket
    from flask import Flask
    from flask_sock import Sock

    from cloud.server import start_server

    app = Flask("echo")
    sock = Sock(app)

    @sock.route("/echo")
    def echo(ws):
        while True:
            ws.send(ws.receive())

    handle = start_server(app)
    try:
        ws = websocket.create_connection(handle.url.replace("http://", "ws://") + "/echo",
                                         skip_utf8_validation=True)
        payload = json.dumps({"type": "execute", "request_id": "call_0123456789.run", "mode": "collect",
                              "code": "print(len(doc.by_class('Door')))", "timeout_s": 300})
        for _ in range(50):  # warm up
            ws.send(payload)
            assert ws.recv() == payload
        times = []
        for _ in range(round_trips):
            started = time.perf_counter()
            ws.send(payload)
            ws.recv()
            times.append((time.perf_counter() - started) * 1000)
        ws.close()
    finally:
        handle.shutdown()
    return times


def _turns(per_run: int) -> list[list[dict[str, Any]]]:
    turns = []
    for n in range(per_run):
        if n % 2:  # an automation that changes a name: epilogue and change report, no image
            code = f"doc.elements[doc.by_class('Door')[0]]['name'] = 'D{n}'\nprint('renamed')"
            turns.append([{"tool_call": {"name": "execute_task_automation", "input": {"code": code}}}])
        else:
            code = "print(len(doc.by_class('Door')))"
            turns.append([{"tool_call": {"name": "execute_data_collection", "input": {"code": code}}}])
    turns.append([{"text": "done"}])
    return turns


def bench_inprocess(round_trips: int, per_run: int = 20) -> None:
    from cloud.assembly import run_session
    from cloud.config import Settings
    from cloud.store import Store
    from tests.support.local_host import local_link

    register_provider(TestProvider())
    link, host = local_link("bench")
    host_time: dict[str, float] = {}
    serve = host.handle

    def timed_handle(command: dict[str, Any]) -> dict[str, Any]:
        started = time.perf_counter()
        try:
            return serve(command)
        finally:
            call_id = command["request_id"].split(".")[0]
            host_time[call_id] = host_time.get(call_id, 0.0) + time.perf_counter() - started

    host.handle = timed_handle
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "bench.db")
        appended_at: dict[str, float] = {}
        original_append = store.sessions.append_entries

        def timed_append(session_id: str, entries: list[dict[str, Any]]) -> None:
            original_append(session_id, entries)
            now = time.perf_counter()
            for entry in entries:
                for part in entry["content"] if entry.get("role") == "tool" else []:
                    appended_at[part["tool_call_id"]] = now

        store.sessions.append_entries = timed_append
        settings = Settings(max_iterations=round_trips)
        wall = time.perf_counter()
        for _ in range(max(1, round_trips // per_run)):
            model = TimedModel.from_turns(_turns(per_run), "bench")
            row = store.sessions.get_session(store.sessions.create_session("bench", link.host_id, model.spec, {}))
            last = list(run_session(store, settings, model, link, row, "go", threading.Event()))[-1]
            assert last.type == "Complete", last
        wall = time.perf_counter() - wall
    added = [(appended_at[c] - at - host_time[c]) * 1000 for c, at in TOOL_CALL_AT.items()
             if c in appended_at and c in host_time]
    print(f"inprocess: {len(added)} round trips in-process (InProcessHostLink, SQLite), wall {wall:.1f} s")
    print(f"  core-added per round trip: p50 {_percentile(added, 50):.2f} ms, p90 {_percentile(added, 90):.2f} ms, "
          f"p99 {_percentile(added, 99):.2f} ms, max {max(added):.2f} ms")


# render -------------------------------------------------------------------------------------------

def bench_render(repeats: int = 15) -> None:
    rows = [f"IfcDoor | Single-Flush 900x2100 | Level {n % 4} | FireRating EI30 | {'.' * 40}"
            + (f" | #{n}" if n % 40 == 0 else "") for n in range(60_000)]
    output = "\n".join(rows) + "\n"
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        rendered = render_for_model(output, 20_000)
        times.append((time.perf_counter() - started) * 1000)
    unique = len(set(rows))
    print(f"render: 60,000 rows, {len(output) / 1e6:.1f} MB, {unique:,} distinct rows -> {len(rendered):,} characters")
    print(f"  render_for_model: median {statistics.median(times):.1f} ms, min {min(times):.1f} ms, "
          f"max {max(times):.1f} ms over {repeats} runs (target <= 50 ms)")


# concurrency --------------------------------------------------------------------------------------

SERVER_CODE = """
import json, sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
from cloud.hosts.registry import register_provider
from tests.support.server import running_server
from tests.support.test_host import TestProvider
register_provider(TestProvider())
with running_server(Path({tmp!r}), keepalive_s={keepalive}, tool_timeout_s=3600,
                    quota_sessions_per_hour=0, quota_concurrent_runs=0, quota_hosts=0, quota_requests_per_minute=0) as s:
    print(json.dumps({{"url": s.url, "token": s.token("bench")}}), flush=True)
    sys.stdin.read()
"""


def _proc_status(pid: int) -> dict[str, int]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "Threads"):
            fields[key] = int(value.split()[0])
    return fields


class _Listener:
    """One SSE stream, recording when each keepalive arrives once the run has suspended."""

    def __init__(self, client: Client, session_id: str):
        self.suspended = threading.Event()
        self.keepalives: list[float] = []
        self.thread = threading.Thread(target=self._read, args=(client, session_id), daemon=True)
        self.thread.start()

    def _read(self, client: Client, session_id: str) -> None:
        response = client.call("POST", f"/api/sessions/{session_id}/messages", json={"text": "go"}, stream=True,
                               timeout=3600)
        try:
            for line in response.iter_lines(decode_unicode=True):
                if line == "event: ToolCall":
                    self.suspended.set()
                elif line == ": keepalive" and self.suspended.is_set():
                    self.keepalives.append(time.monotonic())
        except requests.RequestException:
            pass  # the server went away at the end of the benchmark


def bench_concurrency(runs: int, keepalive_s: float, observe_s: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        env = {**os.environ, "NEXUS_SCRIPTED_DIRS": str(tmp_path)}
        server = subprocess.Popen([sys.executable, "-c", SERVER_CODE.format(root=str(ROOT), tmp=tmp, keepalive=keepalive_s)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        try:
            info = json.loads(server.stdout.readline())
            client = Client(info["url"], info["token"])
            idle = _proc_status(server.pid)
            spec = write_script(tmp_path / "suspend.json",
                                [[{"tool_call": {"name": "execute_data_collection", "input": {"code": "print(1)"}}}],
                                 [{"text": "never"}]])
            hosts = [TestHost(info["url"].replace("http://", "ws://") + "/ws/host", info["token"], silent=True).start()
                     for _ in range(runs)]
            connected = _proc_status(server.pid)
            sessions = [client.new_session(h.host_id, spec) for h in hosts]
            started = time.perf_counter()
            listeners = [_Listener(client, s) for s in sessions]
            for listener in listeners:
                if not listener.suspended.wait(120):
                    raise TimeoutError("a run did not reach its tool call")
            all_suspended = time.perf_counter() - started
            time.sleep(observe_s)
            loaded = _proc_status(server.pid)
            gaps = []
            for listener in listeners:
                beats = listener.keepalives
                gaps.extend(b - a for a, b in zip(beats, beats[1:], strict=False))
            counts = [len(listener.keepalives) for listener in listeners]
            for host in hosts:
                host.stop()
        finally:
            server.stdin.close()
            server.wait(30)
    per_run_kb = (loaded["VmRSS"] - connected["VmRSS"]) / runs
    per_host_kb = (connected["VmRSS"] - idle["VmRSS"]) / runs
    print(f"concurrency: {runs} hosts connected, {runs} runs suspended on a tool call (all suspended after "
          f"{all_suspended:.1f} s), keepalive every {keepalive_s:g} s, observed {observe_s:g} s")
    print(f"  server RSS: idle {idle['VmRSS'] / 1024:.0f} MB, +hosts {connected['VmRSS'] / 1024:.0f} MB, "
          f"+suspended runs {loaded['VmRSS'] / 1024:.0f} MB ({per_host_kb:.0f} KB per host, {per_run_kb:.0f} KB per run)")
    print(f"  server threads: idle {idle['Threads']}, +hosts {connected['Threads']}, +suspended runs {loaded['Threads']}")
    print(f"  keepalives while suspended: {min(counts)}-{max(counts)} per stream; gap median "
          f"{statistics.median(gaps):.2f} s, p99 {_percentile(gaps, 99):.2f} s, max {max(gaps):.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("which", nargs="?", default="all",
                        choices=["all", "latency", "crossprocess", "inprocess", "render", "concurrency"])
    parser.add_argument("--round-trips", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--keepalive", type=float, default=1.0)
    parser.add_argument("--observe", type=float, default=12.0)
    parser.add_argument("--count-calls", action="store_true",
                        help="latency, crossprocess: count every PostgreSQL statement and Redis command per round trip")
    args = parser.parse_args()
    if args.which in ("all", "render"):
        bench_render()
    if args.which in ("all", "latency"):
        bench_latency(args.round_trips, count_calls=args.count_calls)
    if args.which == "crossprocess":
        bench_latency(args.round_trips, cross=True, count_calls=args.count_calls)
    if args.which in ("all", "inprocess"):
        TOOL_CALL_AT.clear()
        bench_inprocess(args.round_trips)
    if args.which in ("all", "concurrency"):
        bench_concurrency(args.runs, args.keepalive, args.observe)


if __name__ == "__main__":
    main()
