"""Loading a task's checker and calling it: `check(before, after, answer)` returns a bool or (bool, detail);
an exception is a failure whose detail is the exception's message. A `.json` checker is an answer file, read
as data by the one fixed checker cloud.evaluation.answer_check (an imported question set); nothing in it runs.

A checker is loaded as a module of a package made for its folder, so checkers of one suite can share
code with a relative import: `from .shared import renumbering` loads `checkers/shared/renumbering.py` once
for every checker that imports it (each suite folder gets a package of its own; nothing is put on sys.path).
"""
from __future__ import annotations

import hashlib
import importlib.util
import re
import sys
import threading
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

from cloud.evaluation import answer_check

_lock = threading.Lock()
_loaded: dict[Path, ModuleType] = {}


class CheckerError(ValueError):
    pass


def load_checker(path: Path) -> ModuleType:
    with _lock:
        if path in _loaded:
            return _loaded[path]
        name = f"{_folder_package(path.parent)}.{re.sub(r'[^0-9A-Za-z_]', '_', path.stem)}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise CheckerError(f"{path}: not a Python module")
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as exc:  # a broken checker is the suite's fault: say where
            raise CheckerError(f"{path}: cannot load: {type(exc).__name__}: {exc}") from exc
        if not callable(getattr(module, "check", None)):
            raise CheckerError(f"{path}: defines no check(before, after, answer)")
        _loaded[path] = module
        return module


def _folder_package(folder: Path) -> str:
    """The name of a package whose modules are the files of `folder` (made once per folder)."""
    digest = hashlib.sha256(str(folder.resolve()).encode("utf-8")).hexdigest()[:16]
    name = f"nexus_eval_checkers_{digest}"
    if name not in sys.modules:
        package = ModuleType(name, f"the checkers in {folder}")
        package.__path__ = [str(folder)]
        package.__package__ = name
        sys.modules[name] = package
    return name


def run_checker(path: Path, before: Any, after: Any, answer: str) -> tuple[bool, str]:
    """(passed, detail). Never raises: a checker that raises (or cannot load) fails with its message."""
    try:
        if path.suffix == answer_check.SUFFIX:
            result = answer_check.check(path, before, after, answer)
        else:
            result = load_checker(path).check(before, after, answer)
    except (CheckerError, answer_check.AnswerFileError) as exc:
        return False, f"checker error: {exc}"
    except Exception as exc:
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return False, f"checker raised {type(exc).__name__}: {exc} (line {where.lineno})"
    if isinstance(result, bool):
        return result, ""
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], bool):
        return result[0], str(result[1])
    return False, f"checker returned {type(result).__name__}, expected a bool or (bool, detail)"
