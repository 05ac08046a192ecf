"""How the model a script's process commits reaches the keeper: a forked one writes it to an anonymous file
the keeper gave it (isolation.read_model_file), unless it is bigger than the process may write to one file,
when it comes over the pipe as before."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from ifc_host.child import PipeChannel, send_model
from ifc_host.executor import IsolatedExecutor, execute_command
from ifc_host.isolation import read_model_file
from ifc_host.limits import SCRATCH_VARIABLE, VARIABLES
from ifc_host.model_file import open_checked
from ifc_host.pipes import MessageReader
from ifc_host.sample import write_sample_model

needs_memfd = pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="no anonymous files here")


@needs_memfd
def test_the_model_file_gives_back_what_was_written_once_and_nothing_for_another_size():
    model_fd = os.memfd_create("test-model")
    to_keeper_r, to_keeper_w = os.pipe()
    from_keeper_r, from_keeper_w = os.pipe()
    try:
        channel = PipeChannel(to_keeper_w, from_keeper_r, model_fd)
        data = b"ISO-10303-21;\n" + b"#1=IFCWALL('x');\n" * 1000
        send_model(channel, data)
        message = MessageReader(to_keeper_r).read(None)
        assert message == {"kind": "written", "ok": True, "bytes": len(data), "in_file": True}
        assert read_model_file(model_fd, len(data) + 1) is None  # a size it does not hold: nothing is read
        assert read_model_file(model_fd, len(data) - 1) is None
        assert read_model_file(model_fd, len(data)) == data
        assert os.fstat(model_fd).st_size == 0  # emptied once read
        without_file = PipeChannel(to_keeper_w, from_keeper_r, None)
        send_model(without_file, data)  # no model file: the announcement, then the model as a frame
        reader = MessageReader(to_keeper_r)
        assert reader.read(None) == {"kind": "written", "ok": True, "bytes": len(data)}
        assert reader.read_frame(None) == data
    finally:
        for fd in (model_fd, to_keeper_r, to_keeper_w, from_keeper_r, from_keeper_w):
            os.close(fd)


@needs_memfd
def test_a_model_bigger_than_the_scripts_file_limit_is_committed_over_the_pipe(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch):
    path = tmp_path / "model.ifc"
    write_sample_model(path, storeys=3, scale=8)
    assert path.stat().st_size > 1024 * 1024  # over the 1 MB a script's process may write to one file here
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(SCRATCH_VARIABLE, "1")
    executor = IsolatedExecutor(path, isolation="fork")
    try:
        for n in range(2):
            reply = executor.execute(execute_command(
                f"big-{n}", "automate", f"model.by_type('IfcWall')[0].Name = 'over the pipe {n}'", 120))
            assert reply["ok"] and reply["committed"], reply.get("error")
            assert open_checked(path).by_type("IfcWall")[0].Name == f"over the pipe {n}"
    finally:
        executor.close()
