"""A batch's IDS through the product's API (real Flask app over HTTP, real IFC hosts, a real ifctester):
POST /api/batches takes `ids` (checked, refused with the session route's 400 messages and its 1 MB cap);
GET /api/batches/<id> names it (title, specifications, size), never the document; under `warn` the files the
change broke carry the IDS findings, under `block` they are rolled back; a batch of a session's kept
automation carries that session's IDS over; GET /api/sessions/<id> says whether a session has an IDS, to
its owner only."""
from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cloud.batch.worker import wait_for_hosts
from ifc_host.ids_reader import MAX_IDS_BYTES
from tests.batch.ids_support import FIRE_RATING_IDS, IDS_SCRIPT, IDS_TITLE, make_ids_models
from tests.batch.support import assert_exactly_the_change, sha
from tests.support.client import Client, write_script

WAIT_S = 600
SUMMARY = {"title": IDS_TITLE, "specifications": 1, "bytes": len(FIRE_RATING_IDS.encode()),
           "sha256": hashlib.sha256(FIRE_RATING_IDS.encode()).hexdigest()}


@pytest.fixture
def ids_root(tmp_path, monkeypatch) -> Iterator[Path]:
    root = tmp_path / "root" / "alice"  # alice's own folder under the batch root (cloud/folders/access.py)
    make_ids_models(root / "models")
    monkeypatch.setenv("NEXUS_BATCH_ROOT", str(root.parent))
    monkeypatch.delenv("NEXUS_BATCH_STATE", raising=False)
    monkeypatch.delenv("NEXUS_REDIS_URL", raising=False)
    monkeypatch.setenv("NEXUS_BATCH_WORKERS", "2")
    yield root
    wait_for_hosts()


def _start(client: Client, **body: Any) -> dict[str, Any]:
    response = client.call("POST", "/api/batches", json=body)
    assert response.status_code == 202, response.text
    return response.json()


def _finished(client: Client, batch_id: str) -> tuple[dict[str, Any], str]:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        response = client.call("GET", f"/api/batches/{batch_id}")
        if response.json()["progress"]["finished"]:
            return response.json(), response.text
        time.sleep(0.5)
    raise TimeoutError(f"batch {batch_id} did not finish within {WAIT_S} s")


