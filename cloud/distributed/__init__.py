"""Many server processes, one service: the Redis-backed rendezvous, run streams and host routing.

`NEXUS_REDIS_URL` switches them on (`redis://host:6379/0`); without it the in-process implementations
serve one process. Either way, every process sweeps for runs whose lease expired (their process died) and
ends them cleanly, every dangling tool call answered.
"""
from __future__ import annotations

import logging
import os
import threading
from typing import TYPE_CHECKING

from cloud.hostlink import HostDirectory
from cloud.prompts import message
from cloud.rendezvous import ResultChannel, ToolResultChannel
from cloud.runs import LEASE_TTL_S, RunRegistry

if TYPE_CHECKING:
    from cloud.store import Store

log = logging.getLogger(__name__)

REDIS_URL_ENV = "NEXUS_REDIS_URL"
LEASE_ENV = "NEXUS_RUN_LEASE_S"  # how long a dead process's run stays `running` before another ends it


def lease_ttl_s() -> float:
    value = os.environ.get(LEASE_ENV)
    try:
        return max(1.0, float(value)) if value else LEASE_TTL_S
    except ValueError:
        raise ValueError(f"{LEASE_ENV}: expected a number of seconds, got {value!r}") from None


def redis_url() -> str | None:
    return os.environ.get(REDIS_URL_ENV) or None


def build_parts(store: Store, url: str | None = None) -> tuple[HostDirectory, ResultChannel, RunRegistry]:
    """The host directory, rendezvous and run registry: in Redis when a URL is given, else in-process. Of the
    store, the rendezvous gets the recorded answers and the registry the run leases."""
    url = url if url is not None else redis_url()
    if not url:
        return HostDirectory(), ToolResultChannel(), RunRegistry(store.leases, lease_ttl_s=lease_ttl_s())
    from cloud.distributed.bus import Bus
    from cloud.distributed.hosts import RedisHostDirectory
    from cloud.distributed.redis_rendezvous import RedisToolResultChannel
    from cloud.distributed.redis_runs import RedisRunRegistry

    bus = Bus(url)
    return (RedisHostDirectory(bus), RedisToolResultChannel(bus, store.deliveries),
            RedisRunRegistry(bus, store.leases, lease_ttl_s=lease_ttl_s()))


def start_recovery_sweep(store: Store, hosts: HostDirectory, runs: RunRegistry,
                         interval_s: float | None = None) -> threading.Thread:
    """Every `interval_s` (half the lease time), end the runs whose lease expired (a process died mid-run, on any machine)."""
    from cloud.assembly import recover_interrupted_runs

    every = interval_s if interval_s is not None else lease_ttl_s() / 2

    def sweep() -> None:
        while not runs.stopped.wait(every):
            try:
                for session_id in recover_interrupted_runs(store, hosts):
                    log.warning("run %s: its process stopped mid-run; ended here", session_id)
                    runs.end_abandoned(session_id, message("server_restarted"))
            except Exception:  # the next sweep tries again
                log.exception("recovery sweep failed")

    thread = threading.Thread(target=sweep, name="run-recovery", daemon=True)
    runs.background.append(thread)  # runs.close() stops it and can wait for it
    thread.start()
    return thread
