"""Check skills over the real server and a real IFC host: a data collection that prints FINDING lines is saved as a
skill marked as a check; run by the model (run_skill) it runs read-only and its lines become findings of the one
finding type (elements with class, name and model) that the session lists; a rule set may name it only once it is
marked as a check, and then runs it on demand with the check's severity."""
from __future__ import annotations

import ifcopenshell

from cloud.skills.library import SkillLibrary
from tests.support.client import write_script
from tests.support.spine import collect, say

DOOR_CHECK = """import json
for door in model.by_type('IfcDoor'):
    door.Name = 'changed by the check'  # a check is read-only: this is rolled back
    print('FINDING ' + json.dumps({'title': 'door to inspect', 'elements': [door.GlobalId],
                                   'description': 'every door is inspected', 'severity': 'warning'}))
print('checked')
"""


def _tool_results(stream) -> list[dict]:
    return [c["metadata"] for c in stream.of("Metadata", "tool_result")]


def test_a_check_skill_prints_findings_the_session_lists_and_a_rule_set_runs(server, alice, building_host,
                                                                             scripts_dir):
    host_id, model_path = building_host
    doors = {d.GlobalId: d.Name for d in ifcopenshell.open(str(model_path)).by_type("IfcDoor")}
    assert doors
    sid = alice.new_session(host_id, write_script(scripts_dir / "collect.json", [collect(DOOR_CHECK), say("ok")]))
    (collected,) = _tool_results(alice.run(sid, "inspect the doors"))
    assert collected["ok"], collected
    ids = {"session_id": sid, "tool_call_id": collected["tool_call_id"], "name": "Door check",
           "description": "Lists every door for inspection", "parameters": []}
    refused = alice.call("POST", "/api/skills", json=ids)  # a collection becomes a skill only as a check
    assert refused.status_code == 400 and "no automation" in refused.json()["error"]
    saved = alice.call("POST", "/api/skills", json={**ids, "check": True})
    assert saved.status_code == 201 and saved.json()["check"] is True, saved.text
    assert alice.call("GET", "/api/skills").json()["skills"][0]["check"] is True

    # run by the model: read-only, its FINDING lines are findings with their elements
    before = model_path.read_bytes()
    run_sid = alice.new_session(host_id, write_script(scripts_dir / "run.json", [
        [{"tool_call": {"name": "run_skill", "input": {"name": "Door check"}}}], say("done")]))
    (ran,) = _tool_results(alice.run(run_sid, "check the doors"))
    assert ran["mode"] == "collect" and not ran["committed"] and ran["check_skill"] == "Door check", ran
    assert model_path.read_bytes() == before
    assert f"{len(doors)} finding(s), 0 error, {len(doors)} warning" in ran["summary"]
    assert "NEXUS-CHECK-FINDINGS" not in ran["summary"] and "NEXUS-CHECK-FINDINGS" not in ran["stdout"]
    listed = alice.call("GET", f"/api/sessions/{run_sid}/findings").json()["findings"]
    assert len(listed) == len(doors)
    assert {f["elements"][0]["global_id"]: f["elements"][0]["name"] for f in listed} == doors  # not the rolled-back name
    assert {(f["rule"], f["severity"], f["check_skill"], f["tool_call_id"], f["elements"][0]["ifc_class"],
             f["elements"][0]["model"]) for f in listed} == {
        ("Door check", "warning", "Door check", ran["tool_call_id"], "IfcDoor", model_path.name)}
    (skill,) = alice.call("GET", "/api/skills").json()["skills"]
    assert skill["run_count"] == 1 and skill["success_rate"] == 1.0

    # a rule set names a skill only when it is marked as a check
    SkillLibrary(server.state.store).save(
        user_name="alice", name="Plain", description="not a check", host_app="ifc", code=DOOR_CHECK,
        parameters=[], capability_version=None, provenance={}, example={})
    plain = {"checks": [{"check": "script", "skill": "Plain", "severity": "error"}]}
    refused = alice.call("PUT", "/api/rule-sets/inspect", json=plain)
    assert refused.status_code == 400 and "'Plain' is not marked as a check" in refused.json()["error"]
    assert alice.call("PUT", "/api/skills/Plain", json={"check": "yes"}).status_code == 400
    assert alice.call("PUT", "/api/skills/Plain", json={"check": True}).json() == {"name": "Plain", "check": True}
    assert alice.call("PUT", "/api/rule-sets/inspect", json=plain).status_code == 200
    done = alice.call("POST", f"/api/sessions/{run_sid}/check", json={"rules": "inspect"}, timeout=300)
    assert done.status_code == 200, done.text
    found = done.json()["findings"]
    assert len(found) == len(doors) and {(f["rule"], f["severity"]) for f in found} == {("Plain", "error")}
    assert model_path.read_bytes() == before
    recorded = server.state.store.finding_runs.latest_finding_runs()  # each check run, for the admin console's chart of findings over time
    assert [(r["model"], r["source"], r["check_name"], r["warnings"], r["errors"]) for r in recorded] == [
        (model_path.name, "check", "inspect", 0, len(doors)),
        (model_path.name, "check skill", "Door check", len(doors), 0)]


def test_nexus_skill_run_prints_a_check_skills_findings_and_exits_by_their_severity(tmp_path):
    import json
    import subprocess
    import sys

    from cloud.store import Store
    from ifc_host.sample import write_sample_model

    model = tmp_path / "a.ifc"
    write_sample_model(model, storeys=1)
    db = tmp_path / "store.db"
    library = SkillLibrary(Store(db))
    for name, severity in (("Doors warn", "warning"), ("Doors fail", "error")):
        library.save(user_name="cli", name=name, description="every door", host_app="ifc", parameters=[],
                     code=DOOR_CHECK.replace("'warning'", repr(severity)), capability_version=None, provenance={},
                     example={}, check=True)
    before = model.read_bytes()

    def run(name: str) -> tuple[int, dict]:
        done = subprocess.run([sys.executable, "-m", "cloud.cli", "skill", "run", name, "--ifc", str(model),
                               "--db", str(db), "--json"], capture_output=True, text=True, timeout=300)
        assert done.returncode in (0, 1), done.stderr[-3000:]
        return done.returncode, json.loads(done.stdout.strip().splitlines()[-1])

    status, result = run("Doors warn")
    doors = len(ifcopenshell.open(str(model)).by_type("IfcDoor"))
    assert status == 0 and len(result["findings"]) == doors > 0, result
    assert {f["severity"] for f in result["findings"]} == {"warning"} and result["counts"]["warning"] == doors
    status, result = run("Doors fail")
    assert status == 1 and {f["severity"] for f in result["findings"]} == {"error"}
    assert model.read_bytes() == before
    listed = subprocess.run([sys.executable, "-m", "cloud.cli", "skills", "list", "--db", str(db)],
                            capture_output=True, text=True, timeout=120)
    assert "Doors warn  v1  ifc (check)" in listed.stdout
