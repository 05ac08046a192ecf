"""Rule sets (ifc_host/rule_set.py, run by ifc_host/rules.py): a named list of checks with a severity each, read with clear errors, run over a
whole model, and after an automation on what the script introduced (real keeper and script processes): an
error-severity finding rolls the run back under `block` (the file stays byte-identical), a warning does not."""
from __future__ import annotations

import json
from pathlib import Path

import ifcopenshell
import pytest

from ifc_host.check_scripts import sandboxed_check_scripts
from ifc_host.executor import IsolatedExecutor, execute_command
from ifc_host.rule_set import RuleSetProblem, parse_rule_set, read_rule_set_file
from ifc_host.rules import run_rule_set, script_findings
from tests.conformance.ifc_models import write_small_building
from tests.ifc_host.test_ids import FIRE_RATING_IDS, STOREY, hosted_door

UNHOSTED_DOOR = STOREY + """
door = ifcopenshell.api.root.create_entity(model, ifc_class='IfcDoor', name='loose door')
ifcopenshell.api.spatial.assign_container(model, relating_structure=storey, products=[door])
"""
# A wall standing inside wall W101 (both 0.2 m thick, along x at y = 0): a hard clash.
OVERLAPPING_WALL = STOREY + """
import numpy
body = [c for c in model.by_type('IfcGeometricRepresentationSubContext') if c.ContextIdentifier == 'Body'][0]
wall = ifcopenshell.api.root.create_entity(model, ifc_class='IfcWall', name='W-dup')
ifcopenshell.api.spatial.assign_container(model, relating_structure=storey, products=[wall])
matrix = numpy.eye(4)
matrix[0][3] = 1.0
ifcopenshell.api.geometry.edit_object_placement(model, product=wall, matrix=matrix)
shape = ifcopenshell.api.geometry.add_wall_representation(model, context=body, length=2, height=3, thickness=0.2)
ifcopenshell.api.geometry.assign_representation(model, product=wall, representation=shape)
"""
DOORS_NEED_A_TAG = """
import json
for door in model.by_type('IfcDoor'):
    if not door.Tag:
        print('FINDING ' + json.dumps({'title': f'{door.Name} has no tag', 'elements': [door.GlobalId]}))
print('FINDING not json')
"""


@pytest.fixture()
def model_path(tmp_path: Path) -> Path:
    return write_small_building(tmp_path / "model.ifc")


@pytest.fixture()
def executor(model_path: Path):
    runner = IsolatedExecutor(model_path)
    yield runner
    runner.close()


def _rules(*checks: dict) -> dict:
    return {"name": "coordination", "checks": list(checks)}


_counter = iter(range(1_000_000))


def _automate(executor: IsolatedExecutor, code: str, rules: dict, validation: str = "warn") -> dict:
    return executor.execute(execute_command(f"r{next(_counter)}", "automate", code, 120, validation=validation,
                                       rules=rules))


@pytest.mark.parametrize(("document", "message"), [
    ([], "a rule set is a JSON object"),
    ({"name": "", "checks": [{"check": "schema", "severity": "error"}]}, "name: 1-64 letters"),
    (_rules(), "checks: a non-empty list"),
    (_rules({"check": "spelling", "severity": "error"}), "check 1: \"check\" must be one of schema, model rule"),
    (_rules({"check": "schema", "severity": "fatal"}), "check 1 (schema): \"severity\" must be one of error"),
    (_rules({"check": "clearance", "severity": "warning"}), "check 1 (clearance): \"distance\" (metres) is required"),
    (_rules({"check": "clash", "severity": "error", "tolerance": -1}), "\"tolerance\" must be at least 0"),
    (_rules({"check": "ids", "severity": "error", "ids_xml": "<svg/>"}), "check 1 (ids): not an IDS document"),
    (_rules({"check": "ids", "severity": "error", "ids": "doors.ids"}), "a saved rule set holds the IDS itself"),
    (_rules({"check": "script", "severity": "info", "code": "def ("}), "check 1 (script): the code does not compile"),
    (_rules({"check": "schema", "severity": "error", "colour": "red"}), "unknown key(s) colour"),
])
def test_a_rule_set_that_cannot_be_used_is_refused_naming_the_check(document, message):
    with pytest.raises(RuleSetProblem) as caught:
        parse_rule_set(document)
    assert message in str(caught.value)


def test_a_rule_set_file_reads_its_ids_beside_it_and_keeps_it_inline(tmp_path):
    (tmp_path / "doors.ids").write_text(FIRE_RATING_IDS)
    path = tmp_path / "rules.json"
    path.write_text(json.dumps(_rules({"check": "ids", "severity": "warning", "ids": "doors.ids"})))
    rules = read_rule_set_file(path)
    assert rules.checks[0].ids_xml == FIRE_RATING_IDS
    assert parse_rule_set(rules.as_json()) == rules  # what is saved reads back the same
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(RuleSetProblem, match="bad.json is not JSON"):
        read_rule_set_file(tmp_path / "bad.json")


