"""The orchestrator's modules import one another without a circle (module-level and function-level imports
alike): a circle is how a door ends up starting the core it was meant to sit on (issue 24)."""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

CLOUD = Path(__file__).resolve().parents[1] / "cloud"


def _modules() -> dict[str, Path]:
    found = {}
    for path in CLOUD.rglob("*.py"):
        name = ".".join(path.relative_to(CLOUD.parent).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def _imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                named = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            elif isinstance(node, ast.Import):
                named = [alias.name for alias in node.names]
            else:
                continue
            edges[name].update(n for n in named if n in modules and n != name)
    return edges


def _circles(edges: dict[str, set[str]], nodes: list[str]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        circles.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(edges[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return circles


def test_no_module_of_cloud_imports_itself_round_a_circle():
    modules = _modules()
    edges = _imports(modules)
    circles = _circles(edges, sorted(modules))
    described = ["; ".join(f"{a} -> {b}" for a in c for b in sorted(edges[a] & set(c))) for c in circles]
    assert not circles, "import circles in cloud/: " + " | ".join(described)


def test_the_check_finds_a_circle_when_there_is_one():
    edges = defaultdict(set, {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})
    assert _circles(edges, ["a", "b", "c", "d"]) == [["a", "b", "c"]]


def _package(module: str) -> str:
    """The room a module stands in when cloud/ is drawn a folder at a time: its package below cloud (cloud.tools,
    cloud.batch, ...), or itself for a module directly in cloud/."""
    return ".".join(module.split(".")[:2])


def test_no_package_of_cloud_imports_one_that_imports_it_back():
    """A package both below and above another (a low module beside a high one in one folder) makes an arrow run
    back up when cloud/ is drawn a folder at a time: the low module belongs in a package of its own."""
    modules = _modules()
    edges: dict[str, set[str]] = defaultdict(set)
    why: dict[tuple[str, str], str] = {}
    for a, targets in _imports(modules).items():
        for b in targets:
            if _package(a) != _package(b):
                edges[_package(a)].add(_package(b))
                why.setdefault((_package(a), _package(b)), f"{a} -> {b}")
    packages = sorted({_package(m) for m in modules})
    circles = _circles(edges, packages)
    described = ["; ".join(why[(a, b)] for a in c for b in sorted(edges[a] & set(c))) for c in circles]
    assert not circles, "packages of cloud/ that import each other: " + " | ".join(described)
