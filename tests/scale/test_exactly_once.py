"""Issue 14 item 3: a tool result or decision is applied exactly once, whichever process it reaches.

The database record (insert-if-absent keyed by the pending request) is the gate, Redis the wake-up and
the answer's copy, a slow poll of the record the fallback when Redis lost it.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack

import pytest
import redis as redis_client

from cloud.distributed.bus import Bus
from cloud.distributed.redis_rendezvous import RedisToolResultChannel
from cloud.rendezvous import Delivery
from cloud.store import Store
from tests.scale.pair import held_under_ask, host_on_a
from tests.support.client import write_script
from tests.support.spine import assert_transcript_valid, automate, say, session


@pytest.fixture
def two_processes(redis, database_url) -> Iterator[tuple[RedisToolResultChannel, RedisToolResultChannel, Store]]:
    """Two processes' rendezvous (a bus and a store each) on one Redis and one PostgreSQL database."""
    with ExitStack() as stack:
        channels, stores = [], []
        for name in ("proc-a", "proc-b"):
            bus = Bus(redis.url, process=name)
            stack.callback(bus.close)
            store = Store(database_url)
            stack.callback(store.close)
            stores.append(store)
            channels.append(RedisToolResultChannel(bus, store.deliveries))
        yield channels[0], channels[1], stores[0]


def _race(deliver, n: int) -> list[Delivery]:
    start = threading.Barrier(n)

    def one(k: int) -> Delivery:
        start.wait()
        return deliver(k)

    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(one, range(n)))


def test_the_same_result_delivered_to_two_processes_at_once_is_applied_once(two_processes):
    a, b, store = two_processes
    for round_ in range(5):  # several rounds: the race is won at different points
        session_id, call = f"s{round_}", f"toolu_{round_}"
        a.open(session_id, f"{call}.run", call, "h1")
        outcomes = _race(lambda k, s=session_id, c=call: (a if k % 2 else b).deliver_tool_result(s, c, {"n": k}), 8)
        assert sorted(o.value for o in outcomes) == ["accepted"] + ["already_answered"] * 7
        winner = outcomes.index(Delivery.ACCEPTED)
        assert a.await_answer(session_id, 5, threading.Event()).result == {"n": winner}
        # after the request closed, any further copy is refused by either process
        assert b.deliver_tool_result(session_id, call, {"n": 99}) is Delivery.ALREADY_ANSWERED
    with store.engine.connect() as conn:
        rows = conn.exec_driver_sql("SELECT session_id, COUNT(*) FROM deliveries GROUP BY session_id").fetchall()
    assert sorted(rows) == [(f"s{r}", 1) for r in range(5)]


def test_a_host_reply_and_a_relayed_copy_racing_on_two_processes_apply_once(two_processes):
    a, b, _ = two_processes
    a.open("s1", "toolu_1.run", "toolu_1", "h1")
    outcomes = _race(lambda k: b.deliver_from_host("toolu_1.run", "h1", {"via": "host"}) if k % 2
                     else a.deliver_tool_result("s1", "toolu_1", {"via": "browser"}), 6)
    assert [o for o in outcomes if o is Delivery.ACCEPTED] == [Delivery.ACCEPTED]
    assert a.await_answer("s1", 5, threading.Event()).result["via"] in ("host", "browser")


def test_an_answer_recorded_before_redis_lost_everything_is_still_applied_once(two_processes, redis):
    a, b, _ = two_processes
    a.open("s1", "toolu_1.run", "toolu_1", "h1")
    assert b.deliver_tool_result("s1", "toolu_1", {"first": True}) is Delivery.ACCEPTED
    redis_client.Redis.from_url(redis.url).flushall()  # a restart without persistence: copy and wake-up gone
    # The waiting process writes its pending request back; a second copy of the answer now reaches it ...
    a._write_pending("s1", a._opened["s1"])
    assert b.deliver_tool_result("s1", "toolu_1", {"first": False}) is Delivery.ALREADY_ANSWERED
    # ... and the run gets the first answer, from the database record.
    assert a.await_answer("s1", 15, threading.Event()).result == {"first": True}


def test_the_record_alone_wakes_a_run_whose_redis_lost_the_answer(two_processes, redis):
    a, b, _ = two_processes
    a.open("s1", "toolu_1.run", "toolu_1", "h1")
    assert b.deliver_tool_result("s1", "toolu_1", {"ok": 1}) is Delivery.ACCEPTED
    redis_client.Redis.from_url(redis.url).flushall()
    answer = a.await_answer("s1", 15, threading.Event())
    assert (answer.result, answer.missing) == ({"ok": 1}, None)


def test_the_same_decision_posted_to_two_instances_at_once_is_applied_once(instances, scripts_dir):
    with host_on_a(*instances) as pair:
        host, on_a, on_b = pair.host, pair.on_a, pair.on_b
        spec = write_script(scripts_dir / "race.json", [automate("doc.add('Wall', 'Raced wall')"), say("Kept.")])
        session_id, run, call_id = held_under_ask(pair, spec, "add a wall")
        statuses = _race(lambda k: (on_a if k % 2 else on_b).call(
            "POST", f"/api/sessions/{session_id}/approval",
            json={"tool_call_id": call_id, "decision": "keep"}).status_code, 6)
        assert sorted(statuses) == [202] + [409] * 5
        stream = run.join(30)
        assert stream.last == {"type": "Complete", "content": "Kept."}
        assert [e["name"] for e in host.document.elements.values()].count("Raced wall") == 1
        assert_transcript_valid(session(on_a, session_id)["messages"])
