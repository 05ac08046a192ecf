"""Parsing Python source into `ast` trees, one thread at a time.

CPython 3.11.0-3.11.7 and 3.12.0-3.12.1 keep the recursion depth of the C-tree -> `ast` object conversion
(PyAST_mod2obj) in one interpreter-wide struct. When a garbage collection during a conversion runs Python
code (a finalizer, a gc callback), another thread may switch in and convert its own tree: the shared
counter is then off and `ast.parse` raises `SystemError: AST constructor recursion depth mismatch`
(CPython issue gh-106905, introduced by gh-95185; fixed by gh-113035, in 3.11.8 and 3.12.2). Debian
bookworm's Python is 3.11.2, and our processes parse in threads: the batch pool's files each build a Flask
app (Werkzeug compiles every URL rule with `ast.parse`), 3.11's `traceback` parses source lines to place
its carets, and our own code checks merged scripts and reads skill parameters with `ast`.

So every such call goes through one lock: `parse` and `literal_eval` here for our code, and `install()`
(done when the `cloud` package is imported) puts the locked `parse` in place of `ast.parse` on the affected
interpreters, so library code (`ast.literal_eval`, Werkzeug, `traceback`) takes the same lock.
"""
from __future__ import annotations

import ast
import functools
import sys
import threading
from typing import Any

# Re-entrant: a gc callback or a finalizer running in the thread that holds it may parse too.
_LOCK = threading.RLock()
_ORIGINAL_PARSE = ast.parse


def affected(version: tuple[int, ...] = tuple(sys.version_info[:3])) -> bool:
    """Whether this interpreter has the shared AST-constructor recursion counter (gh-106905)."""
    return (3, 11, 0) <= version < (3, 11, 8) or (3, 12, 0) <= version < (3, 12, 2)


@functools.wraps(_ORIGINAL_PARSE)
def parse(source: str | bytes, *args: Any, **kwargs: Any) -> Any:
    """`ast.parse`, never concurrently with another parse of this process."""
    with _LOCK:
        return _ORIGINAL_PARSE(source, *args, **kwargs)


def literal_eval(text: str) -> Any:
    """`ast.literal_eval` of source text (it parses the text), under the same lock."""
    with _LOCK:
        return ast.literal_eval(text)


def install() -> None:
    """Route every `ast.parse` of this process through the lock, on the interpreters that need it."""
    if affected() and ast.parse is not parse:
        ast.parse = parse  # type: ignore[assignment]