def _rows(detail: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {Path(f["file"]).name: f for f in detail["file_results"]}


def _ids_findings(row: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in row["validation"] if f.get("kind") == "ids"]


def test_a_batch_with_an_ids_under_warn_and_block(server, alice, ids_root):
    inputs = {p.name: sha(p) for p in (ids_root / "models").iterdir()}
    warn = _start(alice, files="models/*.ifc", script=IDS_SCRIPT, script_name="mark.py", out="warn",
                  ids=FIRE_RATING_IDS)
    block = _start(alice, files="models/*.ifc", script=IDS_SCRIPT, script_name="mark.py", out="block",
                   ids=FIRE_RATING_IDS, validation="block")
    assert warn["ids"] == SUMMARY and block["ids"] == SUMMARY

    detail, text = _finished(alice, warn["batch_id"])
    assert detail["ids"] == SUMMARY and "<specification" not in text and "<ids" not in text  # never the document
    rows = _rows(detail)
    assert {n: r["state"] for n, r in rows.items()} == {n: "committed" for n in inputs}
    broken = _ids_findings(rows["broken_00.ifc"])
    assert broken and all(f["class"] == "IfcDoor" and "FireRating" in f["message"] for f in broken), broken
    for name in ("plain_00.ifc",):
        assert rows[name]["validation"] == [], rows[name]
        assert_exactly_the_change(ids_root / "models" / name, ids_root / "warn" / name)

    detail, _ = _finished(alice, block["batch_id"])
    rows = _rows(detail)
    assert rows["broken_00.ifc"]["state"] == "failed" and "FireRating" in rows["broken_00.ifc"]["error"]
    assert _ids_findings(rows["broken_00.ifc"]) and not (ids_root / "block" / "broken_00.ifc").exists()
    for name in ("plain_00.ifc",):
        assert rows[name]["state"] == "committed"
        assert_exactly_the_change(ids_root / "models" / name, ids_root / "block" / name)
    assert {p.name: sha(p) for p in (ids_root / "models").iterdir()} == inputs
    listed = {b["batch_id"]: b for b in alice.call("GET", "/api/batches").json()["batches"]}
    assert listed[warn["batch_id"]]["ids"] == SUMMARY


def test_an_invalid_ids_is_refused_with_the_session_routes_messages(server, alice, ids_root):
    base = {"files": "models/*.ifc", "script": IDS_SCRIPT, "out": "o"}
    cases = [("{not xml", "ids: not XML: "), ("<svg/>", "ids: not an IDS document: the root element is <svg>"),
             (FIRE_RATING_IDS.replace("<specifications>", "<specifications><bogus/>"), "ids: not a valid IDS document"),
             ("<" + "x" * MAX_IDS_BYTES + "/>", f"at most {MAX_IDS_BYTES} are accepted"),
             (3, "ids: expected the IDS document as a string")]
    for document, message in cases:
        response = alice.call("POST", "/api/batches", json={**base, "ids": document})
        assert response.status_code == 400 and message in response.json()["error"], response.text[:500]
    lone_surrogate = '{"files": "models/*.ifc", "out": "o", "script": "x = 1", "ids": "<ids>\\ud800</ids>"}'
    response = alice.call("POST", "/api/batches", data=lone_surrogate, headers={"Content-Type": "application/json"})
    assert response.status_code == 400 and "ids: not XML: " in response.json()["error"], response.text[:500]
    assert not (ids_root / "o").exists() and not (ids_root.parent / ".nexus-batches").exists()
    none = _start(alice, **base, ids=None)  # null: no IDS
    assert none["ids"] is None


def test_the_session_says_whether_it_has_an_ids_to_its_owner_only(server, alice):
    sid = alice.new_session()
    assert alice.call("GET", f"/api/sessions/{sid}").json()["ids"] is None
    lone_surrogate = alice.call("PUT", f"/api/sessions/{sid}/ids", data='{"ids": "<ids>\\ud800</ids>"}',
                                headers={"Content-Type": "application/json"})
    assert lone_surrogate.status_code == 400 and "ids: not XML: " in lone_surrogate.json()["error"]
    assert alice.call("PUT", f"/api/sessions/{sid}/ids", json={"ids": FIRE_RATING_IDS}).status_code == 200
    response = alice.call("GET", f"/api/sessions/{sid}")
    assert response.json()["ids"] == SUMMARY and "<specification" not in response.text
    bob = Client(server.url, server.token("bob"))
    denied = bob.call("GET", f"/api/sessions/{sid}")
    assert denied.status_code == 404 and IDS_TITLE not in denied.text
    assert alice.call("PUT", f"/api/sessions/{sid}/ids", json={"ids": None}).status_code == 200
    assert alice.call("GET", f"/api/sessions/{sid}").json()["ids"] is None


def test_a_batch_of_a_sessions_kept_automation_carries_its_ids_over(server, alice, ids_root, building_host,
                                                                     scripts_dir):
    host_id, _ = building_host
    spec = write_script(scripts_dir / "mark.json", [
        [{"tool_call": {"name": "execute_task_automation", "input": {"code": IDS_SCRIPT}}}], [{"text": "Done."}]])
    sid = alice.new_session(host_id, spec)
    assert alice.call("PUT", f"/api/sessions/{sid}/ids", json={"ids": FIRE_RATING_IDS}).status_code == 200
    call = alice.run(sid, "Mark the walls").of("Metadata", "tool_result")[-1]["metadata"]
    assert call["committed"], call
    carried = _start(alice, session_id=sid, tool_call_id=call["tool_call_id"], files="models/*.ifc", out="carried",
                     validation="block")
    opted_out = _start(alice, session_id=sid, tool_call_id=call["tool_call_id"], files="models/broken_*.ifc",
                       out="without", ids=None)
    assert carried["ids"] == SUMMARY and opted_out["ids"] is None
    rows = _rows(_finished(alice, carried["batch_id"])[0])
    assert rows["broken_00.ifc"]["state"] == "failed" and _ids_findings(rows["broken_00.ifc"])
    assert rows["plain_00.ifc"]["state"] == "committed"
    rows = _rows(_finished(alice, opted_out["batch_id"])[0])
    assert rows["broken_00.ifc"]["state"] == "committed" and rows["broken_00.ifc"]["validation"] == []
