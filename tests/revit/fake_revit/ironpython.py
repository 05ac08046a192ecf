"""What IronPython 2.7 does differently from CPython, for tests that must see it under CPython.

- compile() of a syntax tree: IronPython's `_ast` round trip (Src/IronPython/Modules/_ast.cs, Revert and
  ConvertToPythonAst) builds nodes without spans and an empty line table, so code compiled from a tree
  reports line 1 everywhere. `compile_like_ironpython` does the same to any tree it is given.
- json.dumps(..., ensure_ascii=True) of a .NET string decodes it byte by byte while escaping: any character
  U+0080-U+00FF raises UnicodeDecodeError. `IronPythonJson` behaves so.
"""
from __future__ import annotations

import ast
import builtins
import json
import types
from typing import Any

_real_compile = builtins.compile


def compile_like_ironpython(source: Any, filename: str, mode: str, flags: int = 0, dont_inherit: bool = False) -> Any:
    if isinstance(source, ast.AST):
        for node in ast.walk(source):
            for name in ("lineno", "end_lineno"):
                if name in node._attributes:
                    setattr(node, name, 1)
            for name in ("col_offset", "end_col_offset"):
                if name in node._attributes:
                    setattr(node, name, 0)
    return _real_compile(source, filename, mode, flags, dont_inherit)


def _latin1_text(value: Any) -> bool:
    if isinstance(value, str):
        return any(0x80 <= ord(c) <= 0xFF for c in value)
    if isinstance(value, dict):
        return any(_latin1_text(k) or _latin1_text(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_latin1_text(v) for v in value)
    return False


def ironpython_json() -> types.ModuleType:
    module = types.ModuleType("json")
    module.__dict__.update({k: v for k, v in vars(json).items() if not k.startswith("__")})

    def dumps(obj: Any, ensure_ascii: bool = True, **options: Any) -> str:
        if ensure_ascii and _latin1_text(obj):
            raise UnicodeDecodeError("ascii", b"\xfc", 0, 1, "ordinal not in range(128)")
        return json.dumps(obj, ensure_ascii=ensure_ascii, **options)

    module.dumps = dumps
    return module
