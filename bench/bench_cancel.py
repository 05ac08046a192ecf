"""Cancel soak benchmark (issue 22; run by hand; prints figures).

    python bench/bench_cancel.py [--api 50] [--mcp 50] [--isolation fork|spawn] [--storeys 1]

A real orchestrator (HTTP on loopback) and a real IFC host process on the sample building. Each round starts
a call whose automation sleeps 20 s and then renames every door, waits a random moment (0.2 to 3 s after the
host reports the script busy), cancels it, and then asks the host for the next call (a collect that counts
the doors). Two ways to cancel, each its own series:

- API: a chat run (POST /api/sessions/{id}/messages, streamed), cancelled by POST /api/sessions/{id}/cancel;
  the next call comes from another session.
- MCP: the official `mcp` client over the deployment's streamable HTTP endpoint; the client abandons the
  call (its cancel scope is cancelled, so it sends notifications/cancelled); the next call is the same
  client's.

Checked every round: the cancelled call's result says "cancelled while running: rolled back" (or, when the
cancel came while the script's process was still loading the model, "cancelled before it ran"), the next
call is served (not refused as busy) within 2 s of the cancel, and at the end the model file is
byte-identical. The plain call (the floor) is timed in a series of its own on an idle host before the
cancels. The load average is printed at the start and the end (the machine may be shared).

Printed side by side, p50/p99 in ms:
cancel -> idle       from the cancel until GET /api/hosts shows the host idle
cancel -> next call  from the cancel until the next call's result (the time to a free host)
plain next call      the same collect on an idle host, no cancel before it (the floor)
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

SLEEP_THEN_RENAME = ("import time\ntime.sleep(20)\n"
                     "for door in model.by_type('IfcDoor'):\n    door.Name = 'Cancelled rename'\n")
COUNT_DOORS = "print(len(model.by_type('IfcDoor')))"
FREE_WITHIN_S = 2.0
# What a cancelled call's result may truthfully say: the script was killed, or (spawn: its process was still
# loading the model) it never started.
OUTCOMES = {"killed while running": "cancelled while running: rolled back",
            "refused before it ran": "cancelled before it ran"}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


class Api:
    def __init__(self, url: str, token: str) -> None:
        self.url, self.headers = url, {"Authorization": f"Bearer {token}"}

    def call(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        return requests.request(method, self.url + path, headers=self.headers, timeout=120, **kwargs)

    def session(self, host_id: str, model: str) -> str:
        response = self.call("POST", "/api/sessions", json={"host_id": host_id, "model": model})
        response.raise_for_status()
        return response.json()["session_id"]

    def run(self, session_id: str, text: str, on_chunk: Any = None) -> list[dict[str, Any]]:
        """Stream one run to its end; its chunks."""
        chunks, kind = [], None
        with self.call("POST", f"/api/sessions/{session_id}/messages", json={"text": text}, stream=True) as response:
            response.raise_for_status()
            for line in response.iter_lines(decode_unicode=True):
                if line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: ") and kind:
                    chunk = json.loads(line[6:])
                    chunks.append(chunk)
                    if on_chunk is not None:
                        on_chunk(chunk)
        return chunks

    def activity(self, host_id: str) -> str:
        hosts = self.call("GET", "/api/hosts").json()["hosts"]
        return next(h["activity"]["state"] for h in hosts if h["host_id"] == host_id)


def script(folder: Path, name: str, turns: list[list[dict[str, Any]]]) -> str:
    path = folder / f"{name}.json"
    path.write_text(json.dumps({"turns": turns}))
    return f"scripted:{path}"


def tool(name: str, code: str) -> list[dict[str, Any]]:
    return [{"tool_call": {"name": name, "input": {"code": code}}}]


def tool_result(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    return next(c for c in chunks if c["type"] == "Metadata" and c["metadata"].get("kind") == "tool_result")


def stream_into(api: Api, session_id: str, chunks: list[dict[str, Any]], at_host: threading.Event) -> None:
    """Stream the slow run into `chunks`; `at_host` is set once its tool call has streamed."""
    chunks.extend(api.run(session_id, "rename the doors slowly",
                          lambda chunk: chunk["type"] == "ToolCall" and at_host.set()))


@dataclass
class Series:
    name: str
    to_idle: list[float] = field(default_factory=list)
    to_next: list[float] = field(default_factory=list)
    outcomes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    failures: list[str] = field(default_factory=list)

    def judge(self, n: int, cancelled_text: str, next_ok: bool, next_text: str) -> None:
        said = next((kind for kind, words in OUTCOMES.items() if words in cancelled_text), None)
        if said is None:
            self.failures.append(f"{self.name} round {n}: the cancelled call's result says {cancelled_text[:200]!r}")
        else:
            self.outcomes[said] += 1
        if not next_ok:
            self.failures.append(f"{self.name} round {n}: the next call failed: {next_text[:200]!r}")
        if self.to_next[-1] > FREE_WITHIN_S:
            self.failures.append(f"{self.name} round {n}: the next call was served {self.to_next[-1]:.2f} s after "
                                 "the cancel")


def wait_idle(api: Api, host_id: str, since: float) -> float:
    while api.activity(host_id) != "idle" and time.monotonic() - since < 30:
        time.sleep(0.005)
    return time.monotonic() - since


def api_series(api: Api, host_id: str, slow: str, count: str, rounds: int) -> Series:
    series = Series("API")
    for n in range(rounds):
        session_id = api.session(host_id, slow)
        at_host = threading.Event()
        chunks: list[dict[str, Any]] = []
        runner = threading.Thread(target=stream_into, args=(api, session_id, chunks, at_host), daemon=True)
        runner.start()
        at_host.wait(60)
        while api.activity(host_id) != "busy":
            time.sleep(0.01)
        time.sleep(random.uniform(0.2, 3.0))
        cancelled_at = time.monotonic()
        api.call("POST", f"/api/sessions/{session_id}/cancel").raise_for_status()
        series.to_idle.append(wait_idle(api, host_id, cancelled_at))
        result = tool_result(api.run(api.session(host_id, count), "count the doors"))
        series.to_next.append(time.monotonic() - cancelled_at)
        runner.join(30)
        cancelled = tool_result(chunks) if chunks else {"content": "(no tool result)"}
        series.judge(n, cancelled["content"], bool(result["metadata"].get("ok")), result["content"])
    return series


def mcp_series(api: Api, store: Any, host_id: str, url: str, token: str, rounds: int) -> Series:
    """Cancels through MCP notifications/cancelled, sent by the official client when it abandons a call."""
    import anyio
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    series = Series("MCP")

    async def scenario() -> None:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with http, streamable_http_client(url, http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                await session.call_tool("execute_data_collection", {"code": COUNT_DOORS})  # warm
                for n in range(rounds):
                    seen = {row["tool_call_id"] for row in store.ledger.audit(user_name="bench", kind="mcp_call", limit=1000)}
                    returned: list[Any] = []
                    async with anyio.create_task_group() as group:
                        scope = anyio.CancelScope()

                        async def call(scope: anyio.CancelScope, returned: list[Any]) -> None:
                            with scope:
                                returned.append(await session.call_tool("execute_task_automation",
                                                                        {"code": SLEEP_THEN_RENAME}))

                        group.start_soon(call, scope, returned)
                        while await anyio.to_thread.run_sync(api.activity, host_id) != "busy":
                            await anyio.sleep(0.01)
                        await anyio.sleep(random.uniform(0.2, 3.0))
                        cancelled_at = time.monotonic()
                        scope.cancel()  # the client sends notifications/cancelled
                    series.to_idle.append(await anyio.to_thread.run_sync(wait_idle, api, host_id, cancelled_at))
                    result = await session.call_tool("execute_data_collection", {"code": COUNT_DOORS})
                    series.to_next.append(time.monotonic() - cancelled_at)
                    saved = [row for row in store.ledger.audit(user_name="bench", kind="mcp_call", limit=1000)
                             if row["tool_call_id"] not in seen]
                    texts = [str(store.results.get_result(row["session_id"], row["tool_call_id"])) for row in saved]
                    cancelled = next((t for t in texts if "cancelled" in t), f"(no cancelled result among {len(texts)})")
                    if returned:
                        cancelled = f"(the call returned instead of being cancelled: {returned[0]})"
                    series.judge(n, cancelled, not result.is_error, str(result.content)[:200])

    anyio.run(scenario)
    return series


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--api", type=int, default=50, help="cancels through the API (0: none)")
    parser.add_argument("--mcp", type=int, default=50, help="cancels through MCP notifications/cancelled (0: none)")
    parser.add_argument("--plain", type=int, default=20, help="plain calls timed for the floor")
    parser.add_argument("--isolation", choices=("fork", "spawn"), default=None)
    parser.add_argument("--storeys", type=int, default=1)
    parser.add_argument("--seed", type=int, default=22)
    args = parser.parse_args()
    random.seed(args.seed)

    tmp = Path(tempfile.mkdtemp(prefix="bench_cancel_"))
    scripts = tmp / "scripts"
    scripts.mkdir()
    os.environ["NEXUS_SCRIPTED_DIRS"] = str(scripts)

    from cloud.child_host import start_ifc_host
    from cloud.config import Settings
    from cloud.mcp.http import start_mcp_http
    from cloud.server import start_server
    from cloud.store import Store
    from cloud.web.app import create_app
    from ifc_host.sample import write_sample_model

    load_before = os.getloadavg()
    model = tmp / "sample.ifc"
    write_sample_model(str(model), storeys=args.storeys)
    before = hashlib.sha256(model.read_bytes()).hexdigest()
    store = Store(tmp / "nexus.db")
    app = create_app(store, Settings(tool_timeout_s=120.0, script_timeout_s=60.0))
    state = app.extensions["nexus"]
    http = start_server(app)
    endpoint = start_mcp_http(state) if args.mcp else None
    host = start_ifc_host(str(model), http.url, store.auth.create_token("bench", scope="host"), None, args.isolation)
    slow = script(scripts, "slow", [tool("execute_task_automation", SLEEP_THEN_RENAME), [{"text": "never"}]])
    count = script(scripts, "count", [tool("execute_data_collection", COUNT_DOORS), [{"text": "counted"}]])
    token = store.auth.create_token("bench")
    api = Api(http.url, token)
    plain: list[float] = []
    series: list[Series] = []
    try:
        deadline = time.monotonic() + 120
        while not state.hosts.for_user("bench") and time.monotonic() < deadline:
            time.sleep(0.05)
        host_id = state.hosts.for_user("bench")[0].host_id

        def next_call() -> float:
            started = time.monotonic()
            result = tool_result(api.run(api.session(host_id, count), "count the doors"))
            assert result["metadata"].get("ok"), result["content"]
            return time.monotonic() - started

        for _ in range(3):  # warm-up: the first calls import and fork what later ones reuse
            next_call()
        for _ in range(args.plain):
            plain.append(next_call())
            time.sleep(0.5)  # an idle host between calls, as a person asking again would find it
        if args.api:
            series.append(api_series(api, host_id, slow, count, args.api))
        if args.mcp and endpoint is not None:
            series.append(mcp_series(api, store, host_id, endpoint.url, token, args.mcp))
    finally:
        host.stop()
        if endpoint is not None:
            endpoint.shutdown()
        http.shutdown()
        state.runs.close()
    after = hashlib.sha256(model.read_bytes()).hexdigest()
    load_after = os.getloadavg()
    failures = [failure for s in series for failure in s.failures]
    if after != before:
        failures.append("the model file changed")

    print(f"cancels at random moments during a 20 s automation on the sample building ({args.storeys} storeys, "
          f"isolation {args.isolation or 'default'}); file byte-identical: {after == before}")
    print(f"load average (1/5/15 min): {load_before[0]:.1f}/{load_before[1]:.1f}/{load_before[2]:.1f} at the start, "
          f"{load_after[0]:.1f}/{load_after[1]:.1f}/{load_after[2]:.1f} at the end (2 cores)")
    print(f"{'':28}{'n':>5}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}")
    rows = [(f"{s.name}: {label}", values) for s in series
            for label, values in (("cancel -> idle", s.to_idle), ("cancel -> next call", s.to_next))]
    for name, values in [*rows, ("plain next call", plain)]:
        if values:
            print(f"{name:28}{len(values):>5}{percentile(values, 0.5) * 1e3:10.0f}{percentile(values, 0.99) * 1e3:10.0f}"
                  f"{max(values) * 1e3:10.0f}")
    for s in series:
        print(f"{s.name} cancelled calls: " + ", ".join(f"{n} {kind}" for kind, n in s.outcomes.items())
              + f"; next call within {FREE_WITHIN_S:g} s of the cancel: "
              f"{sum(t <= FREE_WITHIN_S for t in s.to_next)}/{len(s.to_next)}")
    for failure in failures:
        print("FAIL", failure)


if __name__ == "__main__":
    main()
