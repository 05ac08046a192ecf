"""Rule sets and findings through the real server and a real IFC host: saved per team (another team sees none of
them), refused with a 400 naming what is wrong, attached to a session; an error-severity finding of the rule set
rolls an automation back under `block` (file byte-identical); the session's findings and their BCF archive."""
from __future__ import annotations

import io

from cloud.bcf.archive import read_bcf
from cloud.skills.library import SkillLibrary
from tests.coordination.independent_reader import read_archive
from tests.coordination.test_rules import UNHOSTED_DOOR
from tests.support.client import Client, write_script
from tests.support.spine import automate, say

DOORS_FILL_OPENINGS = {"name": "doors", "checks": [{"check": "model rule", "severity": "error"}]}


def test_rule_sets_are_saved_per_team_and_bad_ones_are_refused(server, alice):
    library = SkillLibrary(server.state.store)
    library.set_member("arch", "alice")
    library.set_member("mep", "bob")
    bob = Client(server.url, server.token("bob"))
    saved = alice.call("PUT", "/api/rule-sets/doors", json=DOORS_FILL_OPENINGS)
    assert saved.status_code == 200, saved.text
    assert saved.json() == {"team": "arch", "rule_set": DOORS_FILL_OPENINGS}
    listed = alice.call("GET", "/api/rule-sets").json()
    assert listed["team"] == "arch"
    assert [(r["name"], r["saved_by"], r["checks"]) for r in listed["rule_sets"]] == [
        ("doors", "alice", [{"check": "model rule", "severity": "error"}])]
    assert alice.call("GET", "/api/rule-sets/doors").json() == DOORS_FILL_OPENINGS
    assert bob.call("GET", "/api/rule-sets").json()["rule_sets"] == []  # another team's
    assert bob.call("GET", "/api/rule-sets/doors").status_code == 404
    cases = [({"checks": [{"check": "schema", "severity": "fatal"}]}, "\"severity\" must be one of error"),
             ({"name": "other", "checks": [{"check": "schema", "severity": "error"}]}, "the body names 'other'"),
             ({"checks": [{"check": "script", "severity": "info", "skill": "No such"}]}, "the team has no skill"),
             ([1], "a rule set is a JSON object")]
    for body, message in cases:
        refused = alice.call("PUT", "/api/rule-sets/doors", json=body)
        assert refused.status_code == 400 and message in refused.json()["error"], refused.text
    assert alice.call("GET", "/api/rule-sets/doors").json() == DOORS_FILL_OPENINGS  # the refusals changed nothing
    library.set_member("arch", "carol", can_edit=False)
    carol = Client(server.url, server.token("carol"))
    assert "may not edit" in carol.call("PUT", "/api/rule-sets/doors", json=DOORS_FILL_OPENINGS).json()["error"]
    assert Client(server.url, None).call("GET", "/api/rule-sets").status_code == 401
    assert bob.call("DELETE", "/api/rule-sets/doors").status_code == 404
    assert alice.call("DELETE", "/api/rule-sets/doors").json() == {"deleted": "doors"}
    assert alice.call("GET", "/api/rule-sets").json()["rule_sets"] == []


