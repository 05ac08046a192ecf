"""A commit's model rebuilt in memory from the records that changed (issue 29, item 3): the keeper's shadow
copy of the committed model, with the changed records applied, is byte for byte the model the script's
process sent; anything it cannot show to be exactly that is refused (the keeper then parses the whole
text). Real IfcOpenShell models; the commit itself through a real keeper."""
from __future__ import annotations

import hashlib
from pathlib import Path

import ifcopenshell
import ifcopenshell.api
import pytest

from ifc_host.executor import IsolatedExecutor, execute_command
from ifc_host.model_diff import DATA_START, NotCanonical, data_section, diff_records, record_count
from ifc_host.model_file import open_checked
from ifc_host.model_patch import apply_records, check_header
from ifc_host.sample import write_sample_model


@pytest.fixture()
def sample(tmp_path: Path) -> Path:
    path = tmp_path / "office.ifc"
    write_sample_model(path, storeys=2)
    return path


def _edit(model: ifcopenshell.file) -> None:
    doors = sorted(model.by_type("IfcDoor"), key=lambda d: d.id())
    doors[0].Name = "Tür 'Nord' \\ 😀"  # non-Latin-1, an astral character, a quote, a backslash
    doors[1].Description = ""
    doors[2].OverallHeight = 2.125
    ifcopenshell.api.run("root.remove_product", model, product=sorted(model.by_type("IfcWall"), key=lambda w: w.id())[0])
    wall = ifcopenshell.api.run("root.create_entity", model, ifc_class="IfcWall", name="new wall")
    pset = ifcopenshell.api.run("pset.add_pset", model, product=wall, name="Pset_WallCommon")
    ifcopenshell.api.run("pset.edit_pset", model, pset=pset, properties={
        "FireRating": "F90", "IsExternal": True, "ThermalTransmittance": 0.25})


def _diff(committed: ifcopenshell.file, data: bytes):
    return diff_records(data_section(committed.to_string().encode("utf-8")), data_section(data))


def test_the_rebuilt_shadow_is_the_model_that_was_sent(sample: Path):
    committed, shadow, script = open_checked(sample), open_checked(sample), open_checked(sample)
    _edit(script)
    data = script.to_string().encode("utf-8")
    diff = _diff(committed, data)
    assert diff.created and diff.deleted and diff.differing
    check_header(data[:data.find(DATA_START) + 1], shadow.schema_identifier)
    apply_records(shadow, diff)
    assert data_section(shadow.to_string().encode("utf-8")) == data_section(data)
    door = sorted(shadow.by_type("IfcDoor"), key=lambda d: d.id())[0]
    assert door.Name == "Tür 'Nord' \\ 😀"


@pytest.mark.parametrize(("change", "why"), [
    (lambda line: line.replace(b",", b" ,", 1), "not written as IfcOpenShell writes"),
    (lambda line: line[:-2] + b",$);", "attributes"),
    (lambda line: line.replace(b",#", b",#999999", 1), "a reference to an entity that does not exist"),
    (lambda line: line.replace(b"'changed'", b"'chan'ged'"), "a quote that is not escaped"),
])
def test_a_record_not_as_ifcopenshell_writes_it_is_refused(sample: Path, change, why: str):
    committed, shadow, script = open_checked(sample), open_checked(sample), open_checked(sample)
    door = sorted(script.by_type("IfcDoor"), key=lambda d: d.id())[0]
    door.Name = "changed"
    data = script.to_string().encode("utf-8")
    line = next(x for x in data.split(b"\n") if x.startswith(f"#{door.id()}=".encode()))
    tampered = data.replace(line, change(line))
    with pytest.raises(NotCanonical):
        apply_records(shadow, _diff(committed, tampered))


def test_a_deleted_entity_something_still_refers_to_is_refused(sample: Path):
    committed, shadow = open_checked(sample), open_checked(sample)
    data = committed.to_string().encode("utf-8")
    placement = committed.by_type("IfcLocalPlacement")[-1]  # referred to by its product, which stays unchanged
    line = next(x for x in data.split(b"\n") if x.startswith(f"#{placement.id()}=".encode()))
    with pytest.raises(NotCanonical, match="still refers to the deleted"):
        apply_records(shadow, _diff(committed, data.replace(line + b"\n", b"")))


def test_a_header_naming_another_schema_is_refused(sample: Path):
    data = open_checked(sample).to_string().encode("utf-8")
    header = data[:data.find(DATA_START) + 1]
    check_header(header, "IFC4")
    with pytest.raises(NotCanonical, match="names the schema IFC2X3"):
        check_header(header.replace(b"('IFC4')", b"('IFC2X3')"), "IFC4")
    with pytest.raises(NotCanonical):
        check_header(header.replace(b"FILE_NAME(", b"FILE_NAME(#1,"), "IFC4")


def test_a_commit_rebuilds_its_model_from_the_changed_records_and_saves_what_was_sent(sample: Path):
    runner = IsolatedExecutor(sample, isolation="fork")
    try:
        code = "sorted(model.by_type('IfcDoor'), key=lambda d: d.id())[0].Name = 'rebuilt'"
        reply = runner.execute(execute_command("c1", "automate", code, 60))
        assert reply["committed"] is True, reply.get("error")
        assert reply["model_read"] == "changed records in place"
        assert reply["changes"]["modified"], reply["changes"]
        saved = sample.read_bytes()
        read = runner.execute(execute_command("r1", "collect", "print(model.to_string())", 60))
        # The keeper's committed model (as the next script's process gets it) is the saved file's model.
        assert data_section(read["stdout"].encode("utf-8")) == data_section(saved)
        reply = runner.execute(execute_command("c2", "automate", code.replace("rebuilt", "again"), 60))
        assert reply["committed"] is True and reply["model_read"] == "changed records in place"
        assert hashlib.sha256(sample.read_bytes()).digest() != hashlib.sha256(saved).digest()
    finally:
        runner.close()


