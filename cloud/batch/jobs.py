"""The batch model: what is applied (a script or a prompt), to which files, and where each result goes.

A batch lives in a folder (its state directory, `--out` normally): `.nexus-batch/manifest.json` says what
the batch is, `.nexus-batch/results/<file>.json` holds one result per file. Both are plain files, so a
batch can be resumed by any process that can read the folder, and a job is skipped when its result is
already there for the same input and the same task.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

STATE_DIR = ".nexus-batch"
MANIFEST = "manifest.json"
RESULTS = "results"
STAGED = "staged"
CANCELLED = "cancelled"
SCRIPTED = "scripted:"


class BatchError(ValueError):
    """A batch that cannot be started or resumed as asked (the message says why)."""


def sha256_file(path: str | os.PathLike[str]) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class BatchSpec:
    """What every file of the batch gets: `script` (run as an automation) or `prompt` + `model` (the agent)."""
    files: list[str]  # absolute input paths
    root: str  # the folder the files' relative names are taken from
    state_dir: str  # manifest, per-file results and reports
    out_dir: str | None  # None: in place
    script: str | None = None
    script_name: str | None = None
    prompt: str | None = None
    model: str | None = None
    policy: str = "auto"
    validation: str = "warn"
    retry_failed: bool = False
    batch_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    owner: str | None = None  # who started it (batches started through the API)
    review: bool = False  # `ask`: each committed result is staged until the person keeps or discards it
    created: float | None = None
    source: dict[str, Any] | None = None  # where the script came from (session, tool call, sha256)
    skill: dict[str, Any] | None = None  # a team skill (cloud/skills/batch.py): version, sha256, arguments
    ids: str | None = None  # an IDS document (the text: it travels with the manifest to every worker)
    rules: dict[str, Any] | None = None  # a rule set document (ifc_host/rule_set.py; cloud/batch/findings.py)

    @property
    def kind(self) -> str:
        return "script" if self.script is not None else "prompt"

    def relative(self, path: str) -> str:
        return os.path.relpath(path, self.root)

    def output_for(self, path: str) -> str:
        if self.out_dir is None:
            return path
        return os.path.join(self.out_dir, self.relative(path))

    def staged_for(self, path: str) -> str:
        """Where a file's committed result waits for the person's decision under review (`ask`)."""
        return str(state_path(self.state_dir, STAGED, self.relative(path)))

    def model_for(self, path: str) -> str | None:
        """The model spec for one file: `scripted:DIR` plays DIR/<file stem>.json for each file."""
        if self.model and self.model.startswith(SCRIPTED) and Path(self.model[len(SCRIPTED):]).is_dir():
            return SCRIPTED + str(Path(self.model[len(SCRIPTED):]) / (Path(path).stem + ".json"))
        return self.model

    def task_sha256(self, path: str) -> str:
        """What the task is, for one file: the same input with the same task is never redone."""
        ids = f"\0ids\0{sha256_text(self.ids)}" if self.ids else ""
        if self.rules:
            ids += f"\0rules\0{sha256_text(json.dumps(self.rules, sort_keys=True))}"
        if self.script is not None:
            skill = f"\0skill\0{self.skill['sha256']}" if self.skill else ""
            return sha256_text(f"script\0{self.policy}\0{self.validation}\0{self.script}{skill}{ids}")
        model = self.model_for(path) or ""
        played = ""
        if model.startswith(SCRIPTED) and Path(model[len(SCRIPTED):]).is_file():
            played = sha256_file(model[len(SCRIPTED):])
        return sha256_text(f"prompt\0{self.policy}\0{self.validation}\0{self.prompt}\0{model}\0{played}{ids}")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BatchSpec:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


def state_path(state_dir: str, *parts: str) -> Path:
    return Path(state_dir, STATE_DIR, *parts)


def write_json_atomically(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save_manifest(spec: BatchSpec) -> None:
    write_json_atomically(state_path(spec.state_dir, MANIFEST), spec.to_json())


def load_manifest(state_dir: str) -> BatchSpec:
    path = state_path(state_dir, MANIFEST)
    try:
        return BatchSpec.from_json(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise BatchError(f"{state_dir} holds no batch (no {STATE_DIR}/{MANIFEST})") from None
    except (ValueError, TypeError) as exc:
        raise BatchError(f"{path}: not a batch manifest ({exc})") from exc


def result_path(spec: BatchSpec, path: str) -> Path:
    return state_path(spec.state_dir, RESULTS, spec.relative(path) + ".json")


def read_result(spec: BatchSpec, path: str) -> dict[str, Any] | None:
    try:
        return json.loads(result_path(spec, path).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None


def save_result(spec: BatchSpec, path: str, result: dict[str, Any]) -> None:
    write_json_atomically(result_path(spec, path), result)


def already_done(spec: BatchSpec, path: str, input_sha: str, task_sha: str) -> dict[str, Any] | None:
    """The recorded result when this input was already processed with this task and its output is intact."""
    result = read_result(spec, path)
    if not result or result.get("task_sha256") != task_sha or (spec.retry_failed and not result.get("ok")):
        return None
    if spec.out_dir is None:  # in place: the input now is the output that was written
        return result if input_sha in (result.get("input_sha256"), result.get("output_sha256")) else None
    if result.get("input_sha256") != input_sha:
        return None
    if result.get("committed") and spec.out_dir is not None:
        output = result.get("output") if spec.review else spec.output_for(path)
        if (result.get("review") or {}).get("decision") == "discard":
            return result  # the person discarded it: decided, nothing to redo
        if not output or not os.path.exists(output) or sha256_file(output) != result.get("output_sha256"):
            return None
    return result


def is_cancelled(state_dir: str) -> bool:
    return state_path(state_dir, CANCELLED).exists()
