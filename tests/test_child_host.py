"""Starting an IFC host as a child process: how long it may take, and what a person is told when it fails."""
from __future__ import annotations

from pathlib import Path

import pytest

from cloud.child_host import (
    HOST_CONNECT_BASE_S,
    HOST_CONNECT_S_PER_MB,
    HostStartFailed,
    host_connect_timeout,
    wait_for_host,
)
from cloud.embedded import EmbeddedCore
from cloud.hostlink import HostDirectory
from cloud.store import Store


def test_the_time_allowed_to_connect_grows_with_the_model(tmp_path: Path):
    small, big = tmp_path / "small.ifc", tmp_path / "big.ifc"
    small.write_bytes(b"x" * 1000)
    big.write_bytes(b"x" * 50_000_000)
    assert host_connect_timeout(str(small)) == pytest.approx(HOST_CONNECT_BASE_S + HOST_CONNECT_S_PER_MB * 0.001)
    assert host_connect_timeout(str(big)) == pytest.approx(HOST_CONNECT_BASE_S + HOST_CONNECT_S_PER_MB * 50)
    assert host_connect_timeout(str(tmp_path / "missing.ifc")) == HOST_CONNECT_BASE_S


class _SilentHost:
    """A child that stays alive and never connects (a host hung while opening its model)."""

    def alive(self) -> bool:
        return True

    def log_tail(self, lines: int = 20) -> str:
        return "opening big.ifc"

    def stop(self) -> None:
        pass


def test_a_host_that_never_connects_is_given_up_with_its_log(tmp_path: Path):
    with pytest.raises(HostStartFailed, match=r"did not connect within 0.2 s:\nopening big.ifc"):
        wait_for_host(HostDirectory(), "cli", _SilentHost(), 0.2)


def test_a_host_that_cannot_open_its_model_ends_the_start_with_its_reason(tmp_path: Path):
    not_ifc = tmp_path / "notes.ifc"
    not_ifc.write_text("these are meeting notes, not a model\n", encoding="utf-8")
    with pytest.raises(HostStartFailed) as failed:
        EmbeddedCore(Store(tmp_path / "nexus.db"), str(not_ifc), None)
    message = str(failed.value)
    assert message.startswith("the IFC host stopped before it connected:")
    assert "notes.ifc" in message, message
    assert failed.value.reason is not None and failed.value.reason.startswith(f"{not_ifc}: not a readable IFC file")
    assert "\n" not in failed.value.reason  # the host's own line, which a command prints as its one-line error
