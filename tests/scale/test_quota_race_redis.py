"""Issue 23, M4 with Redis: two server instances (each its own run registry and Redis connections) on one
PostgreSQL and one Redis take concurrent-run slots in one Lua script: 40 starts at once, split between the
instances, start exactly 8 (chat messages over real HTTP, then MCP run_task calls on both endpoints)."""
from __future__ import annotations

import threading
import time
from contextlib import ExitStack

from cloud.mcp.http import start_mcp_http
from cloud.web.quotas import RUN_SLOTS_KEY, QuotaExceeded, RedisRunSlots, run_slots
from tests.support.client import Client, write_script
from tests.support.quota_race import (
    LIMIT,
    PARALLEL,
    SETTINGS,
    cancel_all,
    post_messages_at_once,
    run_tasks_at_once,
)
from tests.support.server import running_server
from tests.support.spine import collect, say
from tests.support.test_host import TestHost
from tests.support.waiting import wait_until


def test_forty_starts_across_two_instances_start_exactly_the_limit(tmp_path, scripts_dir, redis, database_url,
                                                                   monkeypatch):
    import redis as redis_client

    monkeypatch.setenv("NEXUS_REDIS_URL", redis.url)
    with ExitStack() as stack:
        a = stack.enter_context(running_server(tmp_path, db_path=database_url, **SETTINGS))
        b = stack.enter_context(running_server(tmp_path, db_path=database_url, **SETTINGS))
        assert isinstance(run_slots(a.state.runs), RedisRunSlots) and run_slots(a.state.runs) is not run_slots(
            b.state.runs)
        token = a.token("alice")
        host = TestHost(a.ws_url, token, silent=True).start()
        stack.callback(host.stop)
        on_a, on_b = Client(a.url, token), Client(b.url, token)
        spec = write_script(scripts_dir / "hang.json", [collect("print(1)"), say("done")])
        sessions = [on_a.new_session(host.host_id, spec) for _ in range(PARALLEL)]
        statuses = post_messages_at_once([(on_a if i % 2 else on_b, s) for i, s in enumerate(sessions)])
        assert sorted(statuses) == [200] * LIMIT + [429] * (PARALLEL - LIMIT), statuses
        direct = redis_client.Redis.from_url(redis.url)
        assert direct.zcard(RUN_SLOTS_KEY + "alice") == LIMIT
        running = [r["session_id"] for r in on_a.call("GET", "/api/runs").json()["runs"]]
        assert len(running) == LIMIT
        cancel_all(on_a, running)
        wait_until(lambda: direct.zcard(RUN_SLOTS_KEY + "alice") == 0, timeout=30)

        endpoints = [start_mcp_http(a.state), start_mcp_http(b.state)]
        for endpoint in endpoints:
            stack.callback(endpoint.shutdown)
        results: list[list] = [[], []]
        barrier = threading.Barrier(2)

        def fire(index: int) -> None:
            barrier.wait(30)
            results[index] = run_tasks_at_once(endpoints[index].url, token, {"prompt": "go", "model": spec},
                                               PARALLEL // 2)

        threads = [threading.Thread(target=fire, args=(i,)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(300)
        every = results[0] + results[1]
        started = [r for r in every if not r.is_error]
        assert len(every) == PARALLEL and len(started) == LIMIT, [r.structured_content for r in every]
        assert all(r.structured_content["quota"] == "concurrent runs" for r in every if r.is_error)
        cancel_all(on_a, [r.structured_content["handle"] for r in started])
        wait_until(lambda: direct.zcard(RUN_SLOTS_KEY + "alice") == 0, timeout=30)


def test_the_slots_of_a_process_that_died_expire_and_those_of_a_live_one_do_not(redis):
    """A process that dies cannot release its slots: they expire once it stops renewing them (the lease
    time); a live process's renewed slots stay taken."""
    import redis as redis_client

    client = redis_client.Redis.from_url(redis.url, decode_responses=True)
    dead_stopped, live_stopped = threading.Event(), threading.Event()
    dead, live = RedisRunSlots(client, 1.0, dead_stopped), RedisRunSlots(client, 1.0, live_stopped)
    try:
        dead_stopped.set()  # its renewer stops, as if the process were gone
        dead.reserve("erin", 2)
        held = live.reserve("erin", 2)
        try:
            live.reserve("erin", 2)
            raise AssertionError("a third slot was given at a limit of 2")
        except QuotaExceeded:
            pass
        taken: list = []

        def try_again() -> bool:
            try:
                taken.append(live.reserve("erin", 2))
                return True
            except QuotaExceeded:
                return False

        started = time.monotonic()
        wait_until(try_again, timeout=10)  # the dead one's slot expired: its place is free again
        assert time.monotonic() - started > 0.5  # ... after its time to live, not at once
        time.sleep(1.5)  # the live slots are renewed: still both taken after their time to live
        assert not try_again()
        again = taken[0]
        assert client.zcard(RUN_SLOTS_KEY + "erin") == 2
        held.release()
        again.release()
        assert client.zcard(RUN_SLOTS_KEY + "erin") == 0
    finally:
        live_stopped.set()
