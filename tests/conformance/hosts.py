"""Host launchers: how the conformance suite starts a host runtime and speaks its script dialect.

A launcher starts one host runtime on a fresh document, connected to a given orchestrator URL with a
given token, and describes the few scripts the suite needs in that host's own language. To run the suite
against another host runtime (e.g. the Revit runtime under a harness), add a launcher here and list it in
LAUNCHERS; nothing else in the suite is host-specific.
"""
from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class ScriptDialect:
    """The scripts the suite sends, written for one host application."""

    pick_elements: str  # prints a JSON list of at least 3 ids of existing, renameable elements
    count_elements: str  # prints one integer: how many elements of the kind pick_elements picks from
    rename: Callable[[list[int], str], str]  # sets the name of exactly these elements
    read_names: Callable[[list[int]], str]  # prints a JSON object {id: name}
    add_element: str  # adds one element and prints its id
    delete_element: Callable[[int], str]  # deletes that element
    fail_after_change: str  # changes elements, then raises on line `fail_line`
    fail_line: int
    hang: str  # never finishes
    view: str  # a view name export_view accepts


class LaunchedHost(Protocol):
    host_id: str
    dialect: ScriptDialect

    def document_bytes(self) -> bytes:
        """The persisted document, byte for byte (what must not change after a rollback)."""

    def stop(self) -> None: ...


class HostLauncher(Protocol):
    name: str

    def launch(self, workdir: Path, server_url: str, token: str, connect: bool = True) -> LaunchedHost:
        """Start a host on a fresh document in `workdir`; with `connect`, return once it is welcomed."""


IFC_DIALECT = ScriptDialect(
    pick_elements=(
        "import json\n"
        "print(json.dumps(sorted(w.id() for w in model.by_type('IfcWall'))[:3]))\n"),
    count_elements="print(len(model.by_type('IfcWall')))\n",
    rename=lambda ids, name: f"for i in {ids!r}:\n    model.by_id(i).Name = {name!r}\n",
    read_names=lambda ids: f"import json\nprint(json.dumps({{i: model.by_id(i).Name for i in {ids!r}}}))\n",
    add_element=(
        "import ifcopenshell.api.root, ifcopenshell.api.spatial\n"
        "storey = model.by_type('IfcBuildingStorey')[0]\n"
        "wall = ifcopenshell.api.root.create_entity(model, ifc_class='IfcWall', name='Added')\n"
        "ifcopenshell.api.spatial.assign_container(model, relating_structure=storey, products=[wall])\n"
        "print(wall.id())\n"),
    delete_element=lambda i: f"import ifcopenshell.api.root\nifcopenshell.api.root.remove_product(model, product=model.by_id({i}))\n",
    fail_after_change=(
        "for wall in model.by_type('IfcWall'):\n"
        "    wall.Name = 'half done'\n"
        "raise RuntimeError('deliberate failure after changing walls')\n"),
    fail_line=3,
    hang="import time\nwhile True:\n    time.sleep(0.05)\n",  # never ends, without burning a core
    view="Level 1",
)


@dataclass
class LaunchedIfcHost:
    handle: object  # ifc_host.runtime.HostHandle
    model_path: Path
    out_path: Path | None
    dialect: ScriptDialect = IFC_DIALECT

    @property
    def host_id(self) -> str:
        return self.handle.host_id

    @property
    def saved_path(self) -> Path:
        return self.out_path or self.model_path

    def document_bytes(self) -> bytes:
        return self.saved_path.read_bytes() if self.saved_path.exists() else self.model_path.read_bytes()

    def stop(self) -> None:
        self.handle.stop()


@cache
def sample_building() -> Path:
    """The product's sample building (3 storeys), generated once per test process and copied per host."""
    from ifc_host.sample import write_sample_model

    path = Path(tempfile.mkdtemp(prefix="nexus-conformance-")) / "sample.ifc"
    write_sample_model(path)
    return path


@dataclass
class IfcHostLauncher:
    name: str = "ifc"
    model_source: Callable[[], Path] = sample_building  # copied for each launch
    isolation: str | None = None  # "fork" | "spawn" (ifc_host.isolation); None: the platform's default

    def launch(self, workdir: Path, server_url: str, token: str, connect: bool = True,
               out_path: Path | None = None, **options: object) -> LaunchedIfcHost:
        from ifc_host.runtime import ReconnectPolicy, start_host_thread

        workdir.mkdir(parents=True, exist_ok=True)
        model_path = workdir / "model.ifc"
        shutil.copyfile(self.model_source(), model_path)
        options.setdefault("reconnect", ReconnectPolicy(first_delay_s=0.05, max_delay_s=0.5))
        options.setdefault("isolation", self.isolation)
        handle = start_host_thread(str(model_path), server_url, token, out_path=str(out_path) if out_path else None,
                                   **options)
        if connect:
            try:
                handle.wait_connected(30)
            except BaseException:
                handle.stop()
                raise
        return LaunchedIfcHost(handle, model_path, out_path)


LAUNCHERS: dict[str, HostLauncher] = {"ifc": IfcHostLauncher(isolation="fork"),
                                      "ifc-spawn": IfcHostLauncher(name="ifc-spawn", isolation="spawn")}
