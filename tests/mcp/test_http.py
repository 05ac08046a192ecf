"""The deployment's streamable HTTP MCP endpoint: bearer tokens, per-user hosts, the chat page deciding for a
client without elicitation, and `nexus mcp --server` bridging stdio to it. Real IFC hosts in their own
processes, the official mcp client."""
from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import ifcopenshell
import mcp_types as types
import pytest
import requests
from mcp.shared.exceptions import MCPError

from cloud.child_host import start_ifc_host
from cloud.mcp.http import start_mcp_http
from tests.mcp.support import http_session, stdio_session, text_of
from tests.support.server import RunningServer, running_server

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "probe", "version": "1"}}}


@pytest.fixture(scope="module")
def deployment(tmp_path_factory) -> Iterator[tuple[RunningServer, str, dict[str, str], dict[str, Path]]]:
    """An orchestrator with its MCP endpoint, and an IFC host for each of alice and bob."""
    from ifc_host.sample import write_sample_model

    tmp = tmp_path_factory.mktemp("mcp_http")
    with running_server(tmp) as server:
        endpoint = start_mcp_http(server.state, chat_url=server.url)
        hosts, outs = [], {}
        try:
            for user in ("alice", "bob"):
                model = tmp / f"{user}.ifc"
                write_sample_model(str(model), storeys=1)
                outs[user] = tmp / f"{user}-out.ifc"
                hosts.append(start_ifc_host(str(model), server.url, server.state.store.create_token(user, scope="host"),
                                            str(outs[user])))
                server.wait_for_host(user, timeout=60)
            host_ids = {user: server.wait_for_host(user) for user in ("alice", "bob")}
            yield server, endpoint.url, host_ids, outs
        finally:
            for host in hosts:
                host.stop()
            endpoint.shutdown()


def test_no_token_a_wrong_token_and_a_host_token_get_401(deployment):
    server, url, _, _ = deployment
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    assert requests.post(url, json=INITIALIZE, headers=headers, timeout=10).status_code == 401
    wrong = {**headers, "Authorization": "Bearer not-a-token"}
    assert requests.post(url, json=INITIALIZE, headers=wrong, timeout=10).status_code == 401
    host_only = {**headers, "Authorization": f"Bearer {server.state.store.create_token('alice', scope='host')}"}
    assert requests.post(url, json=INITIALIZE, headers=host_only, timeout=10).status_code == 401
    good = {**headers, "Authorization": f"Bearer {server.token('alice')}"}
    assert requests.post(url, json=INITIALIZE, headers=good, timeout=10).status_code == 200


def test_each_user_reaches_only_their_own_host(deployment):
    server, url, host_ids, _ = deployment

    async def scenario(user: str, other: str):
        async with http_session(url, server.token(user)) as session:
            listed = await session.call_tool("list_hosts", {})
            mine = await session.call_tool("execute_data_collection",
                                           {"code": "print(model.by_type('IfcProject')[0].id())"})
            theirs = await session.call_tool("execute_data_collection",
                                             {"code": "print(1)", "host": host_ids[other]})
            try:
                context = await session.read_resource(f"nexus://hosts/{host_ids[other]}/context")
            except MCPError as exc:  # another user's host is unknown: an error, not a block saying so
                context = exc
            return listed, mine, theirs, context

    for user, other in (("alice", "bob"), ("bob", "alice")):
        listed, mine, theirs, context = anyio.run(scenario, user, other)
        assert [h["host_id"] for h in listed.structured_content["hosts"]] == [host_ids[user]]
        assert not mine.is_error and mine.structured_content["stdout"].strip().isdigit()
        assert theirs.is_error and host_ids[other] in text_of(theirs)
        assert isinstance(context, MCPError) and context.error.code == -32602 and "No host" in context.error.message
    audit = server.state.store.audit(kind="mcp_call", user_name="bob")
    assert any(json.loads(row["code"])["arguments"].get("host") == host_ids["alice"] for row in audit)


def _approvals(server: RunningServer, token: str) -> list[dict[str, Any]]:
    reply = requests.get(f"{server.url}/api/approvals", headers={"Authorization": f"Bearer {token}"}, timeout=10)
    assert reply.status_code == 200, reply.text
    return reply.json()["approvals"]


def _decide_from_the_page(server: RunningServer, token: str, decision: str,
                          decided: list[int]) -> threading.Thread:
    """The chat page's part, over HTTP only: once the person's approvals list shows a held change of an MCP
    call, POST the decision to its session."""
    def decide() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for held in _approvals(server, token):
                if held["tool_call_id"].startswith("mcp_") and held["decidable"]:
                    reply = requests.post(f"{server.url}/api/sessions/{held['session_id']}/approval",
                                          json={"tool_call_id": held["tool_call_id"], "decision": decision},
                                          headers={"Authorization": f"Bearer {token}"}, timeout=10)
                    decided.append(reply.status_code)
                    return
            time.sleep(0.05)

    thread = threading.Thread(target=decide)
    thread.start()
    return thread


