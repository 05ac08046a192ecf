"""The change report's two ways of finding an element's type agree: reading each element's own relationships
(few changes, big model) and indexing every type relationship once (many changes). Its storeys come from the host
(nexus_storey_ids, ifc_host/spatial.py), whose two ways are held to agree in tests/test_spatial.py."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import ifcopenshell
import ifcopenshell.guid
import pytest

from ifc_host.sample import write_sample_model
from ifc_host.trusted_report import epilogue_helpers
from tests.test_spatial import ifc2x3_model

EPILOGUE = Path(__file__).resolve().parents[2] / "cloud" / "hosts" / "epilogues" / "ifc_epilogue.py"


def _indexes(model: ifcopenshell.file) -> tuple[Any, Any]:
    code = EPILOGUE.read_text(encoding="utf-8")
    assert code.rstrip().endswith("_nx_report()")
    scope: dict[str, Any] = {"model": model, "ifcopenshell": ifcopenshell, **epilogue_helpers(model)}
    exec(compile(code.rstrip().removesuffix("_nx_report()"), "<epilogue>", "exec"), scope)  # noqa: S102
    return scope["_NxLazyIndex"](), scope["_NxIndex"]()


@pytest.mark.parametrize("source", ["sample", "ifc2x3"])
def test_per_element_lookups_agree_with_the_whole_model_index(source: str, tmp_path: Path):
    if source == "sample":
        write_sample_model(tmp_path / "sample.ifc", storeys=2)
        model = ifcopenshell.open(str(tmp_path / "sample.ifc"))
    else:
        model = ifc2x3_model()
    lazy, index = _indexes(model)
    elements = [e.id() for e in model.by_type("IfcProduct") + model.by_type("IfcTypeProduct")]
    assert len(elements) > 10
    described = {i: index.type_of_element(i) for i in elements}
    assert {i: lazy.type_of_element(i) for i in elements} == described
    assert any(name is not None for name in described.values())
    if source == "ifc2x3":
        by_name = {model.by_id(i).Name: v for i, v in described.items() if model.by_id(i).Name}
        assert by_name["W1"] == "Basic 200" and by_name["Room"] is None
