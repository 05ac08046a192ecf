"""Batches through the product's API (issue 18 item 3), on the real Flask app over HTTP with real IFC hosts:
POST /api/batches on the embedded pool, progress by SSE, per-file detail (changes by kind, validation,
audit entries), two users who never see each other's batches, path-escape attempts refused, review per file
under `ask`, cancel, and a batch started from a kept automation of a chat session by its audited sha256."""
from __future__ import annotations

import hashlib
import os
import shutil
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from cloud.batch.worker import wait_for_hosts
from tests.batch.support import SCRIPT, assert_exactly_the_change, make_models, sha
from tests.support.client import Client, Stream, parse_sse, write_script
from tests.support.real_ifc import sample_host

WAIT_S = 600


@pytest.fixture
def batch_root(tmp_path, monkeypatch) -> Iterator[Path]:
    root = tmp_path / "root"  # alice's models in her own folder, bob's in his (cloud/folders/access.py)
    make_models(root / "alice" / "models", generated=2, corpus=False)
    shutil.copytree(root / "alice" / "models", root / "bob" / "models")
    monkeypatch.setenv("NEXUS_BATCH_ROOT", str(root))
    monkeypatch.delenv("NEXUS_BATCH_STATE", raising=False)
    monkeypatch.delenv("NEXUS_REDIS_URL", raising=False)
    monkeypatch.setenv("NEXUS_BATCH_WORKERS", "2")
    yield root / "alice"
    wait_for_hosts()  # the files' hosts, stopped in the background once each file was done


@pytest.fixture
def bob(server) -> Client:
    return Client(server.url, server.token("bob"))


