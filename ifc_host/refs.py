"""Reference models of a federated session: read-only IFC files a script sees beside its working `model`.

A session names its references (`{"name", "path"}` each, in every execute). The keeper opens them once and keeps
them while their files stay the same (`ReferenceCache`); a forked script process inherits them, a spawned spare
opens them itself before it confines itself. Scripts see `refs`, a mapping name -> `ifcopenshell.file`, with
`refs.placement(name)`: the 4x4 matrix (metres) taking the reference's coordinates into the working model's.

Read-only, enforced in the script's own process: every reference gets a guard as its transaction, so an edit, a
new entity or a removal through IfcOpenShell fails at once with `ReferenceIsReadOnly`; after the script, every
reference it looked at must still have its guard and, up to FULL_CHECK_ENTITIES entities, exactly the records it had
when opened (sha256 of its serialisation: a second per few hundred thousand entities, too slow to pay on every script
for a large reference), or the script fails with the same error. These checks run in the script's own process, so
they are for a clear error, not a boundary: what guarantees a reference is never changed is that nothing ever writes
one (the script's process sends only the working model, and the reference files are outside what its sandbox may
open), and that every script gets a fresh copy.
"""
from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ifcopenshell

from ifc_host.file_identity import file_signature

MAX_REFS = 16
FULL_CHECK_ENTITIES = 50_000  # references up to this size get their records compared after each script using them
READ_ONLY_ADVICE = ("reference models are read-only: change only `model` (the working model); nothing was written "
                    "and the working model is unchanged")


class ReferenceProblem(ValueError):
    """A reference a session names cannot be used (missing, unreadable, a duplicate name)."""


class ReferenceIsReadOnly(PermissionError):
    """A script tried to change a reference model."""


@dataclass(frozen=True)
class RefSpec:
    name: str
    path: str


@dataclass
class LoadedRef:
    spec: RefSpec
    file: ifcopenshell.file
    digest: str  # sha256 of the file's serialisation when it was opened
    signature: tuple[int, int, int, int] | None = None
    entities: int = 0


def specs_of(raw: Any) -> list[RefSpec]:
    """The references an execute names (`[{"name", "path"}]`), checked: distinct names, at most MAX_REFS."""
    specs = [RefSpec(str(r["name"]), str(r["path"])) for r in raw or []]
    if len(specs) > MAX_REFS:
        raise ReferenceProblem(f"at most {MAX_REFS} reference models, got {len(specs)}")
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise ReferenceProblem("two reference models have the same name: " + ", ".join(sorted(
            {n for n in names if names.count(n) > 1})))
    return specs


def records_digest(model: ifcopenshell.file) -> str:
    return hashlib.sha256(model.to_string().encode("utf-8")).hexdigest()


def open_reference(spec: RefSpec) -> LoadedRef:
    from ifc_host.model_file import BadModelError, open_checked

    path = Path(spec.path)
    if not path.is_file():
        raise ReferenceProblem(f"reference {spec.name}: no model file at {spec.path} on this host")
    try:
        model = open_checked(path)
    except BadModelError as exc:
        raise ReferenceProblem(f"reference {spec.name}: {exc}") from None
    text = model.to_string()
    return LoadedRef(spec, model, hashlib.sha256(text.encode("utf-8")).hexdigest(), signature=file_signature(path),
                     entities=text.count("\n#"))


class ReferenceCache:
    """The keeper's open references, reopened only when their file changed on disk."""

    def __init__(self) -> None:
        self._open: dict[str, LoadedRef] = {}

    def load(self, specs: list[RefSpec]) -> list[LoadedRef]:
        loaded = []
        for spec in specs:
            real = os.path.realpath(spec.path)
            known = self._open.get(real)
            if known is None or known.signature != file_signature(Path(real)):
                known = self._open[real] = open_reference(RefSpec(spec.name, real))
            loaded.append(LoadedRef(spec, known.file, known.digest, signature=known.signature, entities=known.entities))
        for real in set(self._open) - {os.path.realpath(s.path) for s in specs}:
            del self._open[real]  # a session no longer names it
        return loaded


class ReadOnlyGuard:
    """Set as a reference's `transaction`: IfcOpenShell asks it before every edit and removal (and after a
    creation), and it refuses."""

    def __init__(self, name: str) -> None:
        self.name = name

    def _refuse(self, what: str) -> None:
        raise ReferenceIsReadOnly(f"refs[{self.name!r}] cannot be changed ({what}): {READ_ONLY_ADVICE}")

    def store_edit(self, entity: Any, index: int, value: Any) -> None:
        self._refuse(f"setting an attribute of #{entity.id()}")

    def store_create(self, entity: Any) -> None:
        self._refuse(f"creating {entity.is_a()}")

    def store_delete(self, entity: Any) -> None:
        self._refuse(f"removing #{entity.id()}")

    def batch(self) -> None:
        self._refuse("batch removal")

    def unbatch(self) -> None:
        self._refuse("batch removal")


