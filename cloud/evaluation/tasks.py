"""A suite on disk: a folder with `tasks/*.json` (the format is fixed; docs/evaluation.md, "Writing a suite").

A task: {"id": str, "prompt": str, "model": IFC path relative to the suite, or "corpus:NAME", "check":
checker .py (or answer file .json, cloud.evaluation.answer_check) relative to the suite, "tags": [str],
"policy": "auto" | "readonly" (default "auto"), "max_turns": int (optional)}.
`model` and `check` must resolve inside the suite folder once symlinks are followed (a checker is code the
harness runs; a suite cannot point it at a file elsewhere). "corpus:NAME" is a file name looked up in the
corpus folders the operator names ($NEXUS_IFC_CORPUS, separated like PATH) and the checkout's corpus/ and
.cache/ifc-corpus/. A task tagged "corpus" whose model file is absent is skipped (real files that may not be
checked out); any other missing file is an error in the suite.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

POLICIES = ("auto", "readonly")
OPTIONAL_TAG = "corpus"
KNOWN_FIELDS = {"id", "prompt", "model", "check", "tags", "policy", "max_turns"}
CORPUS_SCHEME = "corpus:"
BCF_SUITE_ENV = "NEXUS_BCF_SUITE"
CORPUS_ENV = "NEXUS_IFC_CORPUS"
CHECKOUT = Path(__file__).resolve().parents[2]


class SuiteError(ValueError):
    """The suite cannot be run as written; the message names the file and the field."""


@dataclass(frozen=True)
class Task:
    id: str
    prompt: str
    model: Path
    check: Path
    tags: tuple[str, ...] = ()
    policy: str = "auto"
    max_turns: int | None = None
    source: Path = field(default=Path("."), compare=False)

    def summary(self) -> dict[str, Any]:
        return {"id": self.id, "tags": list(self.tags), "policy": self.policy}


@dataclass
class Suite:
    root: Path
    tasks: list[Task]
    skipped: list[tuple[str, str]]  # (task id, why)


def _field(data: dict[str, Any], name: str, kind: type, where: str) -> Any:
    value = data.get(name)
    if not isinstance(value, kind) or (kind is str and not value.strip()):
        raise SuiteError(f"{where}: '{name}' must be a non-empty {kind.__name__}")
    return value


def corpus_dirs() -> list[Path]:
    """Where a "corpus:NAME" model is looked for, in order."""
    named = [Path(p) for p in os.environ.get(CORPUS_ENV, "").split(os.pathsep) if p]
    # buildingSMART's BCF test cases name their federated pair (Architectural.ifc, MEP.ifc) in Test Cases/IFCs
    bcf = [Path(os.environ[BCF_SUITE_ENV], "Test Cases", "IFCs")] if os.environ.get(BCF_SUITE_ENV) else []
    return [*named, *bcf, CHECKOUT / "corpus", CHECKOUT / ".cache" / "ifc-corpus"]


def _corpus_model(name: str, where: str) -> Path:
    if not name or "/" in name or "\\" in name or name.startswith("."):
        raise SuiteError(f"{where}: 'model' {CORPUS_SCHEME}{name} must name a file (no folders)")
    folders = corpus_dirs()
    return next(((d / name).resolve() for d in folders if (d / name).is_file()), folders[0] / name)


def _inside(root: Path, data: dict[str, Any], name: str, where: str) -> Path:
    """The suite file that field `name` names, refused unless it resolves inside the suite."""
    value = _field(data, name, str, where)
    path = (root / value).resolve()
    suite = root.resolve()
    if not path.is_relative_to(suite):
        raise SuiteError(f"{where}: '{name}' {value!r} resolves to {path}, outside the suite folder {suite}")
    return path


def parse_task(data: Any, root: Path, where: str) -> Task:
    if not isinstance(data, dict):
        raise SuiteError(f"{where}: a task is a JSON object")
    unknown = sorted(set(data) - KNOWN_FIELDS)
    if unknown:
        raise SuiteError(f"{where}: unknown field(s) {', '.join(unknown)}")
    task_id = _field(data, "id", str, where)
    if "/" in task_id or "\\" in task_id or task_id.startswith("."):
        raise SuiteError(f"{where}: 'id' must not contain path separators or start with a dot")
    tags = data.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) and t for t in tags):
        raise SuiteError(f"{where}: 'tags' must be a list of non-empty strings")
    policy = data.get("policy", "auto")
    if policy not in POLICIES:
        raise SuiteError(f"{where}: 'policy' must be one of {', '.join(POLICIES)}, not {policy!r}")
    max_turns = data.get("max_turns")
    if max_turns is not None and (not isinstance(max_turns, int) or isinstance(max_turns, bool) or max_turns < 1):
        raise SuiteError(f"{where}: 'max_turns' must be a positive integer")
    model_name = _field(data, "model", str, where)
    model = (_corpus_model(model_name[len(CORPUS_SCHEME):], where) if model_name.startswith(CORPUS_SCHEME)
             else _inside(root, data, "model", where))
    return Task(id=task_id, prompt=_field(data, "prompt", str, where), model=model,
                check=_inside(root, data, "check", where),
                tags=tuple(tags), policy=policy, max_turns=max_turns, source=Path(where))


def load_suite(root: str | Path, tags: list[str] | None = None) -> Suite:
    """Every task of the suite at `root` (sorted by id), keeping those with any of `tags` when given."""
    root = Path(root)
    folder = root / "tasks"
    if not folder.is_dir():
        raise SuiteError(f"{root}: a suite is a folder with tasks/*.json (no {folder})")
    tasks: list[Task] = []
    skipped: list[tuple[str, str]] = []
    seen: dict[str, Path] = {}
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SuiteError(f"{path}: not readable JSON: {exc}") from exc
        task = parse_task(data, root, str(path))
        if task.id in seen:
            raise SuiteError(f"{path}: task id {task.id!r} is also used by {seen[task.id]}")
        seen[task.id] = path
        if tags and not set(tags) & set(task.tags):
            continue
        if not task.check.is_file():
            raise SuiteError(f"{path}: checker {task.check} does not exist")
        if not task.model.is_file():
            if OPTIONAL_TAG in task.tags:
                skipped.append((task.id, f"model file {task.model.name} is not present"))
                continue
            raise SuiteError(f"{path}: model {task.model} does not exist")
        tasks.append(task)
    if not seen:
        raise SuiteError(f"{folder}: no tasks (*.json)")
    return Suite(root=root, tasks=sorted(tasks, key=lambda t: t.id), skipped=skipped)
