"""Many run starts fired at once (issue 23, M4): chat messages over real HTTP and MCP `run_task` calls,
released together by a barrier, so a check-then-register quota would let more than its limit through."""
from __future__ import annotations

import threading
from typing import Any

import anyio
import requests

from tests.mcp.support import http_session
from tests.support.client import Client
from tests.support.waiting import wait_until

PARALLEL = 40
LIMIT = 8
# Runs must stay in progress while the others start: a tool call to a host that never answers.
SETTINGS = {"quota_concurrent_runs": LIMIT, "quota_sessions_per_hour": 0, "quota_requests_per_minute": 0,
            "keepalive_s": 0.2, "tool_timeout_s": 300.0}


def post_messages_at_once(targets: list[tuple[Client, str]]) -> list[int]:
    """POST a message to each (client, session) at the same moment; the status codes, in order."""
    barrier = threading.Barrier(len(targets))
    statuses: list[int] = [0] * len(targets)

    def post(index: int, client: Client, session_id: str) -> None:
        barrier.wait(60)
        response = requests.post(f"{client.url}/api/sessions/{session_id}/messages", json={"text": "go"},
                                 headers={"Authorization": f"Bearer {client.token}"}, stream=True, timeout=60)
        statuses[index] = response.status_code
        if response.status_code == 429:
            assert response.json()["quota"] == "concurrent runs", response.text
        response.close()  # a run needs no listener: it goes on

    threads = [threading.Thread(target=post, args=(i, c, s)) for i, (c, s) in enumerate(targets)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return statuses


def run_tasks_at_once(url: str, token: str, task: dict[str, Any], count: int) -> list[Any]:
    """`count` MCP run_task calls on one client session, started together; their results."""
    async def scenario() -> list[Any]:
        results: list[Any] = [None] * count
        async with http_session(url, token) as session:
            go = anyio.Event()

            async def call(index: int) -> None:
                await go.wait()
                results[index] = await session.call_tool("run_task", {**task, "wait_s": 0})

            async with anyio.create_task_group() as group:
                for index in range(count):
                    group.start_soon(call, index)
                await anyio.sleep(0.2)
                go.set()
        return results

    return anyio.run(scenario)


def cancel_all(client: Client, session_ids: list[str]) -> None:
    for session_id in session_ids:
        client.call("POST", f"/api/sessions/{session_id}/cancel")
    wait_until(lambda: client.call("GET", "/api/runs").json()["runs"] == [], timeout=60)