def wait_finished(client: Client, batch_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        detail = client.call("GET", f"/api/batches/{batch_id}").json()
        if detail["progress"]["finished"]:
            return detail
        time.sleep(0.5)
    raise TimeoutError(f"batch {batch_id} did not finish within {WAIT_S} s")


def follow(client: Client, batch_id: str, why: Any = None) -> Stream:
    """The batch's event stream to its end; a stream still open after WAIT_S fails the test (its keepalives
    would keep a read timeout from ever firing)."""
    deadline = time.monotonic() + WAIT_S

    def guard(_frame: Any) -> None:
        if time.monotonic() > deadline:
            raise TimeoutError(f"batch {batch_id} still running after {WAIT_S} s: {why() if why else ''}")

    response = client.call("GET", f"/api/batches/{batch_id}/events", stream=True, timeout=WAIT_S)
    assert response.status_code == 200 and response.headers["Content-Type"].startswith("text/event-stream")
    return parse_sse(response, guard)


def by_file(detail: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {Path(f["file"]).name: f for f in detail["file_results"]}


def start(client: Client, **body: Any) -> dict[str, Any]:
    response = client.call("POST", "/api/batches", json=body)
    assert response.status_code == 202, response.text
    return response.json()


def test_a_script_batch_on_the_embedded_pool_followed_live_and_private_to_its_owner(server, alice, bob, batch_root):
    inputs = {p.name: sha(p) for p in (batch_root / "models").iterdir()}
    started = start(alice, files="models/*.ifc", script=SCRIPT, script_name="fire.py", out="out")
    assert started["files"] == 4 and started["runner"] == "embedded" and started["policy"] == "auto"
    batch_id = started["batch_id"]
    stream = follow(alice, batch_id)
    kinds = [c["type"] for c in stream.chunks]
    assert kinds[-1] == "BatchComplete" and "BatchProgress" in kinds
    assert sorted(c["file"] for c in stream.of("BatchFile")) == sorted(inputs)
    assert stream.last["done"] == 2 and stream.last["failed"] == 2 and stream.last["left"] == 0

    detail = alice.call("GET", f"/api/batches/{batch_id}").json()
    files = by_file(detail)
    script_sha = hashlib.sha256(SCRIPT.encode()).hexdigest()
    assert detail["script_sha256"] == script_sha and detail["out"] == "out" and detail["owner"] == "alice"
    for name in ("gen_00.ifc", "gen_01.ifc"):
        row = files[name]
        assert row["state"] == "committed" and row["changes"] and row["change_kinds"], row
        assert any(a["sha256"] == script_sha and a["kind"] == "model" for a in row["audit"]), row["audit"]
        assert row["output"] == f"out/{name}" and row["validation"] == []
        assert_exactly_the_change(batch_root / "models" / name, batch_root / "out" / name)
    assert files["failing.ifc"]["state"] == "failed" and "not ready" in files["failing.ifc"]["error"]
    assert files["truncated.ifc"]["state"] == "failed"
    assert sorted(p.name for p in (batch_root / "out").glob("*.ifc")) == ["gen_00.ifc", "gen_01.ifc"]
    assert {p.name: sha(p) for p in (batch_root / "models").iterdir()} == inputs
    assert "/root/" not in str(detail["file_results"])  # server paths are shown relative to the batch root
    assert [e["event"] for e in detail["events"]] == ["start"] and detail["events"][0]["by"] == "alice"

    # another user: nothing listed, and every route answers as if the batch did not exist
    assert bob.call("GET", "/api/batches").json()["batches"] == []
    for method, path, body in [("GET", f"/api/batches/{batch_id}", None), ("GET", f"/api/batches/{batch_id}/events", None),
                               ("POST", f"/api/batches/{batch_id}/cancel", None),
                               ("POST", f"/api/batches/{batch_id}/review", {"file": "models/gen_00.ifc", "decision": "discard"}),
                               ("GET", f"/batches/{batch_id}", None)]:
        response = bob.call(method, path, json=body)
        assert response.status_code == 404 and batch_id in response.json()["error"], (path, response.text)
    assert [b["batch_id"] for b in alice.call("GET", "/api/batches").json()["batches"]] == [batch_id]
    admin = Client(server.url, server.token("root", admin=True))
    assert [b["owner"] for b in admin.call("GET", "/api/batches").json()["batches"]] == ["alice"]
    assert admin.call("GET", f"/api/batches/{batch_id}").status_code == 200
    assert alice.call("POST", f"/api/batches/{batch_id}/cancel").status_code == 409  # finished
    assert alice.call("POST", f"/api/batches/{batch_id}/review",
                      json={"file": "models/gen_00.ifc", "decision": "keep"}).status_code == 400  # not under ask


def test_review_per_file_under_ask_keeps_or_discards_and_records_who(server, alice, batch_root):
    assert server.state.store.set_user_policy("alice", "ask")  # an admin's choice for alice: stricter wins
    started = start(alice, files=["models/gen_00.ifc", "models/gen_01.ifc"], script=SCRIPT, out="reviewed",
                    policy="auto")
    assert started["policy"] == "ask"
    detail = wait_finished(alice, started["batch_id"])
    files = by_file(detail)
    assert [files[n]["state"] for n in ("gen_00.ifc", "gen_01.ifc")] == ["staged", "staged"]
    assert detail["progress"]["awaiting_review"] == 2 and files["gen_00.ifc"]["output"] is None
    assert not (batch_root / "reviewed").exists() or not list((batch_root / "reviewed").glob("*.ifc"))
    review = f"/api/batches/{started['batch_id']}/review"
    kept = alice.call("POST", review, json={"file": "models/gen_00.ifc", "decision": "keep"})
    assert kept.status_code == 200 and kept.json() == {"file": "models/gen_00.ifc", "decision": "keep",
                                                        "by": "alice", "output": "reviewed/gen_00.ifc"}
    with ThreadPoolExecutor(2) as pool:  # two decisions at once: exactly one is taken
        raced = list(pool.map(lambda _: alice.call("POST", review, json={"file": "models/gen_01.ifc",
                                                                          "decision": "discard"}), range(2)))
    assert sorted(r.status_code for r in raced) == [200, 409], [r.text for r in raced]
    assert alice.call("POST", review, json={"file": "models/gen_01.ifc", "decision": "keep"}).status_code == 409
    assert alice.call("POST", review, json={"file": "models/gen_01.ifc", "decision": "maybe"}).status_code == 400
    assert alice.call("POST", review, json={"file": "../x.ifc", "decision": "keep"}).status_code == 400
    assert_exactly_the_change(batch_root / "models" / "gen_00.ifc", batch_root / "reviewed" / "gen_00.ifc")
    assert sorted(p.name for p in (batch_root / "reviewed").glob("*")) == ["gen_00.ifc"]  # discarded: nothing
    staged = list((batch_root.parent / ".nexus-batches").rglob("staged/**/*.ifc"))
    assert staged == []
    detail = alice.call("GET", f"/api/batches/{started['batch_id']}").json()
    files = by_file(detail)
    assert files["gen_00.ifc"]["state"] == "kept" and files["gen_00.ifc"]["review"]["by"] == "alice"
    assert files["gen_01.ifc"]["state"] == "discarded" and files["gen_01.ifc"]["review"]["decision"] == "discard"
    assert [(e["event"], e.get("file"), e["by"]) for e in detail["events"][1:]] == [
        ("keep", "gen_00.ifc", "alice"), ("discard", "gen_01.ifc", "alice")]
    assert [(a["event"], a["by"]) for a in files["gen_00.ifc"]["decisions"]] == [("keep", "alice")]


def test_cancel_records_the_files_not_yet_started(server, alice, batch_root, monkeypatch):
    monkeypatch.setenv("NEXUS_BATCH_WORKERS", "1")
    started = start(alice, files="models/*.ifc", script=SCRIPT, out="cancelled")
    cancel = alice.call("POST", f"/api/batches/{started['batch_id']}/cancel")
    assert cancel.status_code == 202
    detail = wait_finished(alice, started["batch_id"])
    states = [f["state"] for f in detail["file_results"]]
    assert "cancelled" in states and detail["progress"]["cancelled"], states
    assert detail["events"][-1]["event"] == "cancel" and detail["events"][-1]["by"] == "alice"
    for row in detail["file_results"]:
        if row["state"] == "cancelled":
            assert not (batch_root / "cancelled" / Path(row["file"]).name).exists()


def _escapes(root: Path, outside: Path) -> list[tuple[dict[str, Any], int, str]]:
    (root / "models" / "link").symlink_to(outside, target_is_directory=True)
    (root / "out-link").symlink_to(outside, target_is_directory=True)
    script = {"script": SCRIPT}
    return [
        ({"files": "../outside/*.ifc", "out": "o", **script}, 400, "'..' is refused"),
        ({"files": "models/../../outside/a.ifc", "out": "o", **script}, 400, "'..' is refused"),
        ({"files": str(outside / "a.ifc"), "out": "o", **script}, 400, "absolute paths are refused"),
        ({"files": "~/a.ifc", "out": "o", **script}, 400, "absolute paths are refused"),
        ({"files": "models/link/*.ifc", "out": "o", **script}, 403, "leads outside your folders"),
        ({"files": "models/*.ifc", "out": "out-link/x", **script}, 403, "leads outside your folders"),
        ({"files": "models/*.ifc", "out": "../elsewhere", **script}, 400, "'..' is refused"),
        ({"files": "models/*.ifc", "out": "/tmp/elsewhere", **script}, 400, "absolute paths are refused"),
        ({"files": "models/*.ifc", "out": ".nexus-batches/x", **script}, 400, "hidden"),
        ({"files": ["models/gen_00.ifc", 3], "out": "o", **script}, 400, "files[1]"),
        ({"files": "models/*.ifc", "out": "models", **script}, 400, "inputs' own folder"),
        ({"files": "nothing/*.ifc", "out": "o", **script}, 400, "nothing matches"),
        ({"files": "models/*.ifc", **script}, 400, "out: required"),
        ({"out": "o", **script}, 400, "files: required"),
        ({"files": "models/*.ifc", "out": "o"}, 400, "exactly one of"),
        ({"files": "models/*.ifc", "out": "o", "prompt": "do it", **script}, 400, "exactly one of"),
        ({"files": "models/*.ifc", "out": "o", "prompt": "do it"}, 400, "model: required"),
        ({"files": "models/*.ifc", "out": "o", "model": "scripted:x", **script}, 400, "model: only with prompt"),
        ({"files": "models/*.ifc", "out": "o", "policy": "yolo", **script}, 400, "policy: expected"),
        ({"files": "models/*.ifc", "out": "o", "validation": "off", **script}, 400, "validation: expected"),
        ({"files": "models/*.ifc", "out": "o", "script": ""}, 400, "script: expected non-empty text"),
        ({"files": "models/*.ifc", "out": "o", "shell": "rm -rf /", **script}, 400, "unknown field(s): shell"),
        ({"files": "models/*.ifc", "out": "o", "script_sha256": "ab"}, 400, "64 lowercase hex"),
        ({"files": "models/*.ifc", "out": "o", "script_sha256": "a" * 64}, 400, "no script of yours"),
        ({"files": "models/*.ifc", "out": "o", "session_id": "s"}, 400, "go together"),
        ({"files": "models/*.ifc", "out": "o", "prompt": "x", "model": "scripted:/etc/passwd"}, 403, "NEXUS_SCRIPTED_DIRS"),
    ]


def test_every_field_is_validated_and_paths_never_leave_the_batch_root(server, alice, batch_root, tmp_path, monkeypatch):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.ifc").write_bytes((batch_root / "models" / "gen_00.ifc").read_bytes())
    before = {p.name: p.stat().st_mtime_ns for p in outside.iterdir()}
    for body, status, message in _escapes(batch_root, outside):
        response = alice.call("POST", "/api/batches", json=body)
        assert response.status_code == status and message in response.json()["error"], (body, response.text)
    assert alice.call("POST", "/api/batches", data="nope", headers={"Content-Type": "text/plain"}).status_code == 400
    state = batch_root.parent / ".nexus-batches"
    assert not list(state.glob("*")) if state.exists() else True
    assert {p.name: p.stat().st_mtime_ns for p in outside.iterdir()} == before
    # no token, a host token, an unknown batch, and a server with no batch root
    assert Client(server.url, None).call("POST", "/api/batches", json={}).status_code == 401
    host_token = server.state.store.create_token("alice", scope="host")
    assert Client(server.url, host_token).call("GET", "/api/batches").status_code == 403
    assert alice.call("GET", "/api/batches/0123456789ab").status_code == 404
    assert alice.call("GET", "/api/batches/..%2f..%2fetc").status_code == 404
    monkeypatch.delenv("NEXUS_BATCH_ROOT")
    response = alice.call("POST", "/api/batches", json={"files": "models/*.ifc", "out": "o", "script": SCRIPT})
    assert response.status_code == 503 and "NEXUS_BATCH_ROOT" in response.json()["error"]


def test_a_kept_chat_automation_is_applied_by_its_audited_sha256(server, alice, bob, batch_root, scripts_dir, tmp_path):
    with sample_host(tmp_path / "chat.ifc", server.url, alice.token, storeys=1) as (_, host_id):
        spec = write_script(scripts_dir / "chat.json", [
            [{"tool_call": {"name": "execute_task_automation", "input": {"code": SCRIPT}}}], [{"text": "Done."}]])
        session_id = alice.new_session(host_id, spec)
        stream = alice.run(session_id, "Mark the walls")
        call = stream.of("Metadata", "tool_result")[-1]["metadata"]
        assert call["committed"], call
        tool_call_id = call["tool_call_id"]
    script_sha = hashlib.sha256(SCRIPT.encode()).hexdigest()
    # bob can neither name alice's session nor find her script by its sha256
    for body in ({"session_id": session_id, "tool_call_id": tool_call_id}, {"script_sha256": script_sha}):
        response = bob.call("POST", "/api/batches", json={**body, "files": "models/gen_0*.ifc", "out": "o"})
        assert response.status_code == 400, response.text
    started = start(alice, session_id=session_id, tool_call_id=tool_call_id, files="models/gen_0*.ifc", out="fromchat")
    by_sha = start(alice, script_sha256=script_sha, files="models/gen_00.ifc", out="bysha")
    detail = wait_finished(alice, started["batch_id"])
    assert detail["script_sha256"] == script_sha and detail["source"]["session_id"] == session_id
    assert [f["state"] for f in detail["file_results"]] == ["committed", "committed"]
    assert wait_finished(alice, by_sha["batch_id"])["file_results"][0]["state"] == "committed"
    for name in ("gen_00.ifc", "gen_01.ifc"):
        assert_exactly_the_change(batch_root / "models" / name, batch_root / "fromchat" / name)
    assert os.path.exists(batch_root / "bysha" / "gen_00.ifc")


def test_a_prompt_batch_records_each_files_image_for_its_owner_only(server, alice, bob, batch_root, scripts_dir):
    from tests.support.client import write_script

    spec = write_script(scripts_dir / "agent.json", [
        [{"tool_call": {"name": "execute_task_automation", "input": {"code": SCRIPT}}}],
        [{"tool_call": {"name": "capture_view", "input": {"view": "Level 1"}}}],
        [{"text": "Marked and shown."}]])
    started = start(alice, files="models/gen_00.ifc", prompt="Mark the walls reviewed", model=spec, out="agent")
    detail = wait_finished(alice, started["batch_id"])
    row = detail["file_results"][0]
    assert detail["kind"] == "prompt" and row["state"] == "committed", row
    assert len(row["images"]) == 1, row
    image = f"/api/batches/{started['batch_id']}/images/{row['images'][0]}"
    png = alice.call("GET", image)
    assert png.status_code == 200 and png.headers["Content-Type"] == "image/png" and png.content[:4] == b"\x89PNG"
    assert bob.call("GET", image).status_code == 404
    assert alice.call("GET", f"/api/batches/{started['batch_id']}/images/{'0' * 32}").status_code == 404
    assert_exactly_the_change(batch_root / "models" / "gen_00.ifc", batch_root / "agent" / "gen_00.ifc")


def test_a_third_batch_running_at_once_is_over_the_users_quota(server, alice, bob, batch_root, monkeypatch):
    monkeypatch.setenv("NEXUS_BATCH_WORKERS", "1")
    first = start(alice, files="models/*.ifc", script=SCRIPT, out="q1")
    second = start(alice, files="models/*.ifc", script=SCRIPT, out="q2")
    refused = alice.call("POST", "/api/batches", json={"files": "models/*.ifc", "script": SCRIPT, "out": "q3"})
    assert refused.status_code == 429, refused.text
    assert refused.json()["quota"] == "concurrent batches" and refused.json()["limit"] == 2
    assert int(refused.headers["Retry-After"]) > 0
    assert not (batch_root / "q3").exists()
    other = start(bob, files="models/*.ifc", script=SCRIPT, out="b1")  # the quota is per user
    for client, started in ((alice, first), (alice, second), (bob, other)):
        client.call("POST", f"/api/batches/{started['batch_id']}/cancel")
    for client, started in ((alice, first), (alice, second), (bob, other)):
        wait_finished(client, started["batch_id"])
    again = start(alice, files="models/*.ifc", script=SCRIPT, out="q4")  # once they ended, a new one is admitted
    alice.call("POST", f"/api/batches/{again['batch_id']}/cancel")
    wait_finished(alice, again["batch_id"])