def test_a_whole_model_run_gives_every_finding_its_checks_severity(model_path):
    model = ifcopenshell.open(str(model_path))
    rules = parse_rule_set(_rules(
        {"check": "ids", "severity": "warning", "ids_xml": FIRE_RATING_IDS},
        {"check": "model rule", "severity": "error"},
        {"check": "script", "name": "Doors need a tag", "severity": "info", "code": DOORS_NEED_A_TAG}))
    with sandboxed_check_scripts(model_path) as run_script:
        findings = run_rule_set(rules, model_path, models={str(model_path): model}, run_script=run_script)
    ids = [f for f in findings if f.rule == "IDS 'Door fire rating'"]
    assert len(ids) == len(model.by_type("IfcDoor")) and {f.severity for f in ids} == {"warning"}
    assert not [f for f in findings if f.rule == "model rule"]  # every door of the building fills an opening
    scripted = [f for f in findings if f.rule == "Doors need a tag"]
    assert [f.title for f in scripted] == ["unreadable FINDING line 1"]  # the doors have tags; the bad line is said
    assert {f.severity for f in scripted} == {"info"}


def test_a_script_check_finds_elements_by_global_id_and_changes_nothing(model_path):
    model = ifcopenshell.open(str(model_path))
    door = model.by_type("IfcDoor")[0]
    door.Tag = None
    rules = parse_rule_set(_rules({"check": "script", "name": "tags", "severity": "warning",
                                   "code": DOORS_NEED_A_TAG + "model.remove(model.by_type('IfcWall')[0])\n"}))
    walls = len(model.by_type("IfcWall"))
    (found, _bad) = run_rule_set(rules, model_path, models={str(model_path): model}, run_script=script_findings)
    assert found.elements[0].global_id == door.GlobalId and found.elements[0].ifc_class == "IfcDoor"
    assert len(model.by_type("IfcWall")) == walls  # the check's own edit was undone


def test_a_script_check_runs_sandboxed_and_never_in_the_process_that_asked(model_path, monkeypatch):
    monkeypatch.setenv("NEXUS_PROBE_SECRET", "the asker's secret")
    probe = ("import json, os, socket\n"
             "try:\n    socket.socket(socket.AF_UNIX).close(); sockets = 'open'\n"
             "except OSError:\n    sockets = 'refused'\n"
             "title = os.environ.get('NEXUS_PROBE_SECRET', 'unseen') + ' / sockets ' + sockets\n"
             "print('FINDING ' + json.dumps({'title': title, 'elements': []}))\n")
    rules = parse_rule_set(_rules({"check": "script", "name": "probe", "severity": "info", "code": probe}))
    with pytest.raises(RuleSetProblem, match="runs only in a script's sandbox"):
        run_rule_set(rules, model_path)
    with sandboxed_check_scripts(model_path) as run_script:
        (found,) = run_rule_set(rules, model_path, run_script=run_script)
    assert found.title == "unseen / sockets refused", found


def test_an_error_of_the_rule_set_rolls_the_automation_back_under_block(executor, model_path):
    rules = _rules({"check": "model rule", "severity": "error"})
    before = model_path.read_bytes()
    result = _automate(executor, UNHOSTED_DOOR, rules, validation="block")
    assert not result["committed"]
    assert result["error"]["type"] in ("RuleSetFailed", "ValidationFailed")
    assert any("rule set 'coordination': error: model rule" in f["message"] for f in result["failures"])
    assert result["validation"]["rules"]["introduced"] == 1
    (unified,) = result["validation"]["unified"]  # validation's copy and the rule set's are one finding
    assert unified["rule"].startswith("model rule") and unified["severity"] == "error"
    assert unified["elements"][0]["ifc_class"] == "IfcDoor" and unified["elements"][0]["global_id"]
    assert model_path.read_bytes() == before


def test_an_ids_warning_of_the_rule_set_is_reported_but_kept_under_block(executor):
    rules = _rules({"check": "ids", "severity": "warning", "ids_xml": FIRE_RATING_IDS})
    result = _automate(executor, hosted_door("new door"), rules, validation="block")
    assert result["committed"], result.get("error")
    (finding,) = result["validation"]["rules"]["findings"]  # the existing doors failed before: not the script's
    assert finding["severity"] == "warning" and finding["elements"][0]["name"] == "new door"
    assert any(f["severity"] == "warning" and "IDS 'Door fire rating'" in f["message"] for f in result["failures"])


def test_a_clash_the_script_introduced_blocks_it_and_an_old_one_does_not(executor, model_path):
    rules = _rules({"check": "clash", "severity": "error"})
    before = model_path.read_bytes()
    result = _automate(executor, OVERLAPPING_WALL, rules, validation="block")
    assert not result["committed"] and result["error"]["type"] == "RuleSetFailed", result.get("error")
    clashes = result["validation"]["rules"]["findings"]
    assert all("W-dup" in {e["name"] for e in c["elements"]} for c in clashes)
    assert any({e["name"] for e in c["elements"]} == {"W-dup", "W101"} and c["distance"] > 0 for c in clashes)
    assert model_path.read_bytes() == before
    warned = _automate(executor, OVERLAPPING_WALL, rules, validation="warn")
    assert warned["committed"] and warned["validation"]["rules"]["introduced"] == len(clashes)
    renamed = _automate(executor, "[w for w in model.by_type('IfcWall') if w.Name == 'W201'][0].Name = 'W201b'\n",
                        rules, validation="block")
    assert renamed["committed"] and renamed["validation"]["rules"]["introduced"] == 0  # the clash was there before