def _exists(model: ifcopenshell.file):
    def check(entity_id: int) -> bool:
        try:
            model.by_id(entity_id)
        except RuntimeError:
            return False
        return True
    return check


@pytest.mark.parametrize("deletes", [False, True])
def test_the_diff_in_place_finds_what_the_diff_of_every_line_finds(sample: Path, deletes: bool):
    committed, script = open_checked(sample), open_checked(sample)
    for door in sorted(script.by_type("IfcDoor"), key=lambda d: d.id())[::3]:
        door.Name = f"door {door.id()}"
    ifcopenshell.api.run("root.create_entity", script, ifc_class="IfcWall", name="appended")
    if deletes:
        ifcopenshell.api.run("root.remove_product", script, product=script.by_type("IfcWindow")[0])
    before = data_section(committed.to_string().encode("utf-8"))
    after = data_section(script.to_string().encode("utf-8"))
    fast, every_line = diff_records(before, after, _exists(committed)), diff_records(before, after)
    assert (fast.created, fast.deleted, fast.differing, fast.records, fast.new_records) == (
        every_line.created, every_line.deleted, every_line.differing, every_line.records, every_line.new_records)
    assert fast.created and fast.differing and bool(fast.deleted) is deletes


def test_an_entity_written_twice_is_never_applied(sample: Path):
    committed, shadow = open_checked(sample), open_checked(sample)
    before = data_section(committed.to_string().encode("utf-8"))
    first = before.split(b"\n")[0]
    twice = before + first[:-2] + b",$);\n"  # #1 again, after the last record
    diff = diff_records(before, twice, _exists(committed))
    assert diff.created == {int(first[1:first.index(b"=")])}  # taken for a new entity by the line diff...
    with pytest.raises(NotCanonical):  # ...which the model already has
        apply_records(shadow, diff)


def _every_line_in_place(before: bytes, after: bytes, in_before):
    """The diff as worked out before the texts were trimmed to the lines between their common ends: every line
    split and compared in place, the general way when that cannot decide."""
    from ifc_host.model_diff import _diff_in_place, _lines

    diff = _diff_in_place(_lines(before), _lines(after), in_before)
    if diff is None:
        return diff_records(before, after)
    diff.records_before = len(_lines(before))
    return diff


def _edits_of(before: bytes) -> dict[str, bytes]:
    lines = before.split(b"\n")[:-1]
    last, middle = len(lines) - 1, len(lines) // 2

    def rewritten(*indices: int, tail: bytes = b"") -> list[bytes]:
        out = list(lines)
        for index in indices:
            out[index] = out[index][:-2] + b"'x');" if out[index].endswith(b");") else out[index] + b"x"
        return out + [tail] if tail else out

    def text(out: list[bytes]) -> bytes:
        return b"".join(line + b"\n" for line in out)

    new_id = max(int(line[1:line.index(b"=")]) for line in lines) + 1
    appended = f"#{new_id}=IFCCARTESIANPOINT((1.,2.,3.));".encode()
    return {
        "unchanged": before,
        "first line": text(rewritten(0)),
        "last line": text(rewritten(last)),
        "two far apart": text(rewritten(1, last - 1)),
        "adjacent": text(rewritten(middle, middle + 1)),
        "one longer by a prefix": text([*lines[:middle], lines[middle][:-1] + b"0;", *lines[middle + 1:]]),
        "appended": text(rewritten(middle, tail=appended)),
        "appended only": before + appended + b"\n",
        "appended without a newline": before + appended,
        "no last newline": before[:-1],
        "last line gone": text(lines[:-1]),
        "a line inserted": text([*lines[:middle], appended, *lines[middle:]]),
        "a line gone": text([*lines[:middle], *lines[middle + 1:]]),
        "swapped": text([*lines[:middle], lines[middle + 1], lines[middle], *lines[middle + 2:]]),
        "an empty line": text([*lines[:middle], b"", *lines[middle:]]),
        "a line twice": text([*lines, lines[middle]]),
        "empty": b"",
    }


def test_the_diff_of_the_lines_between_the_common_ends_is_the_diff_of_every_line(sample: Path):
    committed = open_checked(sample)
    before = data_section(committed.to_string().encode("utf-8"))
    for name, after in _edits_of(before).items():
        for old, new in ((before, after), (after, before)):
            try:
                expected = _every_line_in_place(old, new, _exists(committed))
            except NotCanonical:
                with pytest.raises(NotCanonical):
                    diff_records(old, new, _exists(committed))
                continue
            for got in (diff_records(old, new, _exists(committed)),
                        diff_records(old, new, _exists(committed), record_count(old))):  # counted ahead
                assert (got.created, got.deleted, got.differing, got.records, got.records_before, got.new_records,
                        got.old_records) == (expected.created, expected.deleted, expected.differing,
                                             expected.records, expected.records_before, expected.new_records,
                                             expected.old_records), name
