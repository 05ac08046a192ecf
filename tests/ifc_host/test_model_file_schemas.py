"""IFC 4.3 as exporters write it: headers IfcOpenShell has no schema of that name for open as the nearest one it
has, with a warning naming the identifier, without editing the user's file; enumeration values outside the schema
read as unset with a warning naming the entity; a file that still cannot be read is refused naming where."""
from __future__ import annotations

import hashlib
from pathlib import Path

import ifcopenshell
import ifcopenshell.api
import ifcopenshell.api.aggregate
import ifcopenshell.api.root
import ifcopenshell.api.spatial
import ifcopenshell.api.unit
import pytest

from ifc_host.executor import IsolatedExecutor, execute_command
from ifc_host.model_file import BadModelError, open_checked, open_warnings


def write_ifc4x3(path: Path, declared: str) -> Path:
    """A small IFC4X3_ADD2 model (project, site, storey, a wall) whose header then names `declared`."""
    model = ifcopenshell.file(schema="IFC4X3_ADD2")
    project = ifcopenshell.api.root.create_entity(model, ifc_class="IfcProject", name="Alias")
    ifcopenshell.api.unit.assign_unit(model)
    site = ifcopenshell.api.root.create_entity(model, ifc_class="IfcSite", name="Site")
    storey = ifcopenshell.api.root.create_entity(model, ifc_class="IfcBuildingStorey", name="Deck")
    ifcopenshell.api.aggregate.assign_object(model, relating_object=project, products=[site])
    ifcopenshell.api.aggregate.assign_object(model, relating_object=site, products=[storey])
    wall = ifcopenshell.api.root.create_entity(model, ifc_class="IfcWall", name="Parapet")
    ifcopenshell.api.spatial.assign_container(model, relating_structure=storey, products=[wall])
    model.write(str(path))
    text = path.read_text()
    assert "FILE_SCHEMA(('IFC4X3_ADD2'))" in text
    path.write_text(text.replace("FILE_SCHEMA(('IFC4X3_ADD2'))", f"FILE_SCHEMA(('{declared}'))"))
    return path


@pytest.mark.parametrize("declared", ["IFC4X3", "IFC4X3_TC1", "IFC4X3_ADD1", "IFC4X3_RC2", "IFC4X3_RC3", "IFC4X3_RC4"])
def test_an_ifc_4_3_header_opens_as_the_schema_ifcopenshell_has_and_says_so(tmp_path: Path, declared: str):
    path = write_ifc4x3(tmp_path / f"{declared}.ifc", declared)
    with pytest.raises(ifcopenshell.SchemaError):  # what a plain open says
        ifcopenshell.open(str(path))
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    model = open_checked(path)
    assert model.schema_identifier == "IFC4X3_ADD2"
    assert [w.Name for w in model.by_type("IfcWall")] == ["Parapet"]
    (warning, *_) = open_warnings(model)
    assert f"names the schema {declared}" in warning and "read as IFC4X3_ADD2" in warning
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert not list(tmp_path.glob(".nexus-schema-*")) and not list(Path(path.parent).glob("*.tmp"))


def test_an_unknown_schema_that_is_not_ifc_4_3_is_still_refused(tmp_path: Path):
    path = write_ifc4x3(tmp_path / "future.ifc", "IFC5")
    with pytest.raises(BadModelError, match=r"No schema named IFC5"):
        open_checked(path)


def test_an_enumeration_value_outside_the_schema_reads_as_unset_with_the_entity_named(tmp_path: Path):
    path = write_ifc4x3(tmp_path / "enum.ifc", "IFC4X3_ADD2")
    text = path.read_text()
    wall_line = next(line for line in text.splitlines() if "=IFCWALL(" in line)
    assert wall_line.endswith("$);")
    path.write_text(text.replace(wall_line, wall_line[:-3] + ".TRACKSTRUCTUREPART.);"))
    wall_id = wall_line.split("=")[0]
    line_number = text.splitlines().index(wall_line) + 1
    model = open_checked(path)
    (wall,) = model.by_type("IfcWall")
    assert wall.PredefinedType is None
    (warning,) = [w for w in open_warnings(model) if "TRACKSTRUCTUREPART" in w]
    assert warning.startswith(f"{wall_id} (line {line_number}) has .TRACKSTRUCTUREPART.")


def test_a_file_that_still_cannot_be_read_is_refused_naming_the_entity_and_line(tmp_path: Path):
    path = write_ifc4x3(tmp_path / "broken.ifc", "IFC4X3_RC4")
    text = path.read_text()
    wall_line = next(line for line in text.splitlines() if "=IFCWALL(" in line)
    path.write_text(text.replace(wall_line, wall_line.replace("'Parapet'", "'Parapet',@@")))
    with pytest.raises(BadModelError) as refused:
        open_checked(path)
    line_number = text.splitlines().index(wall_line) + 1
    wall_id = wall_line.split("=")[0]
    assert f"token @@ at {wall_id} (line {line_number})" in str(refused.value), str(refused.value)


@pytest.mark.parametrize("isolation", ["fork", "spawn"])
def test_the_host_serves_and_commits_an_ifc_4_3_draft_file(tmp_path: Path, isolation: str):
    path = write_ifc4x3(tmp_path / "road.ifc", "IFC4X3_RC2")
    out = tmp_path / "out.ifc"
    executor = IsolatedExecutor(path, out, isolation=isolation)
    try:
        assert executor.document["schema"] == "IFC4X3_ADD2"
        result = executor.execute(execute_command("r1", "automate", "model.by_type('IfcWall')[0].Name = 'Kerb'", 120))
        assert result["ok"] and result["committed"], result
    finally:
        executor.close()
    assert "FILE_SCHEMA(('IFC4X3_RC2'))" in path.read_text()
    assert [w.Name for w in open_checked(out).by_type("IfcWall")] == ["Kerb"]