def _stream_until_approval_card(server: RunningServer, token: str, session_id: str) -> dict[str, Any]:
    """The chat page's session stream (as the page re-attaches to a running session): its chunks until the
    approval request, whose card offers Keep and Discard."""
    with requests.get(f"{server.url}/api/sessions/{session_id}/stream?after=0", stream=True, timeout=30,
                      headers={"Authorization": f"Bearer {token}"}) as reply:
        assert reply.status_code == 200, reply.text
        for line in reply.iter_lines(decode_unicode=True):
            if line and line.startswith("data:"):
                chunk = json.loads(line[5:]).get("chunk") or json.loads(line[5:])
                if (chunk.get("metadata") or {}).get("kind") == "approval_request":
                    return chunk
    raise AssertionError("the session's stream ended without an approval request")


def test_a_client_without_elicitation_is_answered_at_once_and_the_chat_page_decides(deployment):
    server, url, host_ids, outs = deployment
    store = server.state.store
    token = server.token("alice")
    store.set_user_policy("alice", "ask")
    progress: list[str] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    async def held_call():
        async with http_session(url, token) as session:
            started = time.monotonic()
            held = await session.call_tool("execute_task_automation",
                                           {"code": "model.by_type('IfcDoor')[0].Name = 'PAGE-KEPT'"},
                                           progress_callback=on_progress)
            answered_in = time.monotonic() - started
            refused = await session.call_tool("execute_data_collection", {"code": "print(1)"})
            return held, answered_in, refused

    async def later(call_id: str):
        async with http_session(url, token) as session:  # another connection of the same person
            return await session.call_tool("review_status", {"tool_call_id": call_id, "wait_s": 60})

    try:
        held, answered_in, refused = anyio.run(held_call)
        status = held.structured_content
        assert status["held"] is True and status["review_status"] == "pending", text_of(held)
        session_id = status["decide_at"].rsplit("#session=", 1)[1]
        assert status["decide_at"] == f"{server.url}/#session={session_id}"
        assert held.content[0].text.startswith(f"Held for review: decide at {status['decide_at']}")
        assert any(status["decide_at"] in m for m in progress), progress
        assert answered_in < 30  # not the 15 minutes of the review timeout
        assert refused.is_error and status["decide_at"] in text_of(refused)  # the held change first

        listed = _approvals(server, token)
        assert [(a["session_id"], a["tool_call_id"]) for a in listed] == [(session_id, status["tool_call_id"])]
        assert listed[0]["decidable"] and "PAGE-KEPT" in listed[0]["summary"]
        assert listed[0]["host_id"] == host_ids["alice"] and listed[0]["link"] == f"/#session={session_id}"
        assert _approvals(server, server.token("bob")) == []  # only the user's own
        page_view = requests.get(f"{server.url}/api/sessions/{session_id}",
                                 headers={"Authorization": f"Bearer {token}"}, timeout=10).json()
        assert page_view["running"] is True
        card = _stream_until_approval_card(server, token, session_id)
        assert card["metadata"]["tool_call_id"] == status["tool_call_id"]

        reply = requests.post(f"{server.url}/api/sessions/{session_id}/approval",
                              json={"tool_call_id": status["tool_call_id"], "decision": "keep"},
                              headers={"Authorization": f"Bearer {token}"}, timeout=10)
        assert reply.status_code == 202, reply.text
        decided = anyio.run(later, status["tool_call_id"])
    finally:
        store.set_user_policy("alice", "auto")
    assert decided.structured_content["committed"] is True, text_of(decided)
    assert decided.structured_content["review_status"] == "kept"
    assert decided.structured_content["decision"]["decision"] == "keep"
    assert "PAGE-KEPT" in {d.Name for d in ifcopenshell.open(str(outs["alice"])).by_type("IfcDoor")}
    assert _approvals(server, token) == []
    history = requests.get(f"{server.url}/api/sessions/{session_id}",
                           headers={"Authorization": f"Bearer {token}"}, timeout=10).json()["history"]
    assert any(p.get("id") == status["tool_call_id"] for e in history for p in e.get("content", []))


