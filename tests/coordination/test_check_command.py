"""`nexus check` as a real subprocess on real files: buildingSMART's federated pair (NEXUS_BCF_SUITE), an IDS, bad
input. The BCF it writes is opened with bcf-client and with the independent reader (independent_reader.py)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cloud.bcf.archive import read_bcf
from ifc_host.findings import Finding
from tests.coordination.independent_reader import InvalidBcf, read_archive
from tests.coordination.suite import federated_pair

REPO = Path(__file__).resolve().parents[2]
CLEARANCE_PAIRS = 19  # Architectural.ifc against MEP.ifc closer than 0.3 m (docs/coordination.md)
SELF_CLASHES = 54  # hard clashes within Architectural.ifc (its curtain wall against walls and slab)

WALLS_NEED_A_NAME = """<?xml version="1.0" encoding="UTF-8"?>
<ids xmlns="http://standards.buildingsmart.org/IDS" xmlns:xs="http://www.w3.org/2001/XMLSchema"
     xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
     xsi:schemaLocation="http://standards.buildingsmart.org/IDS http://standards.buildingsmart.org/IDS/1.0/ids.xsd">
  <info><title>Named walls</title></info>
  <specifications>
    <specification name="Walls are named" ifcVersion="IFC2X3 IFC4">
      <applicability minOccurs="0" maxOccurs="unbounded">
        <entity><name><simpleValue>IFCWALLSTANDARDCASE</simpleValue></name></entity>
      </applicability>
      <requirements>
        <attribute>
          <name><simpleValue>Name</simpleValue></name>
          <value><xs:restriction base="xs:string"><xs:pattern value="[A-Za-z].*"/></xs:restriction></value>
        </attribute>
      </requirements>
    </specification>
  </specifications>
