"""Python parsed in many threads at once (CPython gh-106905 on Debian's 3.11.2): every `ast` tree our code
builds, and those Werkzeug and `ast.literal_eval` build in the batch pool's threads, go through the one lock
of cloud.pyparse, and no parse fails with `SystemError: AST constructor recursion depth mismatch`.

The garbage collector is made to run often, with a callback that runs Python code: that is the moment an
unprotected conversion lets another thread in (without the lock this test fails on 3.11.2 in most runs)."""
from __future__ import annotations

import ast
import gc
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from werkzeug.routing import Map, Rule

import cloud
from cloud import pyparse
from cloud.skills.parameters import propose_parameters
from cloud.tools.edits import apply_edits

THREADS = 12
ROUNDS = 8
SOURCE = Path(cloud.__file__).with_name("tools").joinpath("edits.py").read_text(encoding="utf-8")
SCRIPT = 'PREFIX = "D-"\nLIMIT = 3\nfor door in model.by_type("IfcDoor")[:LIMIT]:\n    door.Name = PREFIX + door.Tag\n'
LOOP = SCRIPT.split("\n", 2)[2]
LONG_SCRIPT = SCRIPT + LOOP * 20  # parameters are assigned once: a repeated assignment would override them


@pytest.fixture
def busy_collector() -> Iterator[None]:
    def callback(phase: str, info: dict) -> None:
        sum(i * i for i in range(300))  # Python code during a collection: a thread switch can happen here

    threshold = gc.get_threshold()
    gc.callbacks.append(callback)
    gc.set_threshold(300, 5, 5)
    try:
        yield
    finally:
        gc.callbacks.remove(callback)
        gc.set_threshold(*threshold)


def test_the_affected_interpreters_are_known_and_ast_parse_takes_the_lock_there():
    assert pyparse.affected((3, 11, 2)) and pyparse.affected((3, 11, 7)) and pyparse.affected((3, 12, 1))
    assert not pyparse.affected((3, 11, 8)) and not pyparse.affected((3, 12, 2))
    assert not pyparse.affected((3, 10, 12)) and not pyparse.affected((3, 13, 0))
    assert (ast.parse is pyparse.parse) == pyparse.affected()  # importing `cloud` installed it
    assert pyparse.parse("x = 1", mode="exec").body[0].targets[0].id == "x"
    assert pyparse.literal_eval(" {'a': [1, 2.5]}") == {"a": [1, 2.5]}
    with pytest.raises(SyntaxError):
        pyparse.parse("def (:")


def test_many_threads_parsing_at_once_never_fail(busy_collector):
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def work(n: int) -> None:
        try:
            start.wait()
            for i in range(ROUNDS):
                kind = (n + i) % 5
                if kind == 0:
                    assert isinstance(pyparse.parse(SOURCE), ast.Module)
                elif kind == 1:
                    assert isinstance(ast.parse(SOURCE), ast.Module)  # library code calling ast.parse
                elif kind == 2:  # the merged-script syntax check of anchored edits
                    done = apply_edits(SOURCE, [{"old": "NEAREST_CONTEXT = 2", "new": "NEAREST_CONTEXT = 3"}])
                    assert done.script is not None and "NEAREST_CONTEXT = 3" in done.script
                elif kind == 3:  # a skill's parameters, read with literal_eval
                    assert [p["name"] for p in propose_parameters(LONG_SCRIPT)] == ["PREFIX", "LIMIT"]
                else:  # every Flask app a batch thread starts compiles its URL rules with ast.parse
                    urls = Map([Rule(f"/r{k}/<int:x>/<name>", endpoint=f"e{k}") for k in range(6)]).bind("h")
                    assert urls.build("e5", {"x": i, "name": "n"}) == f"/r5/{i}/n"
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert not any(t.is_alive() for t in threads), "a parsing thread hung"
    assert errors == [], f"{len(errors)} failures, first: {errors[0]!r}"
