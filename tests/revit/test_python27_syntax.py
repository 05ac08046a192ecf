"""Everything that runs inside Revit (the extension and the Revit epilogue) is Python 2.7 syntax.

pyRevit runs IronPython 2.7: an f-string, an annotation or `nonlocal` is a SyntaxError there. parso 0.8
dropped its 2.7 grammar, so the grammar parso shipped until 0.7 is loaded from a file (see its header).
The same files must also run under CPython, which the other tests in this folder do against the fake.
"""
from __future__ import annotations

import re
from pathlib import Path

import parso
import pytest

REPO = Path(__file__).resolve().parents[2]
GRAMMAR = parso.load_grammar(path=str(Path(__file__).resolve().parent / "grammar" / "python27.txt"))
EXTENSION_SOURCES = sorted((REPO / "NexusAI.extension").rglob("*.py"))
EPILOGUE = REPO / "cloud" / "hosts" / "epilogues" / "revit_epilogue.py"
# Python 3.6+ numeric literals with underscores tokenize fine under the 2.7 grammar file: check them apart.
UNDERSCORE_NUMBER = re.compile(r"(?<![\w.])\d[\d_]*_\d")


def python27_errors(source: str) -> list[str]:
    module = GRAMMAR.parse(source)
    problems = [f"line {e.start_pos[0]}: {e.message}" for e in GRAMMAR.iter_errors(module)]
    for leaf_line, line in enumerate(source.splitlines(), 1):
        code = line.split("#", 1)[0]
        if UNDERSCORE_NUMBER.search(code):
            problems.append(f"line {leaf_line}: numeric literal with underscores")
    return problems


def test_the_extension_has_python_sources_to_check():
    names = {p.name for p in EXTENSION_SOURCES}
    assert {"startup.py", "script.py", "executor.py", "connection.py"} <= names


@pytest.mark.parametrize("path", EXTENSION_SOURCES + [EPILOGUE], ids=lambda p: str(p.relative_to(REPO)))
def test_parses_under_the_python_27_grammar(path: Path):
    assert python27_errors(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("snippet", [
    'x = f"{y}"\n',
    "def f(a: int) -> int:\n    return a\n",
    "def f():\n    nonlocal x\n",
    "def f(*, key):\n    pass\n",
    "a, *rest = [1, 2]\n",
    "x = 1_000\n",
    "async def f():\n    await g()\n",
    "def f():\n    yield from g()\n",
    "raise A from B\n",
])
def test_the_check_rejects_python_3_only_syntax(snippet: str):
    assert python27_errors(snippet)


def test_the_check_accepts_python_2_only_syntax():
    assert python27_errors('print "hello"\nexec "x = 1"\n') == []


def test_every_runtime_module_imports_under_cpython_against_the_fake():
    """(startup.py and the button scripts are run in test_extension_ui.py.)"""
    import importlib

    from tests.revit.conftest import LIB, make_revit
    from tests.revit.fake_revit import uninstall

    session = make_revit()
    try:
        names = sorted(p.stem for p in (LIB / "nexus_runtime").glob("*.py") if p.stem != "__init__")
        for name in names:
            importlib.import_module("nexus_runtime." + name)
        assert len(names) >= 25
    finally:
        session.stop()
        uninstall()
