"""Two server instances on one PostgreSQL and one Redis: alice's host on A, her clients on A and on B."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from tests.support.client import Client
from tests.support.server import RunningServer
from tests.support.spine import BackgroundRun
from tests.support.test_host import TestHost
from tests.support.waiting import wait_until


@dataclass
class HostOnA:
    host: TestHost
    on_a: Client
    on_b: Client


@contextmanager
def host_on_a(a: RunningServer, b: RunningServer) -> Iterator[HostOnA]:
    """alice's test host connected to instance A, with alice's clients on A and on B; the host stops on exit."""
    token = a.token("alice")
    host = TestHost(a.ws_url, token).start()
    try:
        yield HostOnA(host, Client(a.url, token), Client(b.url, token))
    finally:
        host.stop()


def held_under_ask(pair: HostOnA, spec: str, text: str) -> tuple[str, BackgroundRun, str]:
    """A session under `ask` whose run, driven on B, holds a change A lists as awaiting a decision:
    (session id, the run, the held tool call's id)."""
    session_id = pair.on_b.new_session(pair.host.host_id, spec)
    assert pair.on_b.call("PUT", f"/api/sessions/{session_id}/policy", json={"policy": "ask"}).status_code == 200
    run = BackgroundRun(pair.on_b, session_id, text)
    call_id = run.wait_for("ToolCall")["metadata"]["tool_call_id"]
    wait_until(lambda: any(r["awaiting_decision"] for r in pair.on_a.call("GET", "/api/runs").json()["runs"]),
               timeout=15)
    return session_id, run, call_id
