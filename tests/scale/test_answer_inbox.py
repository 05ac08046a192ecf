"""Issue 29 item 4: an answer delivered on one process travels to the waiting process's inbox, sealed, so the
waiting call takes it from the message instead of reading Redis; the copy in the pending hash and the database
record stay the fallbacks. The inbox takes only the answer to the very request its process opened."""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack

import pytest
import redis as redis_client

from cloud.distributed.bus import Bus
from cloud.distributed.redis_rendezvous import ANSWER, RedisToolResultChannel
from cloud.rendezvous import Delivery
from cloud.store import Store


@pytest.fixture
def pair(redis, database_url) -> Iterator[tuple[RedisToolResultChannel, RedisToolResultChannel]]:
    """Two processes' rendezvous (a bus and a store each) on one Redis and one PostgreSQL database."""
    with ExitStack() as stack:
        channels = []
        for name in ("proc-a", "proc-b"):
            bus = Bus(redis.url, process=name)
            stack.callback(bus.close)
            store = Store(database_url)
            stack.callback(store.close)
            channels.append(RedisToolResultChannel(bus, store.deliveries))
        yield channels[0], channels[1]


def _hgetall_calls(client: redis_client.Redis) -> int:
    return int(client.info("commandstats").get("cmdstat_hgetall", {}).get("calls", 0))


def test_a_host_answer_delivered_on_another_process_reaches_the_waiting_call_without_a_read(pair, redis):
    a, b = pair
    admin = redis_client.Redis.from_url(redis.url)
    b.open("s1", "toolu_1.run", "toolu_1", "h1")
    before = _hgetall_calls(admin)
    assert a.deliver_from_host("toolu_1.run", "h1", {"ok": True, "output": "from the host"}) is Delivery.ACCEPTED
    time.sleep(0.3)  # the inbox message is there before the call looks (else the probe's first reading may read)
    answer = b.await_answer("s1", 10, threading.Event())
    assert answer.result == {"ok": True, "output": "from the host"}
    assert _hgetall_calls(admin) == before  # taken from the message, not read back from the pending hash
    # and the request is closed as before: a second delivery is refused (a relayed copy as already answered)
    assert a.deliver_from_host("toolu_1.run", "h1", {"ok": True}) is Delivery.NOT_PENDING
    assert a.deliver_tool_result("s1", "toolu_1", {"ok": True}) is Delivery.ALREADY_ANSWERED


def test_a_relayed_answer_reaches_the_waiting_process_too(pair):
    a, b = pair
    b.open("s2", "toolu_2.run", "toolu_2", None)
    waited: list = []
    waiter = threading.Thread(target=lambda: waited.append(b.await_answer("s2", 30, threading.Event())))
    waiter.start()
    assert a.deliver_tool_result("s2", "toolu_2", {"ok": True, "output": "relayed"}) is Delivery.ACCEPTED
    waiter.join(40)
    assert waited[0].result == {"ok": True, "output": "relayed"}


def test_the_inbox_takes_only_the_answer_to_the_request_its_process_opened(pair, redis, caplog):
    a, b = pair
    caplog.set_level(logging.WARNING)
    b.open("s3", "toolu_3.run", "toolu_3", "h1")
    # Signed by the deployment, but for a request the process did not open (another pending id, another session)
    for session_id, pending_id in (("s3", "toolu_3.run:host:000000000000"), ("s9", "toolu_9.run:host:0")):
        a.bus.send_to(b.bus.process, {"kind": ANSWER, "session_id": session_id, "pending_id": pending_id,
                                      "result": {"ok": True, "output": "not this request's"}})
    # Unsigned, straight into the inbox
    redis_client.Redis.from_url(redis.url).publish(
        f"nx:proc:{b.bus.process}", '{"kind": "answer", "session_id": "s3", "result": {"output": "forged"}}')
    answer = b.await_answer("s3", 1.5, threading.Event())
    assert answer.result is None and answer.missing == "timeout"
    assert any("dropped a value" in r.getMessage() and "nx:proc:proc-b" in r.getMessage() for r in caplog.records)

    b.open("s3", "toolu_3b.run", "toolu_3b", "h1")
    waited: list = []
    waiter = threading.Thread(target=lambda: waited.append(b.await_answer("s3", 30, threading.Event())))
    waiter.start()
    assert a.deliver_from_host("toolu_3b.run", "h1", {"ok": True, "output": "real"}) is Delivery.ACCEPTED
    waiter.join(40)
    assert waited[0].result == {"ok": True, "output": "real"}
