"""Issue 29 item 4: an answer delivered on one process travels to the waiting process's inbox, sealed, so the
waiting call takes it from the message instead of reading Redis; the copy in the pending hash and the database
record stay the fallbacks. The inbox takes only the answer to the very request its process opened."""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import redis as redis_client

from cloud.distributed.redis_rendezvous import ANSWER, RedisToolResultChannel
from cloud.rendezvous import Delivery
from tests.scale.test_redis_signed import rendezvous  # noqa: F401 (fixture: two processes' rendezvous)


def _hgetall_calls(client: redis_client.Redis) -> int:
    return int(client.info("commandstats").get("cmdstat_hgetall", {}).get("calls", 0))


def _answer_once_delivered(waiting: RedisToolResultChannel, session_id: str, deliver: Callable[[], Delivery]) -> Any:
    """The answer a call waiting on `waiting` gets when `deliver` (accepted) runs meanwhile on the other process."""
    waited: list = []
    waiter = threading.Thread(target=lambda: waited.append(waiting.await_answer(session_id, 30, threading.Event())))
    waiter.start()
    assert deliver() is Delivery.ACCEPTED
    waiter.join(40)
    return waited[0]


def test_a_host_answer_delivered_on_another_process_reaches_the_waiting_call_without_a_read(rendezvous, redis):  # noqa: F811
    a, b = rendezvous
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


def test_a_relayed_answer_reaches_the_waiting_process_too(rendezvous):  # noqa: F811
    a, b = rendezvous
    b.open("s2", "toolu_2.run", "toolu_2", None)
    answer = _answer_once_delivered(b, "s2", lambda: a.deliver_tool_result("s2", "toolu_2", {"ok": True, "output": "relayed"}))
    assert answer.result == {"ok": True, "output": "relayed"}


def test_the_inbox_takes_only_the_answer_to_the_request_its_process_opened(rendezvous, redis, caplog):  # noqa: F811
    a, b = rendezvous
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
    answer = _answer_once_delivered(b, "s3", lambda: a.deliver_from_host("toolu_3b.run", "h1", {"ok": True, "output": "real"}))
    assert answer.result == {"ok": True, "output": "real"}


def _calls(client: redis_client.Redis, command: str) -> int:
    return int(client.info("commandstats").get(f"cmdstat_{command}", {}).get("calls", 0))


def test_the_delivery_closes_the_request_so_the_waiting_call_writes_nothing_to_redis(rendezvous, redis):  # noqa: F811
    a, b = rendezvous
    admin = redis_client.Redis.from_url(redis.url)
    b.open("s5", "toolu_5.run", "toolu_5", "h1")
    before = {c: _calls(admin, c) for c in ("multi", "del", "rpush")}
    answer = _answer_once_delivered(b, "s5", lambda: a.deliver_from_host("toolu_5.run", "h1", {"ok": True}))
    assert answer.result == {"ok": True}
    # the close went with the delivery's script (its DEL and RPUSH), not as a pipeline of B's own
    assert {c: _calls(admin, c) - before[c] for c in ("multi", "del", "rpush")} == {"multi": 0, "del": 1, "rpush": 1}
    assert a.deliver_from_host("toolu_5.run", "h1", {"ok": True}) is Delivery.NOT_PENDING
    assert a.deliver_tool_result("s5", "toolu_5", {"ok": True}) is Delivery.ALREADY_ANSWERED
    assert b.pending_tool_call("s5") is None and not b.awaiting_decision("s5")
    # the session's next request replaces the answered one
    b.open("s5", "toolu_6.run", "toolu_6", "h1")
    assert b.pending_tool_call("s5") == "toolu_6"
    answer = _answer_once_delivered(b, "s5", lambda: a.deliver_from_host("toolu_6.run", "h1", {"n": 6}))
    assert answer.result == {"n": 6}


def test_a_call_that_ends_unanswered_still_closes_its_request(rendezvous):  # noqa: F811
    a, b = rendezvous
    b.open("s7", "toolu_7.run", "toolu_7", "h1")
    assert b.await_answer("s7", 0.2, threading.Event()).missing == "timeout"
    assert b.pending_tool_call("s7") is None
    assert a.deliver_from_host("toolu_7.run", "h1", {"late": True}) is Delivery.NOT_PENDING
    assert a.deliver_tool_result("s7", "toolu_7", {"late": True}) is Delivery.ALREADY_ANSWERED