def test_the_bridge_relays_elicitation_or_leaves_the_decision_to_the_page(deployment, tmp_path):
    server, url, _, outs = deployment
    store = server.state.store
    token = server.token("bob")
    token_file = tmp_path / "token"
    token_file.write_text(token)
    store.set_user_policy("bob", "ask")
    asked: list[str] = []

    async def accept(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"keep": True})

    async def scenario(name: str, **session_args: Any):
        async with stdio_session("--server", url, "--token-file", str(token_file), **session_args) as session:
            return await session.call_tool("execute_task_automation",
                                           {"code": f"model.by_type('IfcDoor')[0].Name = '{name}'"})

    async def outcome(call_id: str):
        async with stdio_session("--server", url, "--token-file", str(token_file)) as session:
            return await session.call_tool("review_status", {"tool_call_id": call_id, "wait_s": 60})

    decided: list[int] = []
    try:
        relayed = anyio.run(functools.partial(scenario, "BRIDGE-KEPT", elicitation_callback=accept))
        page = _decide_from_the_page(server, token, "discard", decided)
        try:
            unasked = anyio.run(scenario, "BRIDGE-PAGE")
        finally:
            page.join()
        later = anyio.run(outcome, unasked.structured_content["tool_call_id"])
    finally:
        store.set_user_policy("bob", "auto")
    assert len(asked) == 1 and "BRIDGE-KEPT" in asked[0]
    assert relayed.structured_content["committed"] is True, text_of(relayed)
    assert decided == [202]
    assert unasked.structured_content["review_status"] == "pending", text_of(unasked)
    assert later.structured_content["committed"] is False and later.structured_content["review_status"] == "discarded"
    assert later.structured_content["decision"]["decision"] == "discard"
    names = {d.Name for d in ifcopenshell.open(str(outs["bob"])).by_type("IfcDoor")}
    assert "BRIDGE-KEPT" in names and "BRIDGE-PAGE" not in names


def test_nexus_mcp_server_bridges_stdio_to_the_endpoint(deployment, tmp_path, monkeypatch):
    server, url, host_ids, _ = deployment
    token_file = tmp_path / "token"
    token_file.write_text(server.token("bob"))

    async def scenario():
        async with stdio_session("--server", url.removesuffix("/mcp"), "--token-file", str(token_file)) as session:
            tools = await session.list_tools()
            hosts = await session.call_tool("list_hosts", {})
            collected = await session.call_tool("execute_data_collection", {"code": "print('via bridge')"})
            return tools, hosts, collected

    tools, hosts, collected = anyio.run(scenario)
    assert {"execute_task_automation", "run_task"} <= {t.name for t in tools.tools}
    assert [h["host_id"] for h in hosts.structured_content["hosts"]] == [host_ids["bob"]]
    assert collected.structured_content["stdout"].strip() == "via bridge"

    async def from_environment():  # no --token-file: NEXUS_TOKEN
        async with stdio_session("--server", url.removesuffix("/mcp")) as session:
            return await session.call_tool("list_hosts", {})

    monkeypatch.setenv("NEXUS_TOKEN", server.token("alice"))
    listed = anyio.run(from_environment)
    assert [h["host_id"] for h in listed.structured_content["hosts"]] == [host_ids["alice"]]


