"""One keeper for a test module (per isolation) whose tests each start from the same model and may commit.

Starting a keeper costs about a CPU-second (an interpreter importing IfcOpenShell, then its first script
process); most tests need only a model in its first state. `SharedKeeper.lend()` gives each test the module's
executor on the model as first written: if an earlier test committed, the pristine file is put back (a new
file, so its signature differs) and the keeper reloads it before the test begins, by the path a run takes to
adopt an edit made on disk by another program. A test that leaves an automation held, or a keeper that no
longer serves the module's file as it is on disk, fails at once rather than handing its state to the next test.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from ifc_host.executor import IsolatedExecutor
from ifc_host.file_identity import file_signature


class SharedKeeper:
    def __init__(self, path: Path, isolation: str) -> None:
        self.path = path
        self.pristine = path.read_bytes()
        self.executor = IsolatedExecutor(path, isolation=isolation)

    def lend(self) -> Iterator[IsolatedExecutor]:
        self._check("before this test")
        if self.path.read_bytes() != self.pristine:
            fresh = self.path.with_name(f".{self.path.name}.pristine")
            fresh.write_bytes(self.pristine)
            os.replace(fresh, self.path)
            # Adopted now, by the path a run takes first, so the test's own runs see no edit made on disk.
            adopted = self.executor._adopt_edits_made_on_disk()
            if adopted is None or "the host reloaded it" not in adopted:
                pytest.fail(f"the module's keeper did not reload the pristine {self.path.name}: {adopted}")
            self._check("once the pristine model was put back")
        yield self.executor
        self._check("after this test")

    def _check(self, when: str) -> None:
        executor = self.executor
        if executor.keeper_pid is None:
            pytest.fail(f"{when}: the module's keeper is gone")
        if executor.held_request_id is not None:
            pytest.fail(f"{when}: automation {executor.held_request_id} is still held by the module's keeper")
        if executor.committed_path != self.path:
            pytest.fail(f"{when}: the module's keeper serves {executor.committed_path}, not {self.path}")
        if executor.keeper_state.signature != file_signature(self.path):
            pytest.fail(f"{when}: {self.path.name} on disk is not the version the module's keeper holds")

    def close(self) -> None:
        self.executor.close()
