"""MCP benchmarks (run by hand; print figures side by side).

    python bench/bench_mcp.py peers [--calls 50] [--ifc FILE] [--gap S]
    python bench/bench_mcp.py overhead [--calls 500] [--storeys 1]

peers     NexusAI (`nexus mcp --ifc FILE`), IfcOpenShell's `ifcmcp` (PyPI ifcopenshell-mcp 0.9.0) and `ifc-mcp`
          (PyPI ifc-mcp 0.2.11) on the same file, each a stdio server driven by the official `mcp` client of
          this checkout, with the same read: every door's GlobalId and Name (NexusAI: execute_data_collection;
          ifcmcp: ifc_select "IfcDoor" after ifc_load; ifc-mcp: search_elements ifc_class=IfcDoor). The peers
          are installed in virtualenvs of their own under .cache (pip, first run only). The calls are made
          round-robin (one to each server in turn), so the machine's other load falls on all three alike.
          Printed: the first door read after the server was started (its start, its model opened), then
          p50/p99/mean of the calls after it, and NexusAI's ratio to ifcmcp (the target is 1.5 or less).
          --gap S pauses S seconds before each round (an agent's thinking between calls); 0: back to back.
overhead  The same tool call, `execute_data_collection` with `print(1)`, on the same IFC host (a real host
          process on the sample building, over the orchestrator's loopback websocket), two ways, interleaved:
          the loop's own tool code in-process (cloud.tools.dispatch.execute_tool), and the official client over
          the deployment's streamable HTTP endpoint ending in the same execute_tool: the MCP layer's added time.
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


def overhead(args: argparse.Namespace) -> None:
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
                assert not done.value.part.get("is_error"), done.value.part
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


ROOT = Path(__file__).resolve().parents[1]
PEERS = {"ifcmcp": "ifcopenshell-mcp[mcp]==0.9.0", "ifc-mcp": "ifc-mcp==0.2.11"}
DOORS = "for door in model.by_type('IfcDoor'):\n    print(door.GlobalId, door.Name)"


def peer_python(name: str) -> Path:
    """The peer's own virtualenv under .cache, made and filled on first use."""
    import subprocess
    import sys

    venv = ROOT / ".cache" / f"peer-{name}-venv"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    probe = "import ifcmcp, mcp.server.fastmcp" if name == "ifcmcp" else "import ifc_mcp"
    if subprocess.run([str(python), "-c", probe], capture_output=True).returncode != 0:
        print(f"installing {PEERS[name]} into {venv} ...", flush=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", PEERS[name]],
                       check=True)
    return python


def peers(args: argparse.Namespace) -> None:
    import os
    import sys
    from contextlib import AsyncExitStack

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from ifc_host.sample import write_sample_model

    tmp = Path(tempfile.mkdtemp(prefix="bench_mcp_peers_"))
    model = Path(args.ifc) if args.ifc else tmp / "sample.ifc"
    if not args.ifc:
        write_sample_model(str(model), storeys=args.storeys)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    servers = {
        "NexusAI": (StdioServerParameters(command=sys.executable, args=[
            "-m", "cloud.cli", "mcp", "--ifc", str(model), "--out", str(tmp / "out.ifc"), "--db", str(tmp / "db")],
            env=env, cwd=str(ROOT)), None, ("execute_data_collection", {"code": DOORS})),
        "ifcmcp": (StdioServerParameters(command=str(peer_python("ifcmcp")), args=["-m", "ifcmcp"], env=env),
                   ("ifc_load", {"path": str(model)}), ("ifc_select", {"query": "IfcDoor"})),
        "ifc-mcp": (StdioServerParameters(command=str(peer_python("ifc-mcp")), args=[
            "-m", "ifc_mcp.cli", "serve", str(model), "--quiet"], env=env), None,
            ("search_elements", {"ifc_class": "IfcDoor"})),
    }
    first: dict[str, float] = {}
    times: dict[str, list[float]] = {name: [] for name in servers}

    async def read(session: ClientSession, name: str, call: tuple[str, dict]) -> None:
        result = await session.call_tool(*call)
        assert not result.is_error, (name, result.content)

    async def run() -> None:
        async with AsyncExitStack() as stack:
            sessions: dict[str, ClientSession] = {}
            for name, (params, load, door_read) in servers.items():
                started = time.perf_counter()
                errlog = stack.enter_context((tmp / f"{name}.stderr").open("w"))
                try:
                    streams = await stack.enter_async_context(stdio_client(params, errlog=errlog))
                    session = await stack.enter_async_context(ClientSession(*streams))
                    await session.initialize()
                    await session.list_tools()
                    if load:
                        await read(session, name, load)
                    await read(session, name, door_read)
                except Exception as exc:
                    errlog.flush()
                    raise SystemExit(f"{name} failed: {exc}\n{(tmp / f'{name}.stderr').read_text()[-3000:]}") from exc
                first[name] = time.perf_counter() - started
                sessions[name] = session
            for _ in range(3):  # warm-up
                for name, session in sessions.items():
                    await read(session, name, servers[name][2])
            for _ in range(args.calls):
                if args.gap:
                    await anyio.sleep(args.gap)
                for name, session in sessions.items():
                    started = time.perf_counter()
                    await read(session, name, servers[name][2])
                    times[name].append(time.perf_counter() - started)

    load_before = os.getloadavg()[0]
    anyio.run(run)
    print(f"{args.calls} door reads per server, round-robin, {args.gap:g} s between rounds, official mcp client over stdio, on {model.name} "
          f"({model.stat().st_size / 1e6:.1f} MB); load average {load_before:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after ({os.cpu_count()} cores)")
    print(f"{'':10}{'first s':>10}{'p50 ms':>10}{'p99 ms':>10}{'mean ms':>10}")
    for name, values in times.items():
        print(f"{name:10}{first[name]:10.2f}{percentile(values, 0.5) * 1e3:10.2f}"
              f"{percentile(values, 0.99) * 1e3:10.2f}{statistics.fmean(values) * 1e3:10.2f}")
    nexus, peer = times["NexusAI"], times["ifcmcp"]
    print(f"NexusAI / ifcmcp: p50 {percentile(nexus, 0.5) / percentile(peer, 0.5):.2f}x, "
          f"p99 {percentile(nexus, 0.99) / percentile(peer, 0.99):.2f}x (target: 1.5x or less)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", nargs="?", choices=("peers", "overhead"), default="peers")
    parser.add_argument("--calls", type=int, default=None, help="calls per way (peers: 50, overhead: 500)")
    parser.add_argument("--storeys", type=int, default=1, help="storeys of the sample building")
    parser.add_argument("--ifc", help="peers: an IFC file to read instead of the sample building")
    parser.add_argument("--gap", type=float, default=0.0, help="peers: seconds between rounds (0: back to back)")
    args = parser.parse_args()
    if args.what == "peers":
        args.calls = args.calls or 50
        peers(args)
    else:
        args.calls = args.calls or 500
        overhead(args)


if __name__ == "__main__":
    main()
