"""Issue 23, L2: a task's `check` and `model` must resolve inside the suite folder (symlinks followed); an
absolute path, a `..` path or a symlink out is refused with the path named, and no checker outside runs."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cloud.evaluation.tasks import SuiteError, load_suite
from tests.evaluation.conftest import SHIPPED, SuiteMaker

OUTSIDE_CHECKER = "from pathlib import Path\nPath({marker!r}).write_text('ran')\n\ndef check(b, a, answer):\n" \
                  "    return True\n"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the suite with a checker that would leave a marker if it ever ran, and a model."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    (folder / "evil.py").write_text(OUTSIDE_CHECKER.format(marker=str(tmp_path / "ran")))
    shutil.copyfile(SHIPPED / "models" / "small-office.ifc", folder / "other.ifc")
    return folder


def _task(suite: SuiteMaker, **fields: str) -> None:
    data = {"id": "t", "prompt": "Do it.", "model": "models/small.ifc", "check": "checkers/ok.py", **fields}
    (suite.root / "checkers" / "ok.py").write_text("def check(b, a, answer):\n    return True\n")
    (suite.root / "tasks" / "t.json").write_text(json.dumps(data))


def _refused(suite: SuiteMaker, field: str, value: str, resolved: Path) -> None:
    with pytest.raises(SuiteError) as caught:
        load_suite(suite.root)
    message = str(caught.value)
    assert "t.json" in message and f"'{field}'" in message and value in message, message
    assert str(resolved.resolve()) in message and "outside the suite" in message, message


@pytest.mark.parametrize("field, name", [("check", "evil.py"), ("model", "other.ifc")])
def test_an_absolute_path_is_refused(make_suite, outside, tmp_path, field, name):
    _task(make_suite, **{field: str(outside / name)})
    _refused(make_suite, field, str(outside / name), outside / name)
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize("field, name", [("check", "evil.py"), ("model", "other.ifc")])
def test_a_dotdot_path_is_refused(make_suite, outside, tmp_path, field, name):
    value = f"checkers/../../elsewhere/{name}"
    _task(make_suite, **{field: value})
    _refused(make_suite, field, value, outside / name)
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize("field, name", [("check", "evil.py"), ("model", "other.ifc")])
def test_a_symlink_out_of_the_suite_is_refused(make_suite, outside, tmp_path, field, name):
    link = make_suite.root / ("checkers" if field == "check" else "models") / f"link-{name}"
    link.symlink_to(outside / name)
    value = str(link.relative_to(make_suite.root))
    _task(make_suite, **{field: value})
    _refused(make_suite, field, value, outside / name)
    assert not (tmp_path / "ran").exists()


def test_paths_inside_the_suite_and_corpus_names_load(make_suite, outside, monkeypatch):
    (make_suite.root / "models" / "again.ifc").symlink_to("small.ifc")  # a symlink that stays inside is fine
    _task(make_suite, model="models/sub/../again.ifc")
    (task,) = load_suite(make_suite.root).tasks
    assert task.model == (make_suite.root / "models" / "small.ifc").resolve()
    monkeypatch.setenv("NEXUS_IFC_CORPUS", str(outside))
    _task(make_suite, model="corpus:other.ifc")
    (task,) = load_suite(make_suite.root).tasks
    assert task.model == (outside / "other.ifc").resolve()  # the operator's corpus folder, not the suite's word
    _task(make_suite, model="corpus:../elsewhere/other.ifc")
    with pytest.raises(SuiteError, match="must name a file"):
        load_suite(make_suite.root)