def test_nexus_mcp_server_without_a_token_says_so(tmp_path, monkeypatch):
    import subprocess
    import sys

    monkeypatch.delenv("NEXUS_TOKEN", raising=False)
    done = subprocess.run([sys.executable, "-m", "cloud.cli", "mcp", "--server", "http://127.0.0.1:9"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "NEXUS_TOKEN" in done.stderr
    missing = tmp_path / "no-such-token"
    done = subprocess.run([sys.executable, "-m", "cloud.cli", "mcp", "--server", "http://127.0.0.1:9",
                           "--token-file", str(missing)], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and str(missing) in done.stderr and "Traceback" not in done.stderr


def test_run_task_over_http_takes_scripted_models_only_from_the_allowed_folders(deployment, tmp_path, monkeypatch):
    server, url, _, _ = deployment
    script = tmp_path / "elsewhere.json"
    script.write_text(json.dumps({"turns": [[{"text": "done"}]]}))
    monkeypatch.delenv("NEXUS_SCRIPTED_DIRS", raising=False)

    async def scenario():
        async with http_session(url, server.token("alice")) as session:
            return await session.call_tool("run_task", {"prompt": "hi", "model": f"scripted:{script}"})

    refused = anyio.run(scenario)
    assert refused.is_error and "NEXUS_SCRIPTED_DIRS" in text_of(refused)
    monkeypatch.setenv("NEXUS_SCRIPTED_DIRS", str(tmp_path))
    done = anyio.run(scenario)
    assert done.structured_content["status"] == "complete" and done.structured_content["answer"] == "done"
    handle = done.structured_content["handle"]

    async def look(user: str):
        async with http_session(url, server.token(user)) as session:
            return await session.call_tool("get_run", {"handle": handle})

    assert anyio.run(look, "alice").structured_content["status"] == "complete"
    theirs = anyio.run(look, "bob")  # another user's handle is unknown to bob, not a leak of alice's run
    assert theirs.is_error and "done" not in text_of(theirs) and theirs.structured_content.get("answer") is None


def test_no_oauth_metadata_and_a_401_asks_for_a_bearer_token(deployment, tmp_path):
    import subprocess

    from tests.mcp.test_inspector import INSPECTOR

    server, url, _, _ = deployment
    base = url.removesuffix("/mcp")
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource",
                 "/.well-known/oauth-authorization-server"):
        assert requests.get(base + path, timeout=10).status_code == 404, path
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    refused = requests.post(url, json=INITIALIZE, headers=headers, timeout=10)
    assert refused.status_code == 401
    challenge = refused.headers["WWW-Authenticate"]
    assert challenge.startswith("Bearer") and "resource_metadata" not in challenge

    def inspector(*extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(INSPECTOR), "--cli", url, "--transport", "http", *extra, "--method", "tools/list"],
                              capture_output=True, text=True, timeout=120, cwd=tmp_path, stdin=subprocess.DEVNULL)

    # The Inspector's CLI tries interactive OAuth on any 401 from an HTTP server it has no Authorization
    # header for, whatever the challenge says: without a token it stops (exit code, auth_required); with
    # the token as a header, as docs/mcp.md says, it works.
    unauthenticated = inspector()
    assert unauthenticated.returncode != 0 and "auth_required" in unauthenticated.stdout + unauthenticated.stderr
    authenticated = inspector("--header", f"Authorization: Bearer {server.token('alice')}")
    assert authenticated.returncode == 0, authenticated.stderr[-2000:]
    assert "execute_task_automation" in {t["name"] for t in json.loads(authenticated.stdout)["tools"]}


def _sse_events(reply: requests.Response) -> Iterator[dict[str, str]]:
    """The SSE events of a streamed reply, as {id, data, retry} (fields absent when not sent)."""
    event: dict[str, str] = {}
    for line in reply.iter_lines(decode_unicode=True):
        if line is None:
            continue
        if line == "":
            if event:
                yield event
            event = {}
            continue
        name, _, value = line.partition(":")
        if name in ("id", "data", "retry"):
            event[name] = event.get(name, "") + value.removeprefix(" ") if name == "data" else value.strip()


def test_a_run_task_stream_is_primed_and_resumes_after_a_dropped_connection(deployment, tmp_path, monkeypatch):
    """A client whose connection drops mid-run_task reconnects with Last-Event-ID and still gets the result:
    the stream opens with a priming event (an id, no data, `retry`), and the endpoint replays what was missed."""
    server, url, _, _ = deployment
    monkeypatch.setenv("NEXUS_SCRIPTED_DIRS", str(tmp_path))
    script = tmp_path / "slow.json"
    script.write_text(json.dumps({"turns": [
        [{"tool_call": {"name": "execute_data_collection", "input": {"code": "import time\ntime.sleep(4)\nprint(7)"}}}],
        [{"text": "Counted 7."}]]}))
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "Authorization": f"Bearer {server.token('alice')}"}
    initialize = {**INITIALIZE, "params": {**INITIALIZE["params"], "protocolVersion": "2025-11-25"}}
    opened = requests.post(url, json=initialize, headers=headers, timeout=30)
    assert opened.status_code == 200, opened.text
    session = {**headers, "Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
    requests.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session, timeout=10)
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "run_task", "arguments": {"prompt": "count", "model": f"scripted:{script}"},
                       "_meta": {"progressToken": "p7"}}}
    with requests.post(url, json=call, headers=session, stream=True, timeout=30) as first:
        assert first.headers["content-type"].startswith("text/event-stream")
        priming = next(_sse_events(first))  # then the connection drops, the run still going
    assert priming.get("id") and not priming.get("data") and priming.get("retry") == "2000", priming

    resumed = {**session, "Last-Event-ID": priming["id"], "Accept": "text/event-stream"}
    messages = []
    with requests.get(url, headers=resumed, stream=True, timeout=60) as again:
        assert again.status_code == 200, again.text
        for event in _sse_events(again):
            if event.get("data"):
                messages.append(json.loads(event["data"]))
                if messages[-1].get("id") == 7:
                    break
    result = messages[-1]["result"]
    assert result["structuredContent"]["status"] == "complete", result
    assert result["structuredContent"]["answer"] == "Counted 7."
    assert any(m.get("method") == "notifications/progress" for m in messages)  # the steps it missed, too
