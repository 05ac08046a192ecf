"""The one finding type (ifc_host/findings.py): its JSON form, its checks, and the validation findings it takes in."""
from __future__ import annotations

import json

import ifcopenshell
import pytest

from ifc_host import validation
from ifc_host.findings import ElementRef, Finding, from_validation
from ifc_host.sample import write_sample_model


def test_a_finding_survives_its_json_form():
    a = ElementRef("2WZdO$9lP51fVli8sT5dFZ", "IfcWallStandardCase", "Wall", "Architectural.ifc", 42)
    b = ElementRef("3D9pjHJ0HCnggyepvsht8s", "IfcFlowSegment", "Duct", "MEP.ifc", None)
    finding = Finding("clash", "error", "Wall clashes with Duct", "deep", (a, b), (1.0, -2.5, 8.06), 0.05)
    assert Finding.from_json(json.loads(json.dumps(finding.as_json()))) == finding
    bare = Finding("IDS 'x'", "info", "not checked")
    assert Finding.from_json(bare.as_json()) == bare and bare.as_json()["point"] is None


def test_a_severity_outside_error_warning_info_is_refused():
    with pytest.raises(ValueError, match="severity must be one of error, warning, info"):
        Finding("clash", "fatal", "x")


def test_a_validation_finding_becomes_a_finding_with_its_element(tmp_path):
    path = tmp_path / "sample.ifc"
    write_sample_model(str(path), storeys=1)
    model = ifcopenshell.open(str(path))
    wall = model.by_type("IfcWall")[0]
    found = validation.Finding(wall.id(), "IfcWall", "Name", "type", "expected a label", kind="schema")
    finding = from_validation(found, model, "sample.ifc")
    assert finding.rule == "schema type" and finding.severity == "error"
    assert finding.elements == (ElementRef(wall.GlobalId, "IfcWall", wall.Name, "sample.ifc", wall.id()),)
    assert finding.title == "IfcWall.Name: type" and finding.description == "expected a label"
    ids = validation.Finding(wall.id(), "IfcWall", None, "IDS 'Walls'", "Name: wrong", kind="ids")
    assert from_validation(ids, model, "sample.ifc", severity="warning").rule == "IDS 'Walls'"
    gone = validation.Finding(999_999, "IfcDoor", None, "fills", "no opening", kind="model rule")
    assert from_validation(gone, model, "sample.ifc").elements == (
        ElementRef("", "IfcDoor", None, "sample.ifc", 999_999),)
