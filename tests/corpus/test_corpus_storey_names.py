"""Unnamed and duplicate storeys, up front: the host's hello, the context block the model reads first, the
system prompt and every list of views name each storey exactly as `capture_view` accepts it (`#<step id>`
for a storey without a Name or one whose Name another storey shares), and each of those names draws.

The corpus's IfcOpenHouse has an unnamed storey; no corpus file has two storeys of one name, so a real
automation gives ISSUE_171's storey "2" the name "1" (as a person's rename would) and the host's lists are
read after that commit. Real keeper, real renders.
"""
from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import ifcopenshell
import pytest

from cloud.context import render_context_block
from cloud.hosts.hello import Hello
from cloud.hosts.ifc import IfcProvider
from ifc_host import protocol
from ifc_host.executor import IsolatedExecutor, execute_command
from ifc_host.render import RenderError, render_view
from ifc_host.render_scene import AXONOMETRIC_STOREY_PREFIX, ViewError, resolve_view, view_names
from tests.corpus.corpus_files import corpus_dirs, manifest

RENAME = "s = [s for s in model.by_type('IfcBuildingStorey') if s.Name == '2'][0]\ns.Name = '1'\nprint(s.id())"


def _copy(name: str, tmp_path: Path) -> Path:
    entry = next(e for e in manifest() if e.file == name)
    if not entry.present():
        pytest.fail(f"{name} is not in {corpus_dirs()} (corpus/SOURCES.md says where it comes from)")
    entry.check_digest()
    return Path(shutil.copyfile(entry.location, tmp_path / name))


def _everything_the_model_is_told(executor: IsolatedExecutor) -> tuple[list[str], str, str]:
    hello = protocol.hello(executor.document, None, executor.ifcopenshell_version)  # what the host says when it connects
    block = render_context_block(SimpleNamespace(hello=hello), executor.context())
    return executor.document["storeys"], block, IfcProvider().system_prompt_fragment(Hello.parse(hello))


def test_an_unnamed_storey_is_its_step_id_everywhere(tmp_path: Path):
    path = _copy("IfcOpenHouse_IFC4.ifc", tmp_path)
    executor = IsolatedExecutor(path)
    try:
        storeys, block, prompt = _everything_the_model_is_told(executor)
    finally:
        executor.close()
    assert storeys == ["#38"]
    assert "Levels/storeys (1): #38 (" in block
    assert '"#38"' in prompt
    model = ifcopenshell.open(str(path))
    assert view_names(model)[0] == "#38"
    assert render_view(str(path), f"{AXONOMETRIC_STOREY_PREFIX} #38", [], 300).view == "3D: #38"


def test_storeys_that_share_a_name_are_their_step_ids_everywhere_and_each_draws(tmp_path: Path):
    path = _copy("ISSUE_171_IfcSurfaceCurveSweptAreaSolid.ifc", tmp_path)
    original = ifcopenshell.open(str(path))
    first = next(s.id() for s in original.by_type("IfcBuildingStorey") if s.Name == "1")
    executor = IsolatedExecutor(path)
    try:
        before, _, _ = _everything_the_model_is_told(executor)
        assert before == ["0", "1", "2", "3"]
        renamed = executor.execute(execute_command("rename", "automate", RENAME, 60))
        assert renamed["committed"], renamed.get("error")
        second = int(renamed["stdout"].split()[-1])
        storeys, block, prompt = _everything_the_model_is_told(executor)
    finally:
        executor.close()
    shared = [f"#{first}", f"#{second}"]
    assert storeys == ["0", *shared, "3"]
    # The context block names them as views take them, with the Name they share so the model can tell.
    assert f'#{first} "1" (' in block and f'#{second} "1" (' in block
    assert all(f'"{name}"' in prompt for name in storeys)
    model = ifcopenshell.open(str(path))
    assert view_names(model)[:4] == storeys
    with pytest.raises(ViewError, match=f"2 storeys are named '1'; name one by its step id: #{first}, #{second}"):
        resolve_view(model, "1", [])
    with pytest.raises(RenderError, match=f"#{first}, #{second}"):
        render_view(str(path), "1", [], 300)
    for name in shared:
        assert render_view(str(path), name, [], 300).view == name
        assert render_view(str(path), f"{AXONOMETRIC_STOREY_PREFIX} {name}", [], 300).view == f"3D: {name}"
    assert resolve_view(model, shared[0], []).title_name == f"1 ({shared[0]})"