class ReferenceModels(Mapping[str, ifcopenshell.file]):
    """`refs` in a script: name -> read-only ifcopenshell.file; `placement(name)` aligns coordinates."""

    def __init__(self, loaded: list[LoadedRef], model: ifcopenshell.file, model_name: str = "model") -> None:
        self._loaded = {r.spec.name: r for r in loaded}
        self._model = model
        self.model_name = model_name  # the working model's file name, as findings name it
        self._guards = {name: ReadOnlyGuard(name) for name in self._loaded}
        self.looked_at: set[str] = set()
        for name, ref in self._loaded.items():
            ref.file.transaction = self._guards[name]

    def __getitem__(self, name: str) -> ifcopenshell.file:
        if name not in self._loaded:
            raise KeyError(f"no reference model {name!r}; this session has: {', '.join(self._loaded) or 'none'}")
        self.looked_at.add(name)
        return self._loaded[name].file

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaded)

    def __len__(self) -> int:
        return len(self._loaded)

    def __repr__(self) -> str:
        return f"<reference models (read-only): {', '.join(self._loaded) or 'none'}>"

    def placement(self, name: str) -> Any:
        """A 4x4 numpy matrix taking points of reference `name` (metres, its world coordinates) into the working
        model's world coordinates (metres): from both models' IfcMapConversion when both have one; otherwise the
        models share their origin and it is the identity (what clash detection assumes too)."""
        return reference_placement(self._model, self[name])

    def clash(self, model: ifcopenshell.file | None = None, *, clearance: float | None = None,
              tolerance: float | None = None, names: list[str] | None = None) -> list[Any]:
        """ifcclash between the working model and the references `names` (all by default; `[]`: within the
        working model), as findings (ifc_host/findings.py: `rule, severity, title, elements` with GlobalId, class,
        name and model of both, `point`, `distance`; `as_json()`). Hard clashes deeper than `tolerance` metres
        (default 0.002), or with `clearance` elements closer than that many metres."""
        from ifc_host.clash import DEFAULT_TOLERANCE, clash_findings

        chosen = list(self._loaded) if names is None else list(names)
        models = {self.model_name: model if model is not None else self._model,
                  **{name: self[name] for name in chosen}}
        return clash_findings(self.model_name, chosen, clearance=clearance,
                              tolerance=DEFAULT_TOLERANCE if tolerance is None else tolerance, models=models)

    def violations(self) -> list[str]:
        """After the script: why any reference it looked at is no longer as it was opened (empty when none)."""
        found = []
        for name in sorted(self.looked_at):
            ref = self._loaded[name]
            if ref.file.transaction is not self._guards[name]:
                found.append(f"refs[{name!r}]: the script replaced its read-only guard")
            elif ref.entities <= FULL_CHECK_ENTITIES and records_digest(ref.file) != ref.digest:
                found.append(f"refs[{name!r}]: its records changed")
        return found

    def release(self) -> None:
        for ref in self._loaded.values():
            ref.file.transaction = None


def reference_placement(model: ifcopenshell.file, reference: ifcopenshell.file) -> Any:
    """The 4x4 matrix taking `reference`'s world coordinates (metres) into `model`'s (see `placement`)."""
    import numpy as np

    work, ref = _map_matrix(model), _map_matrix(reference)
    if work is None or ref is None:
        return np.eye(4)
    return np.linalg.inv(work) @ ref


def read_only_error(violations: list[str]) -> dict[str, Any]:
    return {"type": "ReferenceIsReadOnly", "line": None, "traceback": "",
            "message": "; ".join(violations) + f": {READ_ONLY_ADVICE}"}


def _map_matrix(model: ifcopenshell.file) -> Any:
    """Local engineering coordinates (metres) -> map coordinates (metres), from the first IfcMapConversion."""
    import ifcopenshell.util.unit
    import numpy as np

    try:
        conversions = model.by_type("IfcMapConversion")
    except RuntimeError:  # IFC2X3 has no map conversion
        return None
    if not conversions:
        return None
    c = conversions[0]
    unit = ifcopenshell.util.unit.calculate_unit_scale(model)
    map_unit = getattr(c.TargetCRS, "MapUnit", None)
    map_scale = ifcopenshell.util.unit.get_unit_scale(map_unit) if map_unit is not None else unit
    angle = math.atan2(c.XAxisOrdinate or 0.0, c.XAxisAbscissa or 1.0)
    scale = c.Scale or 1.0
    cos, sin = math.cos(angle) * scale, math.sin(angle) * scale
    matrix = np.eye(4)
    matrix[:2, :2] = [[cos, -sin], [sin, cos]]
    matrix[2, 2] = scale
    matrix[:3, 3] = [c.Eastings * map_scale, c.Northings * map_scale, c.OrthogonalHeight * map_scale]
    return matrix

