"""MCP front door benchmark (run by hand; prints figures).

    python bench/bench_mcp.py [--calls 500] [--storeys 1]

The same tool call, `execute_data_collection` with `print(1)`, on the same IFC host (a real host process
on the sample building, over the orchestrator's loopback websocket), two ways, interleaved call by call:

loop   the loop's own tool code called in-process (cloud.tools.dispatch.execute_tool with a ToolContext
       over the session's WebSocketHostLink): what a run of the agentic loop pays for the call.
mcp    the official `mcp` client calling the tool over the deployment's streamable HTTP endpoint
       (bearer token, JSON-RPC over HTTP/SSE on loopback, the audit row, the worker thread that hands the
       tool's chunks to the async side), ending in the same execute_tool.

Printed: p50/p99/mean of each, and the MCP call's added time (mcp - loop) at p50/p99. Client and server
share this process (and its GIL), so the added time is conservative.
"""
from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import threading
import time
from pathlib import Path

import anyio

CODE = "print(1)"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--storeys", type=int, default=1)
    args = parser.parse_args()
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request would bury the figures

    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    from cloud.child_host import start_ifc_host
    from cloud.config import Settings
    from cloud.hostlink import session_link
    from cloud.mcp.http import start_mcp_http
    from cloud.server import start_server
    from cloud.session import Session, SessionState
    from cloud.store import Store
    from cloud.tools.base import ToolContext
    from cloud.tools.dispatch import execute_tool
    from cloud.web.app import create_app
    from ifc_host.sample import write_sample_model

    tmp = Path(tempfile.mkdtemp(prefix="bench_mcp_"))
    model = tmp / "sample.ifc"
    write_sample_model(str(model), storeys=args.storeys)
    store = Store(tmp / "nexus.db")
    app = create_app(store, Settings())
    state = app.extensions["nexus"]
    http = start_server(app)
    endpoint = start_mcp_http(state)
    host = start_ifc_host(str(model), http.url, store.auth.create_token("bench", scope="host"), str(tmp / "out.ifc"))
    try:
        deadline = time.monotonic() + 60
        while not state.hosts.for_user("bench") and time.monotonic() < deadline:
            time.sleep(0.05)
        host_id = state.hosts.for_user("bench")[0].host_id
        session_id = store.sessions.create_session("bench", host_id, "bench", {})
        row = store.sessions.get_session(session_id)
        assert row is not None
        session = Session(session_id, "bench", host_id, "bench", SessionState(), [])
        ctx = ToolContext(store=store, host=session_link(state.hosts, state.channel, row), settings=state.settings,
                          session=session, cancel=threading.Event(), image_max_px=1568, save_state=lambda: None)

        def loop_call(n: int) -> float:
            started = time.perf_counter()
            tool = execute_tool(ctx, {"id": f"b{n}", "name": "execute_data_collection", "input": {"code": CODE}})
            try:
                while True:
                    next(tool)
            except StopIteration as done:
                assert not done.value["is_error"], done.value
            return time.perf_counter() - started

        token = store.auth.create_token("bench")
        loop_times: list[float] = []
        mcp_times: list[float] = []

        async def run() -> None:
            client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
            async with client, streamable_http_client(endpoint.url, http_client=client) as streams:
                async with ClientSession(streams[0], streams[1]) as mcp:
                    await mcp.initialize()
                    for n in range(10):  # warm-up, both ways
                        await mcp.call_tool("execute_data_collection", {"code": CODE})
                        await anyio.to_thread.run_sync(loop_call, -n - 1)
                    for n in range(args.calls):
                        loop_times.append(await anyio.to_thread.run_sync(loop_call, n))
                        started = time.perf_counter()
                        result = await mcp.call_tool("execute_data_collection", {"code": CODE})
                        mcp_times.append(time.perf_counter() - started)
                        assert not result.is_error, result

        anyio.run(run)
    finally:
        host.stop()
        endpoint.shutdown()
        http.shutdown()

    added = [m - ref for m, ref in zip(mcp_times, loop_times, strict=True)]
    print(f"{args.calls} calls of execute_data_collection({CODE!r}) on the sample building ({args.storeys} storeys)")
    print(f"{'':8}{'p50 ms':>10}{'p99 ms':>10}{'mean ms':>10}")
    for name, values in (("loop", loop_times), ("mcp", mcp_times), ("added", added)):
        print(f"{name:8}{percentile(values, 0.5) * 1e3:10.2f}{percentile(values, 0.99) * 1e3:10.2f}"
              f"{statistics.fmean(values) * 1e3:10.2f}")


if __name__ == "__main__":
    main()
