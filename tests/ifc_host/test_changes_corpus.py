"""Before → after and validation on real files exported by other tools (the corpus, see corpus/SOURCES.md).

On every corpus file present: renumber doors, add a property set to two elements and move one wall, with
the change recorder installed as a script process installs it. Every modified element lands in exactly one
group, the old and new values are the ones the script saw and wrote, and benign edits introduce no findings.
"""
from __future__ import annotations

import ifcopenshell
import ifcopenshell.api.geometry
import ifcopenshell.api.pset
import ifcopenshell.util.placement
import ifcopenshell.util.unit
import pytest

from ifc_host.change_details import describe_changes
from ifc_host.changes import ChangeRecorder
from ifc_host.model_file import open_checked
from ifc_host.validation import introduced_findings
from tests.corpus.corpus_files import CorpusFile, manifest

PRESENT = [entry for entry in manifest() if entry.present()]


def edit(model: ifcopenshell.file) -> tuple[dict[int, tuple[str | None, str]], list[int], int | None]:
    """The script: returns {door id: (old tag, new tag)}, the ids given a property set, the moved wall's id."""
    tags = {}
    for number, door in enumerate(sorted(model.by_type("IfcDoor"), key=lambda d: d.id())[:5]):
        tags[door.id()] = (door.Tag, f"NX-{number}")
        door.Tag = f"NX-{number}"
    elements = [e for e in sorted(model.by_type("IfcElement"), key=lambda e: e.id())
                if not e.is_a("IfcFeatureElement")][:2]
    for element in elements:
        pset = ifcopenshell.api.pset.add_pset(model, product=element, name="Pset_NexusCheck")
        ifcopenshell.api.pset.edit_pset(model, pset=pset, properties={"Checked": True})
    walls = [w for w in sorted(model.by_type("IfcWall"), key=lambda w: w.id())
             if w.ObjectPlacement is not None and w.ObjectPlacement.is_a("IfcLocalPlacement")]
    if not walls:
        return tags, [e.id() for e in elements], None
    matrix = ifcopenshell.util.placement.get_local_placement(walls[0].ObjectPlacement)
    matrix[0][3] += 0.3 / ifcopenshell.util.unit.calculate_unit_scale(model)
    ifcopenshell.api.geometry.edit_object_placement(model, product=walls[0], matrix=matrix, is_si=False)
    return tags, [e.id() for e in elements], walls[0].id()


if PRESENT:
    @pytest.mark.parametrize("entry", PRESENT, ids=[entry.file for entry in PRESENT])
    def test_before_after_and_validation_on_a_real_file(entry: CorpusFile):
        model = open_checked(entry.location)
        recorder = ChangeRecorder(model)
        model.transaction = recorder
        try:
            tags, with_pset, wall = edit(model)
        finally:
            model.transaction = None
        changes = recorder.finish()
        details = describe_changes(model, changes)
        assert "error" not in details, details.get("error")
        grouped = [i for group in details["groups"] for i in group["ids"]]
        assert sorted(grouped) == changes.modified and sum(g["count"] for g in details["groups"]) == len(grouped)
        shown = {e["id"]: {c["key"]: (c["old"], c["new"]) for c in e["changes"]} for e in details["elements"]}
        for door_id, (old, new) in tags.items():
            if old != new and door_id in shown:
                assert shown[door_id]["attribute:Tag"] == (old, new)
        for element_id in with_pset:
            if element_id in shown:
                assert shown[element_id]["property:Pset_NexusCheck.Checked"] == (None, "True")
        if wall is not None and wall in shown:
            kinds = next(e["kinds"] for e in details["elements"] if e["id"] == wall)
            assert "placement" in kinds
            old, new = shown[wall]["placement"]
            assert old != new
        findings, checked = introduced_findings(model, changes)
        assert findings == [] and checked >= len(tags)