def test_a_session_rule_set_blocks_an_error_and_its_findings_are_listed_and_exported(server, alice, building_host,
                                                                                      scripts_dir):
    host_id, model_path = building_host
    assert alice.call("PUT", "/api/rule-sets/doors", json=DOORS_FILL_OPENINGS).status_code == 200
    spec = write_script(scripts_dir / "loose.json", [automate(UNHOSTED_DOOR), say("done")])
    sid = alice.new_session(host_id, spec)
    assert alice.call("PUT", f"/api/sessions/{sid}/rules", json={"rules": "missing"}).status_code == 404
    bad = alice.call("PUT", f"/api/sessions/{sid}/rules", json={"rules": {"name": "x", "checks": []}})
    assert bad.status_code == 400 and "checks: a non-empty list" in bad.json()["error"]
    attached = alice.call("PUT", f"/api/sessions/{sid}/rules", json={"rules": "doors"})
    assert attached.json() == {"session_id": sid, "rules": {"name": "doors", "checks": 1}}
    assert alice.call("PUT", f"/api/sessions/{sid}/validation", json={"validation": "block"}).status_code == 200
    before = model_path.read_bytes()
    result = alice.run(sid, "add a door").of("Metadata", "tool_result")[0]["metadata"]
    assert not result["committed"] and result["error"]["type"] in ("RuleSetFailed", "ValidationFailed")
    assert any("rule set 'doors': error" in f["message"] for f in result["failures"])
    assert model_path.read_bytes() == before

    # under warn the same door is kept, and the session lists the finding with its element and tool call
    sid = alice.new_session(host_id, spec)
    assert alice.call("PUT", f"/api/sessions/{sid}/rules", json={"rules": DOORS_FILL_OPENINGS}).status_code == 200
    result = alice.run(sid, "add a door").of("Metadata", "tool_result")[0]["metadata"]
    assert result["committed"], result.get("error")
    findings = alice.call("GET", f"/api/sessions/{sid}/findings").json()["findings"]
    (finding,) = findings
    assert finding["rule"].startswith("model rule") and finding["severity"] == "error"
    assert finding["tool_call_id"] == result["tool_call_id"] and finding["committed"] is True
    assert finding["elements"][0]["ifc_class"] == "IfcDoor" and finding["elements"][0]["name"] == "loose door"
    for version in ("2.1", "3.0"):
        archive = alice.call("GET", f"/api/sessions/{sid}/bcf?version={version}")
        assert archive.status_code == 200 and archive.headers["Content-Type"] == "application/octet-stream"
        path = model_path.parent / f"session-{version}.bcf"
        path.write_bytes(archive.content)
        (topic,) = read_bcf(path).topics.values()
        assert topic.topic.title == finding["title"]
        got_version, topics = read_archive(path)
        (read,) = topics.values()
        assert got_version == version and read.viewpoints[0].selected == [finding["elements"][0]["global_id"]]
    assert alice.call("GET", f"/api/sessions/{sid}/bcf?version=4").status_code == 400
    bob = Client(server.url, server.token("bob"))
    assert bob.call("GET", f"/api/sessions/{sid}/findings").status_code == 404
    assert bob.call("GET", f"/api/sessions/{sid}/bcf").status_code == 404
    assert io.BytesIO(archive.content).read(2) == b"PK"


def test_a_rule_set_runs_on_demand_on_the_host_and_joins_the_session_findings(server, alice, building_host,
                                                                              scripts_dir):
    from tests.coordination.test_rules import DOORS_NEED_A_TAG
    from tests.ifc_host.test_ids import FIRE_RATING_IDS

    host_id, model_path = building_host
    sid = alice.new_session(host_id, write_script(scripts_dir / "idle.json", [say("ok")]))
    rules = {"name": "now", "checks": [{"check": "ids", "severity": "warning", "ids_xml": FIRE_RATING_IDS},
                                       {"check": "script", "name": "tags", "severity": "info",
                                        "code": DOORS_NEED_A_TAG}]}
    before = model_path.read_bytes()
    done = alice.call("POST", f"/api/sessions/{sid}/check", json={"rules": rules}, timeout=300)
    assert done.status_code == 200, done.text
    found = done.json()["findings"]
    ids = [f for f in found if f["rule"] == "IDS 'Door fire rating'"]
    assert len(ids) == 4 and {f["severity"] for f in ids} == {"warning"}
    assert {f["elements"][0]["model"] for f in ids} == {model_path.name}
    assert [f["title"] for f in found if f["rule"] == "tags"] == ["unreadable FINDING line 1"]
    assert model_path.read_bytes() == before  # a collection: nothing is written
    listed = alice.call("GET", f"/api/sessions/{sid}/findings").json()["findings"]
    assert len(listed) == len(found) and {f["tool_call_id"] for f in listed} == {done.json()["check_id"]}
    assert alice.call("POST", f"/api/sessions/{sid}/check", json={"rules": "missing"}).status_code == 404
    bad = alice.call("POST", f"/api/sessions/{sid}/check", json={"rules": {"name": "x", "checks": [{}]}})
    assert bad.status_code == 400 and "check 1" in bad.json()["error"]
    bob = Client(server.url, server.token("bob"))
    assert bob.call("POST", f"/api/sessions/{sid}/check", json={"rules": rules}).status_code == 404
