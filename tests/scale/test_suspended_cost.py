"""Issue 29 item 1: waiting runs cost little.

Two instances under gunicorn's gevent worker (as `nexus serve --workers N` runs them), one PostgreSQL, one
Redis; 50 runs suspended on a tool call their host never answers, each with its SSE stream open. While they
wait, no thread is added per run, the Redis connections stay those of one small pool per process, the
Redis traffic does not grow by a command a second per run (each waiting stream and call used to poll Redis
on its own every second, then its probe was read every second), every stream keeps its keepalives, and
starting the second half of the runs takes about as long as the first (nothing in a start grows with the runs
already waiting).
"""
from __future__ import annotations

import time
from contextlib import ExitStack

import redis as redis_client

from cloud.distributed.bus import MAX_CONNECTIONS
from cloud.store import Store
from tests.scale.suspended import Streams, gaps, percentile, start_instance, threads
from tests.support.client import Client, write_script
from tests.support.spine import collect, say
from tests.support.test_host import TestHost

RUNS = 50
KEEPALIVE_S = 1.0
OBSERVE_S = 6.0


def test_fifty_suspended_runs_add_no_thread_no_connection_and_no_polling_per_run(redis, database_url, scripts_dir,
                                                                                  monkeypatch):
    monkeypatch.setenv("NEXUS_REDIS_URL", redis.url)
    spec = write_script(scripts_dir / "suspend.json", [collect("print(1)"), say("never")])
    token = Store(database_url).create_token("alice")
    settings = {"keepalive_s": KEEPALIVE_S, "tool_timeout_s": 3600.0, "quota_concurrent_runs": 0,
                "quota_sessions_per_hour": 0, "quota_requests_per_minute": 0}
    with ExitStack() as stack:
        instances = [start_instance(stack, database_url, settings, gevent=True) for _ in range(2)]
        host = TestHost(instances[0].url.replace("http://", "ws://") + "/ws/host", token, silent=True).start()
        stack.callback(host.stop)
        streams = Streams()
        stack.callback(streams.close)
        pids = [i.server_pid for i in instances]
        threads_before = [threads(p) for p in pids]
        clients = [Client(i.url, token) for i in instances]
        halves = []
        for half in (range(RUNS // 2), range(RUNS // 2, RUNS)):  # the second half starts beside the first, waiting
            started = time.monotonic()
            for n in half:
                client = clients[n % 2]
                streams.open(client.url, token, client.new_session(host.host_id, spec))
            for stream in streams.streams[half.start:]:
                assert stream.suspended.wait(180), "a run did not reach its tool call"
            halves.append(time.monotonic() - started)
        assert [s.failure for s in streams.streams if s.failure] == []
        # Nothing in starting a run grows with the runs already waiting (the second half started while the
        # first waited); generous, for a loaded machine.
        assert halves[1] <= 2 * halves[0] + 5, f"starting {RUNS // 2} runs took {halves[0]:.1f} s, then {halves[1]:.1f} s"

        watcher = redis_client.Redis.from_url(redis.url)
        time.sleep(2 * KEEPALIVE_S)  # past the start-up burst
        since, commands_before = time.monotonic(), watcher.info("stats")["total_commands_processed"]
        time.sleep(OBSERVE_S)
        until, commands_after = time.monotonic(), watcher.info("stats")["total_commands_processed"]

        per_run_per_s = (commands_after - commands_before) / (until - since) / RUNS
        # Before: each stream read its list and each waiting call its hash every second, and each cancel
        # was checked with a call of its own (about 4 commands a second per run); then a waiting run was one
        # probe read every second; now its probe is read after 1, 2, 4, 8 s, then every 10 s.
        assert per_run_per_s < 0.6, f"{per_run_per_s:.2f} Redis commands a second per waiting run"
        connections = len(watcher.client_list()) - 1  # not the watcher's own
        # One bounded pool per process (its subscriber included); before, a pool of 256 grew with the runs.
        assert connections <= 2 * MAX_CONNECTIONS, f"{connections} Redis connections for {RUNS} waiting runs"
        grown = [threads(p) - t for p, t in zip(pids, threads_before, strict=True)]
        assert max(grown) <= 3, f"threads added per instance while {RUNS} runs wait: {grown}"
        every, worst = gaps(streams.streams, since, until)
        assert percentile(every, 99) <= 1.5 * KEEPALIVE_S, f"keepalive gap p99 {percentile(every, 99):.2f} s"
        assert all(w <= 3 * KEEPALIVE_S for w in worst), f"largest keepalive gap {max(worst):.2f} s"
