"""Issue 29 item 1: what a waiting call costs while nothing happens, and that its fallbacks still work.

A call waiting for an answer wakes on its wake-ups (the answer, a cancel, its host's socket closing), not every
second; the probe that re-reads what it waits for (the fallback for a lost wake-up) is read less and less often
while nothing changes, and still finds an answer whose wake-up was lost.
"""
from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass

import pytest
import redis as redis_client

from cloud.distributed.bus import Bus
from cloud.distributed.hosts import RedisHostDirectory
from cloud.distributed.redis_rendezvous import (
    KEEP_S,
    RedisToolResultChannel,
    _answered_key,
    _copy_purpose,
    _pending_key,
    _request_key,
)
from cloud.hostlink import RECONNECT_GRACE_S, HostPresence
from cloud.rendezvous import ANSWERED_MEMORY, Answer
from cloud.store import Store

HELLO = {"type": "hello", "host_app": "test", "host_version": "test-1", "runtime_version": "1.0",
         "python_version": sys.version.split()[0], "document": {"title": "Test document"}, "capabilities": []}


@dataclass
class Process:
    bus: Bus
    hosts: RedisHostDirectory
    channel: RedisToolResultChannel


@pytest.fixture
def processes(redis, database_url) -> Iterator[tuple[Process, Process]]:
    """Two processes' host directories and rendezvous (a bus and a store each) on one Redis and PostgreSQL."""
    with ExitStack() as stack:
        made = []
        for name in ("proc-a", "proc-b"):
            bus = Bus(redis.url, process=name)
            stack.callback(bus.close)
            store = Store(database_url)
            stack.callback(store.close)
            made.append(Process(bus, RedisHostDirectory(bus), RedisToolResultChannel(bus, store.deliveries)))
        yield made[0], made[1]


def _calls(admin: redis_client.Redis, command: str) -> int:
    return int(admin.info("commandstats").get(f"cmdstat_{command}", {}).get("calls", 0))


def _waiting(channel: RedisToolResultChannel, session_id: str, presence: HostPresence | None = None) -> list[Answer]:
    """`await_answer` on a thread of its own (an hour's timeout, never cancelled); its answer lands in the list."""
    answers: list[Answer] = []
    threading.Thread(target=lambda: answers.append(channel.await_answer(session_id, 3600, threading.Event(), presence)),
                     daemon=True).start()
    return answers


def _until(answers: list[Answer], timeout_s: float) -> float:
    started = time.monotonic()
    while not answers and time.monotonic() - started < timeout_s:
        time.sleep(0.05)
    return time.monotonic() - started


def test_a_quiet_probe_is_read_less_and_less_often_and_every_second_again_once_it_changes(redis):
    admin = redis_client.Redis.from_url(redis.url)
    bus = Bus(redis.url, process="proc-a")
    try:
        with bus.probing("quiet", ("HLEN", "nx:test:quiet")):
            before = _calls(admin, "hlen")
            time.sleep(8)
            # Every second it was 8 readings; read after 1, 2 and 4 s it is 3 (one more on a slow poll).
            assert _calls(admin, "hlen") - before <= 4
            seen = bus.generation("quiet")
            admin.hset("nx:test:quiet", "field", "1")  # a change whose wake-up never came
            assert bus.wait("quiet", seen, 15), "the probe did not see the change"
    finally:
        bus.close()


def test_the_probe_still_hands_a_call_the_answer_whose_wake_up_was_lost(processes, redis):
    a, b = processes
    b.channel.open("s1", "toolu_1.run", "toolu_1", None)
    answers = _waiting(b.channel, "s1")
    time.sleep(3)  # the call waits, its probe already backed off
    # An answer's copy lands in the pending hash, its message to the waiting process is lost (published nowhere).
    pending_id = redis_client.Redis.from_url(redis.url, decode_responses=True).hget(_pending_key("s1"), "pending_id")
    sealed = a.bus.seal(json.dumps({"ok": True, "output": "late"}), _copy_purpose("s1", pending_id))
    a.channel._keep_copy(keys=[_pending_key("s1"), _request_key("toolu_1.run"), _answered_key("s1")],
                         args=[pending_id, sealed, "nx:nowhere", "lost", "toolu_1.run", "toolu_1", ANSWERED_MEMORY,
                               KEEP_S])
    _until(answers, 20)
    assert answers and answers[0].result == {"ok": True, "output": "late"}


def test_a_call_waiting_for_a_host_on_another_process_does_not_look_it_up_every_second(processes, redis):
    a, b = processes
    admin = redis_client.Redis.from_url(redis.url)
    connection = a.hosts.register("alice", HELLO, lambda message: None)
    b.channel.open("s2", "toolu_2.run", "toolu_2", connection.host_id)
    answers = _waiting(b.channel, "s2", HostPresence(b.hosts, connection.host_id))
    time.sleep(1.5)
    before = _calls(admin, "mget")  # a remote host's lookup (its owner and record) is one MGET
    time.sleep(6)
    # Looked up every second before (6 lookups); now the host's closing wakes the call, which looks rarely.
    assert _calls(admin, "mget") - before <= 2
    assert not answers
    a.hosts.unregister(connection)  # its socket closed on A: the call on B hears it and fails after the grace
    waited = _until(answers, 30)
    assert answers and answers[0].missing == "gone"
    assert waited < RECONNECT_GRACE_S + 3, f"the call failed {waited:.1f} s after its host left"
