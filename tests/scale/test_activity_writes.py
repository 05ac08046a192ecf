"""Issue 29 item 4: a host's activity (busy, held, idle: what the host lists show on every process) goes to Redis
without the run waiting for Redis's reply: the write costs the run's thread a socket send, not a round trip. The
writes land in the order noted, and another process reads them."""
from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from cloud.distributed.bus import Bus
from cloud.distributed.hosts import RedisHostDirectory
from cloud.hostlink import BUSY, HELD, HostActivity
from tests.support.waiting import wait_until


@pytest.fixture
def two_directories(redis) -> Iterator[tuple[RedisHostDirectory, RedisHostDirectory]]:
    with ExitStack() as stack:
        directories = []
        for name in ("proc-a", "proc-b"):
            bus = Bus(redis.url, process=name)
            stack.callback(bus.close)
            directories.append(RedisHostDirectory(bus))
        yield directories[0], directories[1]


def test_activity_noted_on_one_process_is_read_on_another_in_the_order_noted(two_directories):
    a, b = two_directories
    now = time.time()
    b.note_activity("h1", HostActivity(BUSY, "s1", "c1", "c1.x", now, now + 60))
    wait_until(lambda: a.activity("h1").state == BUSY, timeout=10)
    b.note_activity("h1", HostActivity(HELD, "s1", "c1", "c1.x", now), replacing="c1.x")
    b.note_activity("h1", HostActivity(), replacing="another.x")  # not the current request's: no change
    b.note_activity("h1", HostActivity(BUSY, "s1", "c2", "c2.x", now, now + 60))
    b.note_activity("h1", HostActivity(), replacing="c2.x")
    b.note_activity("h2", HostActivity(HELD, "s2", "c3", "c3.x", now))
    wait_until(lambda: a.activity("h2").state == HELD, timeout=10)
    assert a.activity("h1").state == "idle" and b.activity("h1").state == "idle"


def test_noting_activity_does_not_wait_for_redis(two_directories, redis):
    a, b = two_directories
    now = time.time()
    b.note_activity("h1", HostActivity(BUSY, "s1", "c1", "c1.x", now, now + 60))
    wait_until(lambda: a.activity("h1").state == BUSY, timeout=10)
    assert redis.process is not None
    redis.process.send_signal(signal.SIGSTOP)  # Redis answers nothing now
    try:
        noted = threading.Thread(target=b.note_activity, args=("h1", HostActivity(HELD, "s1", "c1", "c1.x", now)),
                                 kwargs={"replacing": "c1.x"}, daemon=True)
        noted.start()
        noted.join(10)
        assert not noted.is_alive(), "noting the activity waited for Redis"
    finally:
        redis.process.send_signal(signal.SIGCONT)
    wait_until(lambda: a.activity("h1").state == HELD, timeout=10)
