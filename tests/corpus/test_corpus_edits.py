"""Before → after, validation and the IDS check on every corpus file, under fork and under spawn.

One automation per file and isolation, through a real keeper and script process (ifc_host.executor): it
renumbers the doors, edits a property set, moves an element, gives one a new type and deletes one
(tests/corpus/edit_script.py), with an IDS that the renumbering breaks exactly once. The trusted change
report must itemise each edit with the values the script saw and wrote, validation must find nothing the
edits introduced, the IDS check exactly the one tag off its pattern, the saved file must open with the
edits in it, and the user's file stays byte-identical. Views do not depend on the isolation (they render
in a process of their own from the committed file): test_corpus_views.py draws them once.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ifc_host.executor import IsolatedExecutor, execute_command
from ifc_host.keeper_process import ISOLATIONS
from ifc_host.model_file import open_checked
from tests.corpus.corpus_files import CorpusFile, corpus_dirs, manifest
from tests.corpus.edit_script import CORPUS_IDS, EDIT_SCRIPT, OFF_PATTERN_TAG, PSET_VALUE

CASES = [(entry, isolation) for entry in manifest() for isolation in ISOLATIONS]


@pytest.mark.parametrize(("entry", "isolation"), CASES,
                         ids=[f"{entry.file}-{isolation}" for entry, isolation in CASES])
def test_every_edit_is_reported_validated_and_checked(entry: CorpusFile, isolation: str, tmp_path: Path):
    if not entry.present():
        pytest.fail(f"{entry.file} is not in {corpus_dirs()} (scripts/corpus.sh; corpus/SOURCES.md)")
    entry.check_digest()
    work = tmp_path / entry.file
    shutil.copyfile(entry.location, work)
    saved = tmp_path / "saved.ifc"
    executor = IsolatedExecutor(work, save_path=saved, isolation=isolation)
    try:
        result = executor.execute(execute_command(f"corpus-{isolation}", "automate", EDIT_SCRIPT, 600,
                                             validation="warn", ids=CORPUS_IDS))
    finally:
        executor.close()
    where = f"{entry.file} under {isolation}"
    assert result["ok"] and result["committed"], f"{where}: {result.get('error')}"
    entry.check_digest()  # the user's file is never touched (the keeper saved elsewhere)
    did = json.loads(result["stdout"].strip().splitlines()[-1])
    renumbered = {int(k): tuple(v) for k, v in did["renumbered"].items()}
    pset_id, pset_key, pset_old = did["pset"]
    assert did["retyped"], f"{where}: no element could be given a type"
    retyped_id, new_type = did["retyped"]
    edited = {*renumbered, pset_id, did["moved"], retyped_id}

    changes = result["changes"]
    assert edited <= set(changes["modified"]), (where, sorted(edited - set(changes["modified"])))
    assert did["deleted"] in changes["deleted"], where
    details = result["change_details"]
    assert "error" not in details, (where, details.get("error"))
    grouped = [i for group in details["groups"] for i in group["ids"]]
    assert sorted(grouped) == sorted(changes["modified"]), where
    shown = {e["id"]: {c["key"]: (c["old"], c["new"]) for c in e["changes"]} for e in details["elements"]
             if e["status"] == "modified"}
    for element_id, (old, new) in renumbered.items():
        if old != new and element_id in shown:
            assert shown[element_id]["attribute:Tag"] == (old, new), where
    assert any(i in shown for i in renumbered), (where, "no renumbered element is itemised")
    if pset_id in shown:
        assert shown[pset_id][pset_key] == (pset_old, PSET_VALUE), where
    if did["moved"] in shown:
        old, new = shown[did["moved"]]["placement"]
        assert old != new, where
    if retyped_id in shown:
        assert "NX corpus type" in shown[retyped_id]["type"][1], (where, shown[retyped_id]["type"])

    validation = result["validation"]
    schema_findings = [f for f in validation["findings"] if f["kind"] != "ids"]
    assert schema_findings == [], (where, schema_findings)
    ids_findings = [f for f in validation["findings"] if f["kind"] == "ids"]
    off_pattern = [i for i, (_old, new) in renumbered.items() if new == OFF_PATTERN_TAG]
    assert [f["entity_id"] for f in ids_findings] == off_pattern, (where, ids_findings)
    assert validation["ids"] == {"specifications": 1, "introduced": len(off_pattern)}, where

    reopened = open_checked(saved)
    for element_id, (_old, new) in renumbered.items():
        assert reopened.by_id(element_id).Tag == new, where
    with pytest.raises(RuntimeError):
        reopened.by_id(did["deleted"])
    assert reopened.by_id(new_type).Name == "NX corpus type", where
