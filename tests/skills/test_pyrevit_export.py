"""`nexus skills export-pyrevit DIR`: the pushbutton bundle parses as Python 2.7, runs against the fake
Revit API (parameters asked with pyRevit's forms, one transaction, failures roll back, a tampered script
refused) and names only Revit API members the Revit 2026 stubs have."""
from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from cloud.skills.library import SkillLibrary
from cloud.store import Store
from tests.revit.conftest import LIB  # noqa: F401  (puts the extension's lib on sys.path)
from tests.revit.fake_revit import FakeRevit, install, uninstall
from tests.revit.test_python27_syntax import python27_errors
from tests.revit.test_revit_api_members import member_exists, revit_references

MARKS = ("PREFIX = 'W-'\n"
         "for wall in DB.FilteredElementCollector(doc).OfClass(DB.Wall):\n"
         "    wall.LookupParameter('Mark').Set(PREFIX + str(wall.Id.Value))\n")
FAILING = ("for wall in DB.FilteredElementCollector(doc).OfClass(DB.Wall):\n"
           "    wall.LookupParameter('Mark').Set('half done')\n"
           "LIMIT = 3\n"
           "raise RuntimeError('deliberate failure after changing walls')\n")
READ = "[w.LookupParameter('Mark').AsString() for w in DB.FilteredElementCollector(doc).OfClass(DB.Wall)]"


@pytest.fixture
def revit():
    session = install(FakeRevit())
    session.start()
    yield session
    session.stop()
    uninstall()


def _library(tmp_path: Path) -> tuple[Store, Path]:
    db = tmp_path / "nexus.db"
    store = Store(db)
    library = SkillLibrary(store)
    for name, code, params in (("Wall marks", MARKS, [{"name": "PREFIX", "type": "string", "default": "W-",
                                                        "description": "text before each mark"}]),
                               ("Broken", FAILING, [])):
        library.save(user_name="cli", name=name, description=f"{name} for every wall", host_app="revit",
                     code=code, parameters=params, capability_version="1", provenance={}, example={})
    library.save(user_name="cli", name="IFC only", description="not for Revit", host_app="ifc", code="x = 1",
                 parameters=[], capability_version="1", provenance={}, example={})
    return store, db


def _export(db: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cloud.cli", "skills", "export-pyrevit", str(out), "--db", str(db)],
                          capture_output=True, text=True, timeout=120)


def _marks(revit) -> list[str]:
    doc = revit.uiapp.ActiveUIDocument.Document
    return revit.run_on_main(lambda: eval(READ, {"DB": sys.modules["Autodesk.Revit.DB"], "doc": doc}))


def test_the_export_writes_one_bundle_per_revit_skill_in_python_27(tmp_path):
    _, db = _library(tmp_path)
    out = tmp_path / "Team skills.panel"
    done = _export(db, out)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["Broken.pushbutton", "Wall marks.pushbutton"]
    bundle = out / "Wall marks.pushbutton"
    assert (bundle / "icon.png").read_bytes().startswith(b"\x89PNG")
    assert 'title: "Wall marks"' in (bundle / "bundle.yaml").read_text()
    script = bundle / "script.py"
    assert python27_errors(script.read_text(encoding="utf-8")) == []
    missing = [ref for ref in revit_references(script) if ref[2] and not member_exists(*ref)]
    assert missing == [] and ("Autodesk.Revit.DB", "Transaction", None) in revit_references(script)


def test_the_button_asks_for_its_parameters_and_runs_in_one_transaction(tmp_path, revit):
    _, db = _library(tmp_path)
    out = tmp_path / "panel"
    assert _export(db, out).returncode == 0
    before = _marks(revit)
    revit.prompt_answers.append("Z-")
    revit.run_on_main(runpy.run_path, str(out / "Wall marks.pushbutton" / "script.py"), None, "__main__")
    assert revit.prompts[-1][1] == "text before each mark (string)" and revit.prompts[-1][2] == "W-"
    after = _marks(revit)
    assert after != before and all(m.startswith("Z-") for m in after)
    assert revit.alerts[-1][1].startswith("Done.")

    revit.run_on_main(runpy.run_path, str(out / "Broken.pushbutton" / "script.py"), None, "__main__")
    assert _marks(revit) == after  # the failing script changed walls, then rolled back: nothing stays
    assert "deliberate failure" in revit.alerts[-1][1] and revit.alerts[-1][1].startswith("Not applied.")

    revit.prompt_answers.append(None)  # the person cancels the form: nothing runs
    revit.run_on_main(runpy.run_path, str(out / "Wall marks.pushbutton" / "script.py"), None, "__main__")
    assert _marks(revit) == after


def test_a_tampered_button_or_library_is_refused(tmp_path, revit):
    store, db = _library(tmp_path)
    out = tmp_path / "panel"
    assert _export(db, out).returncode == 0
    script = out / "Wall marks.pushbutton" / "script.py"
    source = script.read_text(encoding="utf-8")
    payload = source.split('b64decode("')[1].split('")')[0]
    import base64
    import json
    data = json.loads(base64.b64decode(payload))
    data["code"] += "\nimport os\n"
    forged = base64.b64encode(json.dumps(data).encode()).decode()
    script.write_text(source.replace(payload, forged), encoding="utf-8")
    before = _marks(revit)
    revit.run_on_main(runpy.run_path, str(script), None, "__main__")
    assert "does not match the sha256" in revit.alerts[-1][1] and _marks(revit) == before
    assert revit.prompts == []

    with store._write() as tx:
        tx.execute("UPDATE skill_versions SET code = ? WHERE version = 1 AND code = ?", (MARKS + "# x\n", MARKS))
    refused = _export(db, tmp_path / "again")
    assert refused.returncode == 2 and "does not match its sha256" in refused.stderr


def test_the_button_binds_the_statement_not_a_line_inside_a_string(tmp_path, revit):
    """Issue 23, L1 on the pyRevit button: a `PREFIX = ...` line in the docstring is left alone, and a value
    holding triple quotes is written as one literal (it once closed the string and ran)."""
    code = '"""Marks walls. Usage:\nPREFIX = "doc"\n"""\n' + MARKS
    store = Store(tmp_path / "nexus.db")
    SkillLibrary(store).save(user_name="cli", name="Wall marks", description="marks", host_app="revit", code=code,
                             parameters=[{"name": "PREFIX", "type": "string", "default": "W-"}],
                             capability_version="1", provenance={}, example={})
    store.close()
    out = tmp_path / "panel"
    assert _export(tmp_path / "nexus.db", out).returncode == 0
    hostile = 'X"""; DB.FilteredElementCollector(doc).OfClass(DB.Wall)[0].LookupParameter("Mark").Set("pwn"); """'
    revit.prompt_answers.append(hostile)
    revit.run_on_main(runpy.run_path, str(out / "Wall marks.pushbutton" / "script.py"), None, "__main__")
    assert revit.alerts[-1][1].startswith("Done."), revit.alerts[-1]
    marks = _marks(revit)
    assert marks and all(m.startswith(hostile) for m in marks), marks