</ids>
"""


def nexus(*args: str, timeout: float = 1400) -> subprocess.CompletedProcess:
    command = [shutil.which("nexus")] if shutil.which("nexus") else [sys.executable, "-m", "cloud.cli"]
    return subprocess.run([*command, "check", *args], capture_output=True, text=True, timeout=timeout, cwd=REPO,
                          env=os.environ.copy())


def test_the_federated_pair_has_no_hard_clash_and_the_empty_report_is_a_valid_bcf(tmp_path):
    architectural, mep = federated_pair()
    out = tmp_path / "out.bcf"
    done = nexus(str(architectural), "--ref", str(mep), "--clash", "--bcf", str(out))
    assert done.returncode == 0, done.stderr
    assert "No findings." in done.stdout
    assert "clash detection: Architectural.ifc against MEP.ifc" in done.stderr
    assert read_bcf(out).topics == {}
    assert read_archive(out) == ("2.1", {})


@pytest.mark.timeout(1500)  # 19 snapshots, each a render in a fresh interpreter: minutes on a loaded machine
def test_clearance_on_the_federated_pair_writes_a_bcf_2_1_topic_per_finding_with_a_framed_snapshot(tmp_path):
    architectural, mep = federated_pair()
    out = tmp_path / "clearance.bcf"
    done = nexus(str(architectural), "--ref", str(mep), "--clearance", "0.3", "--bcf", str(out))
    assert done.returncode == 0, done.stderr  # clearance findings are warnings
    assert f"{CLEARANCE_PAIRS} warnings ({CLEARANCE_PAIRS} findings)" in done.stdout, done.stdout
    version, topics = read_archive(out)
    assert version == "2.1" and len(topics) == CLEARANCE_PAIRS
    document = read_bcf(out)
    assert set(document.topics) == set(topics)
    for topic in topics.values():
        assert topic.topic_type == "clearance" and topic.status == "Open" and topic.priority == "Normal"
        assert topic.labels == ["clearance", "warning"] and topic.author == "nexus check"
        assert topic.created.endswith("+00:00") or topic.created.endswith("Z")
        [viewpoint] = topic.viewpoints
        assert len(viewpoint.selected) == 2
        assert viewpoint.coloured == {"FFFF0000": viewpoint.selected}
        assert viewpoint.snapshot is not None and len(viewpoint.snapshot) > 5000
        camera = viewpoint.camera
        assert camera is not None and camera["FieldOfView"] == (60.0,)
        # the camera looks at the two elements: the building is 4..16 m east, -20..-5 m north, 5.75..9.5 m up
        eye, direction = camera["CameraViewPoint"], camera["CameraDirection"]
        target = [e + d * 6 for e, d in zip(eye, direction, strict=True)]
        assert 2 < target[0] < 18 and -22 < target[1] < -3 and 3 < target[2] < 12, camera
        assert "Architectural.ifc" in topic.description and "MEP.ifc" in topic.description


def test_a_grouped_bcf_3_0_report_is_valid_for_both_readers(tmp_path):
    architectural, mep = federated_pair()
    out = tmp_path / "grouped.bcf"
    done = nexus(str(architectural), "--ref", str(mep), "--clearance", "0.3", "--bcf", str(out),
                 "--bcf-version", "3.0", "--bcf-group")
    assert done.returncode == 0, done.stderr
    version, topics = read_archive(out)
    assert version == "3.0" and len(topics) == 1
    [topic] = topics.values()
    assert topic.title == f"clearance: {CLEARANCE_PAIRS} findings"
    [viewpoint] = topic.viewpoints
    assert len(viewpoint.selected) == len(set(viewpoint.selected)) > CLEARANCE_PAIRS // 2
    assert viewpoint.snapshot is not None
    assert [t.topic.title for t in read_bcf(out).topics.values()] == [topic.title]


def test_clashes_within_one_model_are_errors_and_exit_1_with_json_per_finding(tmp_path):
    architectural, _ = federated_pair()
    done = nexus(str(architectural), "--clash", "--json")
    assert done.returncode == 1, done.stderr
    findings = [Finding.from_json(json.loads(line)) for line in done.stdout.splitlines()]
    assert len(findings) == SELF_CLASHES
    assert all(f.rule == "clash" and f.severity == "error" and len(f.elements) == 2 for f in findings)
    assert all(f.point is not None and f.distance is not None and f.distance > 0 for f in findings)
    classes = {e.ifc_class for f in findings for e in f.elements}
    assert {"IfcMember", "IfcPlate", "IfcWallStandardCase"} <= classes
    assert all(e.model == "Architectural.ifc" for f in findings for e in f.elements)


def test_ids_failures_are_findings_on_their_elements(tmp_path):
    architectural, _ = federated_pair()
    ids = tmp_path / "walls.ids"
    ids.write_text(WALLS_NEED_A_NAME, encoding="utf-8")
    out = tmp_path / "ids.bcf"
    done = nexus(str(architectural), "--ids", str(ids), "--json", "--bcf", str(out), "--bcf-version", "3.0",
                 "--no-snapshots")
    assert done.returncode == 1, done.stderr
    findings = [Finding.from_json(json.loads(line)) for line in done.stdout.splitlines()]
    assert len(findings) == 14  # the model's IfcWallStandardCase are all named " "
    assert {f.rule for f in findings} == {"IDS 'Walls are named'"}
    assert all(f.elements[0].ifc_class == "IfcWallStandardCase" for f in findings)
    version, topics = read_archive(out)
    assert version == "3.0" and len(topics) == 14
    assert {t.priority for t in topics.values()} == {"Critical"}


def test_ids_that_the_model_meets_exits_0(tmp_path):
    _, mep = federated_pair()  # no walls: the specification applies to nothing and is optional
    ids = tmp_path / "walls.ids"
    ids.write_text(WALLS_NEED_A_NAME, encoding="utf-8")
    done = nexus(str(mep), "--ids", str(ids))
    assert done.returncode == 0, done.stderr
    assert "No findings." in done.stdout


@pytest.mark.parametrize("args, message", [
    (["missing.ifc", "--clash"], "no model file at missing.ifc"),
    (["{mep}", "--ref", "nowhere.ifc", "--clash"], "no model file at nowhere.ifc"),
    (["{mep}", "--clearance", "abc"], "--clearance takes a number of metres, got 'abc'"),
    (["{mep}", "--clearance", "-1"], "--clearance must be more than 0 metres"),
    (["{mep}", "--clash", "--tolerance", "x"], "--tolerance takes a number of metres"),
    (["{mep}", "--ids", "{bad_ids}"], "not XML"),
    (["{mep}", "--ids", "absent.ids"], "no IDS file at absent.ids"),
    (["{mep}", "--rules", "standard", "--db", "{db}"], "--rules standard: no rule set 'standard'"),
    (["{mep}"], "nothing to check"),
    (["{text}", "--clash"], "text.ifc"),
])
def test_bad_input_exits_2_with_one_line_naming_it(tmp_path, args, message):
    _, mep = federated_pair()
    bad_ids = tmp_path / "bad.ids"
    bad_ids.write_text("<ids", encoding="utf-8")
    text = tmp_path / "text.ifc"
    text.write_text("hello", encoding="utf-8")
    values = {"mep": str(mep), "bad_ids": str(bad_ids), "text": str(text), "db": str(tmp_path / "store.db")}
    done = nexus(*[a.format(**values) for a in args], timeout=300)
    assert done.returncode == 2, (done.stdout, done.stderr)
    errors = [line for line in done.stderr.splitlines() if line.startswith("nexus: ")]
    assert len(errors) == 1 and message in errors[0], done.stderr
    assert "Traceback" not in done.stderr


def test_the_independent_reader_refuses_an_archive_that_breaks_the_schema(tmp_path):
    """The second reader can fail: a topic without its author is refused."""
    import zipfile

    architectural, mep = federated_pair()
    good = tmp_path / "good.bcf"
    assert nexus(str(architectural), "--ref", str(mep), "--clearance", "0.3", "--bcf", str(good),
                 "--bcf-group", "--no-snapshots").returncode == 0
    broken = tmp_path / "broken.bcf"
    with zipfile.ZipFile(good) as source, zipfile.ZipFile(broken, "w") as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename.endswith("markup.bcf"):
                data = data.replace(b"<CreationAuthor>nexus check</CreationAuthor>", b"")
            target.writestr(info, data)
    with pytest.raises(InvalidBcf, match="markup.bcf"):
        read_archive(broken)
