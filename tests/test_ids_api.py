"""A session's IDS through the real server and a real IFC host: uploaded and checked by the API (not XML, not an
IDS, too large: a clear 400), sent with every automation; the IDS failures a script introduced reach the model's
copy and the person's under `warn`, and roll the run back under `block` (file byte-identical)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from ifc_host.ids_reader import MAX_IDS_BYTES
from tests.conformance.ifc_models import write_small_building
from tests.ifc_host.test_ids import FIRE_RATING_IDS, HOSTED_DOOR
from tests.support.client import Client, write_script
from tests.support.spine import automate, say


def _spec(scripts_dir: Path) -> str:
    return write_script(scripts_dir / "door.json", [automate(HOSTED_DOOR), say("done")])


def test_the_route_checks_the_document_and_names_the_problem(server, alice, building_host):
    sid = alice.new_session(building_host[0])
    ok = alice.call("PUT", f"/api/sessions/{sid}/ids", json={"ids": FIRE_RATING_IDS})
    assert ok.status_code == 200, ok.text
    assert ok.json() == {"session_id": sid, "ids": {"bytes": len(FIRE_RATING_IDS.encode()), "specifications": 1}}
    raw = alice.call("PUT", f"/api/sessions/{sid}/ids", data=FIRE_RATING_IDS.encode(),
                     headers={"Content-Type": "application/xml"})
    assert raw.status_code == 200 and raw.json()["ids"]["specifications"] == 1
    cases = [("{not xml", "ids: not XML: "), ("<svg/>", "ids: not an IDS document: the root element is <svg>"),
             (FIRE_RATING_IDS.replace("<specifications>", "<specifications><bogus/>"), "ids: not a valid IDS document")]
    for document, message in cases:
        bad = alice.call("PUT", f"/api/sessions/{sid}/ids", json={"ids": document})
        assert bad.status_code == 400 and message in bad.json()["error"], bad.text
    big = alice.call("PUT", f"/api/sessions/{sid}/ids", data=b"<" + b"x" * MAX_IDS_BYTES + b"/>",
                     headers={"Content-Type": "application/xml"})
    assert big.status_code == 400 and "at most" in big.json()["error"]
    assert alice.call("PUT", f"/api/sessions/{sid}/ids", json={"ids": 3}).status_code == 400
    assert Client(server.url, server.token("bob")).call("PUT", f"/api/sessions/{sid}/ids",
                                                        json={"ids": None}).status_code == 404
    assert Client(server.url, None).call("PUT", f"/api/sessions/{sid}/ids", json={"ids": None}).status_code == 401
    assert server.state.store.get_session(sid)["ids"] == FIRE_RATING_IDS  # the refused uploads changed nothing
    cleared = alice.call("PUT", f"/api/sessions/{sid}/ids", json={"ids": None})
    assert cleared.json() == {"session_id": sid, "ids": None} and server.state.store.get_session(sid)["ids"] is None


def test_warn_reports_the_new_door_to_the_model_and_the_person(server, alice, building_host, scripts_dir):
    host_id, _ = building_host
    sid = alice.new_session(host_id, _spec(scripts_dir))
    assert alice.call("PUT", f"/api/sessions/{sid}/ids", json={"ids": FIRE_RATING_IDS}).status_code == 200
    result = alice.run(sid, "add a door").of("Metadata", "tool_result")[0]
    person = result["metadata"]
    assert person["committed"], person.get("error")
    assert person["validation"]["ids"] == {"specifications": 1, "introduced": 1}
    (finding,) = [f for f in person["validation"]["findings"] if f["kind"] == "ids"]
    assert finding["class"] == "IfcDoor" and "FireRating" in finding["message"]
    assert any("IDS 'Door fire rating'" in f["message"] for f in person["failures"])
    assert "IDS 'Door fire rating'" in result["content"]  # the model's copy


def test_block_rolls_the_door_back_and_the_file_stays_byte_identical(server, alice,
                                                                     building_host, scripts_dir):
    host_id, model_path = building_host
    sid = alice.new_session(host_id, _spec(scripts_dir))
    assert alice.call("PUT", f"/api/sessions/{sid}/ids", data=FIRE_RATING_IDS.encode(),
                      headers={"Content-Type": "application/xml"}).status_code == 200
    assert alice.call("PUT", f"/api/sessions/{sid}/validation", json={"validation": "block"}).status_code == 200
    before = model_path.read_bytes()
    result = alice.run(sid, "add a door").of("Metadata", "tool_result")[0]
    assert not result["metadata"]["committed"]
    assert result["metadata"]["error"]["type"] == "ValidationFailed"
    assert "IDS" in result["content"] and "FireRating" in result["content"]
    assert model_path.read_bytes() == before


def _nexus(*args: str) -> subprocess.CompletedProcess:
    command = [shutil.which("nexus")] if shutil.which("nexus") else [sys.executable, "-m", "cloud.cli"]
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=180,
                          env={**os.environ, "NEXUS_SCRIPTED_DIRS": ""}, cwd=Path(__file__).resolve().parents[1])


def test_nexus_run_ids_reports_the_new_door_and_refuses_a_file_that_is_not_an_ids(tmp_path):
    model = write_small_building(tmp_path / "model.ifc")
    ids = tmp_path / "doors.ids"
    ids.write_text(FIRE_RATING_IDS)
    spec = _spec(tmp_path)
    done = _nexus("run", "add a door", "--ifc", str(model), "--model", spec, "--json", "--ids", str(ids),
                  "--out", str(tmp_path / "out.ifc"), "--db", str(tmp_path / "run.db"))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    # stderr too: while another thread builds the IFC API index, a line may land there (see test_cli.py)
    chunks = [json.loads(line) for line in (done.stdout + "\n" + done.stderr).splitlines() if line.startswith('{"type"')]
    (result,) = [c for c in chunks if c["type"] == "Metadata" and c["metadata"]["kind"] == "tool_result"]
    assert result["metadata"]["committed"] and result["metadata"]["validation"]["ids"]["introduced"] == 1
    assert "IDS 'Door fire rating'" in result["content"]
    bad = tmp_path / "bad.ids"
    bad.write_text("<svg/>")
    refused = _nexus("run", "add a door", "--ifc", str(model), "--model", spec, "--ids", str(bad),
                     "--db", str(tmp_path / "bad.db"))
    assert refused.returncode != 0
    assert f"--ids {bad}: not an IDS document" in refused.stderr + refused.stdout
