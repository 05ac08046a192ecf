"""Issue 23, L1: skill parameters bind by syntax, not by line. Only top-level `NAME = literal` statements are
parameters (never a line inside a string, a function or an `if`); a bound value is written as a literal
that `ast.literal_eval` reads back identically, and the bound script differs from the reviewed one in
exactly that constant; an argument for a name that is not a parameter is refused by name."""
from __future__ import annotations

import ast
import shutil

import pytest

from cloud.skills.library import SkillLibrary
from cloud.skills.parameters import BindError, bind, confirm_parameters, propose_parameters
from cloud.store import Store
from tests.batch.support import run_batch
from tests.evaluation.conftest import SHIPPED

# A reviewed script whose docstring shows a usage line; only LIMIT and MARK are real top-level literals.
SCRIPT = '''"""Renames the walls. Usage:
PREFIX = "W-"
MARK = "example"
"""
LIMIT = 3
MARK = "draft"  # the reviewed default


def rename(walls):
    INNER = 1
    for wall in walls[:LIMIT]:
        wall.Name = MARK + wall.Name


if model is not None:
    GUARDED = 2
FIRST = 1; SECOND = 2
TWICE = 1
TWICE = 2
rename(model.by_type("IfcWall"))
'''
HOSTILE = 'X"""; import os; os.system("touch /tmp/pwned"); """'


def _constants(tree: ast.AST) -> list[ast.Constant]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.Constant)]


def test_only_top_level_literal_statements_are_parameters():
    assert [p["name"] for p in propose_parameters(SCRIPT)] == ["LIMIT", "MARK"]
    for name in ("PREFIX", "INNER", "GUARDED", "FIRST", "TWICE"):
        with pytest.raises(BindError, match=f"'{name}' is not a top-level literal assignment"):
            confirm_parameters(SCRIPT, [name])


def test_a_name_inside_a_string_is_never_bound():
    stored = [{"name": "PREFIX", "type": "string", "default": "W-"}]  # as a line-based proposal once stored it
    with pytest.raises(BindError, match="PREFIX: the script does not assign it"):
        bind(SCRIPT, stored, {"PREFIX": "X-"})


def test_a_value_with_triple_quotes_changes_exactly_one_constant():
    parameters = confirm_parameters(SCRIPT, ["MARK", "LIMIT"])
    bound, values = bind(SCRIPT, parameters, {"MARK": HOSTILE})
    assert values == {"MARK": HOSTILE, "LIMIT": 3}
    before, after = ast.parse(SCRIPT), ast.parse(bound)
    changed = [(a, b) for a, b in zip(_constants(before), _constants(after), strict=True) if a.value != b.value]
    assert [(a.value, b.value) for a, b in changed] == [("draft", HOSTILE)]
    for node in after.body:  # the rest of the tree is the reviewed one
        if isinstance(node, ast.Assign) and node.targets[0].id == "MARK":  # type: ignore[attr-defined]
            assert ast.literal_eval(node.value) == HOSTILE
            node.value = ast.Constant("draft")
    assert ast.dump(after) == ast.dump(before)
    assert "# the reviewed default" in bound  # the comment on the line stays
    assert not any(isinstance(n, ast.Import) for n in ast.walk(after))


def test_python2_scripts_bind_the_same_way():
    script = '"""\nPREFIX = "doc"\n"""\nPREFIX = "D-"\nprint PREFIX\ndef f():\n    print "PREFIX = 1"\n'
    assert propose_parameters(script) == [{"name": "PREFIX", "type": "string", "default": "D-"}]
    bound, _ = bind(script, confirm_parameters(script, ["PREFIX"]), {"PREFIX": HOSTILE})
    assert bound == f'"""\nPREFIX = "doc"\n"""\nPREFIX = {HOSTILE!r}\nprint PREFIX\ndef f():\n    print "PREFIX = 1"\n'


def test_a_value_that_is_no_literal_is_refused():
    script = "RATIO = 0.5\n"
    with pytest.raises(BindError, match="cannot be written as a Python literal"):
        bind(script, confirm_parameters(script, ["RATIO"]), {"RATIO": "nan"})


def test_an_argument_that_is_not_a_parameter_is_refused_by_name(tmp_path):
    """`nexus batch --skill ... --arg PREFIX=X-` where PREFIX appears only in the docstring: refused before
    any file is touched, naming PREFIX (it was silently ignored)."""
    parameters = propose_parameters(SCRIPT)  # every candidate
    with pytest.raises(BindError, match=r"unknown argument\(s\) PREFIX: not a parameter of this skill "
                                        r"\(its parameters: LIMIT, MARK\)"):
        bind(SCRIPT, parameters, {"PREFIX": "X-"})
    db = tmp_path / "library.db"
    store = Store(str(db))
    SkillLibrary(store).save(user_name="alice", name="Walls", description="Renames walls", host_app="ifc",
                             code=SCRIPT, parameters=confirm_parameters(SCRIPT, ["MARK"]), capability_version="1",
                             provenance={}, example={})
    store.close()
    (tmp_path / "in").mkdir()
    shutil.copyfile(SHIPPED / "models" / "small-office.ifc", tmp_path / "in" / "a.ifc")
    out = tmp_path / "out"
    done = run_batch("--ifc", str(tmp_path / "in" / "*.ifc"), "--out", str(out), "--db", str(db),
                     "--user", "alice", "--skill", "Walls", "--arg", "PREFIX=X-")
    assert done.returncode == 2 and "unknown argument(s) PREFIX" in done.stderr, done.stderr
    assert not out.exists()
